//! A value the trail recorded, in the reader's words where the product has words for it (statuses, verdicts,
//! step states, stall events, failure classes, roles, yes and no). The stored value stays beside it: exports and
//! searches use it.
use super::admin_users::role_label;
use super::labels::{action_status_label, batch_status_label, status_label};
use super::labels::{
    event_label, failure_class_label, locale, operation_status_label, step_state_label, verdict_label,
};
use crate::domain::batches::BatchStatus;
use crate::domain::incidents::ActionStatus;
use crate::domain::operations::{OperationStatus, StepState};
use crate::domain::reconciliation::Verdict;
use crate::domain::rerun_request::RerunRequestStatus;
use crate::domain::roles::Role;
use crate::domain::stall::{FailureClass, StallEvent};
use crate::i18n::td_string;

/// `action` is the event's action code: a `status` is a request's, a bulk rerun's, an incident action's or an
/// operation's by the family of the action that recorded it.
pub fn value_words(action: &str, key: &str, value: &str) -> Option<String> {
    let l = locale();
    let family = action.split('.').next().unwrap_or_default();
    let words = match (key, value) {
        (_, "true") => td_string!(l, audit.yes),
        (_, "false") => td_string!(l, audit.no),
        ("status", v) if family == "rerun_request" => status_label(RerunRequestStatus::parse(v)?),
        ("status", v) if family == "rerun_batch" => batch_status_label(BatchStatus::parse(v)?),
        ("status", v) if family == "incident" => action_status_label(ActionStatus::parse(v)?),
        ("status" | "operation_status", v) => operation_status_label(OperationStatus::parse(v)?),
        ("verdict", v) => verdict_label(Some(Verdict::parse(v)?)),
        ("state", v) => step_state_label(StepState::parse(v)?),
        ("event", v) => event_label(StallEvent::parse(v)?.as_str()),
        ("failure_class" | "cause_class" | "error_class", v) => failure_class_label(FailureClass::parse(v)?),
        ("roles", v) => return roles_words(v),
        _ => return None,
    };
    Some(words.to_string())
}

/// Roles as recorded (`["manager","staff"]`), named.
fn roles_words(value: &str) -> Option<String> {
    let codes: Vec<String> = serde_json::from_str(value).ok()?;
    let named: Option<Vec<&str>> = codes.iter().map(|c| c.parse::<Role>().ok().map(role_label)).collect();
    Some(named?.join(td_string!(locale(), operation.list_separator)))
}
