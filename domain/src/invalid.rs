//! Why an input was refused: a rule the pages put into the reader's language, with the English sentence the
//! JSON API returns.
use crate::names::named;
use serde::{Deserialize, Serialize};
use std::fmt;

named! {
    /// The input a refusal is about, by its name on the wire: a form's field or a member of a JSON API body. The
    /// pages put it into words (`ui::errors`), so a field without words does not compile.
    pub enum Field {
        Body => "body",
        Cause => "cause",
        CauseClass => "cause_class",
        CauseText => "cause_text",
        Channel => "channel",
        Chart => "chart",
        Check => "check",
        Checklist => "checklist",
        Comment => "comment",
        Content => "content",
        CurrentPassword => "current_password",
        Day => "day",
        Department => "department",
        Departments => "departments",
        Description => "description",
        DisplayName => "display_name",
        DueOn => "due_on",
        Email => "email",
        Error => "error",
        Evidence => "evidence",
        Faults => "faults",
        Format => "format",
        From => "from",
        Impact => "impact",
        Language => "language",
        Memberships => "memberships",
        Minutes => "minutes",
        Name => "name",
        NewPassword => "new_password",
        Note => "note",
        Number => "number",
        OccurredAt => "occurred_at",
        Owner => "owner",
        Password => "password",
        Period => "period",
        ProcessId => "process_id",
        ProcessIds => "process_ids",
        RatePerMinute => "rate_per_minute",
        Reason => "reason",
        RegisteredFrom => "registered_from",
        RegisteredTo => "registered_to",
        Request => "request",
        Response => "response",
        ResultId => "result_id",
        Roles => "roles",
        Selection => "selection",
        Seq => "seq",
        Status => "status",
        Step => "step",
        Steps => "steps",
        TimeZone => "time_zone",
        Title => "title",
        TreeSize => "tree_size",
        To => "to",
        Ts => "ts",
        Usage => "usage",
        Username => "username",
        Verdict => "verdict",
        Workflow => "workflow",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Required,
    TooShort,
    TooLong,
    BadCharacter,
    NotAnEmail,
    TooCommon,
    /// Not one of the known values (a department, a language, a time zone).
    Unknown,
    /// A check the system could not confirm cannot be confirmed by a person either.
    NotSatisfied,
    CauseRequired,
    ChecksUnconfirmed,
    /// A step left out on the key alone waits for a person to confirm what ran.
    KeyAloneUnconfirmed,
    WrongPassword,
    WrongSignIn,
    /// A bulk selection that matches no stalled operation.
    NothingSelected,
    /// A bulk selection larger than a batch may be.
    TooMany,
    /// A bulk selection spanning departments (each department's owners approve their own).
    OneDepartment,
    /// A number outside the range the field allows (the message names the range).
    OutOfRange,
    /// Text that is not a date or a date and time.
    NotATime,
    /// A choice of several where none was chosen.
    NoneChosen,
    /// A review of a period that has not started yet.
    NotStartedYet,
    /// A value the pages never send: a request made by hand or by a client of the JSON API.
    Malformed,
    /// A verdict a person may not record by hand (only what was found out: executed, mismatch, not executed,
    /// unknown).
    NotByHand,
}

/// Where a refusal lists the process IDs that were not found (the pages show them in the reader's words).
const UNKNOWN_IDS_PREFIX: &str = "no operation in your departments with process ID ";

/// The refusal for process IDs that are unknown or of a department the caller does not belong to (the
/// same answer for both, so that nobody learns what exists elsewhere).
pub fn unknown_process_ids(ids: &[impl AsRef<str>]) -> Invalid {
    let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
    Invalid::new(Rule::Unknown, format!("{UNKNOWN_IDS_PREFIX}{}", ids.join(", ")))
}

/// The process IDs named by `unknown_process_ids`' message.
pub fn ids_in(message: &str) -> Option<&str> {
    message.strip_prefix(UNKNOWN_IDS_PREFIX)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub rule: Rule,
    pub message: String,
}

impl Invalid {
    pub fn new(rule: Rule, message: impl Into<String>) -> Self {
        Invalid { rule, message: message.into() }
    }
}

impl From<Invalid> for String {
    fn from(invalid: Invalid) -> String {
        invalid.message
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Invalid {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_process_ids_are_named_in_the_refusal() {
        let refusal = unknown_process_ids(&["ORD-9", "INV-2001"]);
        assert_eq!(refusal.rule, Rule::Unknown);
        assert_eq!(ids_in(&refusal.message), Some("ORD-9, INV-2001"));
    }
}
