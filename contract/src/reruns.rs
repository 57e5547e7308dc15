//! Rerun requests: start one from a stalled operation, confirm its checklist, request approval.
use super::operations::StepView;
use chrono::{DateTime, Utc};
use domain::approval::{Decision, MakerPart, Standing};
use domain::batches::BatchStatus;
use domain::rerun_plan::{Blocked, Change, RerunPlan};
use domain::rerun_request::RerunRequestStatus;
use serde::{Deserialize, Serialize};

/// What starting a request led to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartAnswer {
    /// A draft request with its computed plan and pre-filled checklist.
    Created { id: String },
    /// The steps' state forbids a rerun, with the reasons.
    Blocked { reasons: Vec<Blocked> },
    /// Nothing left to rerun: the executed steps got their completion flags.
    NothingToRerun { confirmed: Vec<String> },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckView {
    pub number: i64,
    pub label: String,
    /// Whether the system's own check holds.
    pub holds: bool,
    pub evidence: String,
    /// What an outside system said, as it said it (a step's error message), shown after the evidence.
    pub evidence_quote: Option<String>,
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub cause_class: Option<domain::stall::FailureClass>,
    pub cause_text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RerunRequestView {
    pub id: String,
    pub process_id: String,
    /// The operation's workflow (its code).
    pub workflow: String,
    /// The cause the fifth check offers first: the operation's failure class.
    pub likely_cause: Option<domain::stall::FailureClass>,
    pub department: String,
    pub status: RerunRequestStatus,
    pub requester: String,
    pub reason: String,
    pub created_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub plan: RerunPlan,
    /// A draft whose facts changed since its plan was made: what changed, step by step (it cannot be submitted;
    /// its makers make the plan again).
    pub plan_changes: Vec<Change>,
    pub checks: Vec<CheckView>,
    /// Staff or manager of the department while the request is a draft.
    pub may_confirm: bool,
    /// One of its makers, while it is not approved yet.
    pub may_cancel: bool,
    /// The owners' decisions so far.
    pub decisions: Vec<DecisionView>,
    /// The department's name (its code is `department`).
    pub department_name: String,
    /// Every step of the operation with its completion flag, verdict and evidence, as they are now.
    pub steps: Vec<StepView>,
    /// Who prepared it, each part (the approval rule's makers).
    pub makers: Vec<MakerView>,
    /// The approvals that count so far, and how many are needed.
    pub approvals: i64,
    pub required: i64,
    /// Until when it may be approved.
    pub expires_at: Option<DateTime<Utc>>,
    /// Whether the reader may approve or reject it now, or why not.
    pub standing: Standing,
    /// The bulk rerun it is part of.
    pub batch_id: Option<String>,
    /// The steps left out on the key alone, each waiting for (or with) a person's confirmation.
    pub on_key_alone: Vec<KeyAloneView>,
    /// While it waits for approval: the department's managers who may decide (not its makers, not those who
    /// decided already), by name.
    pub asked: Vec<String>,
}

/// A step the outside system shows executed, though nothing of it was compared: its content beside the record,
/// for a person to confirm that what ran is what was meant (personal values redacted on both sides).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyAloneView {
    pub step: String,
    pub content: serde_json::Map<String, serde_json::Value>,
    pub record: serde_json::Map<String, serde_json::Value>,
    pub external_id: Option<String>,
    pub status_text: Option<String>,
    /// When a person confirmed it on this request (its flag is set once the request is approved and sent), who,
    /// and what they compared.
    pub confirmed_at: Option<DateTime<Utc>>,
    pub confirmed_by: Option<String>,
    pub comment: Option<String>,
}

/// A maker of a request, by name, with the part they took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MakerView {
    pub name: String,
    pub part: MakerPart,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionView {
    pub approver: String,
    pub decision: Decision,
    pub comment: Option<String>,
    pub decided_at: DateTime<Utc>,
    /// An approval whose giver can no longer decide here (removed from the company directory, disabled, no longer a
    /// manager of the department): shown, not counted; the request waits for another approver.
    #[serde(default)]
    pub no_longer_counts: bool,
}

/// What a decision is about: one rerun request, or a bulk rerun decided as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Request,
    Batch,
}

/// Where a request or a bulk rerun stands now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Request(RerunRequestStatus),
    Batch(BatchStatus),
}

/// A request or a bulk rerun in the reader's lists: the facts in a line or two, and the way to its decision page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxItem {
    pub subject: Subject,
    pub id: String,
    /// A request's operation; a bulk rerun names its count and workflows instead.
    pub process_id: Option<String>,
    /// The workflows' names in the reader's language.
    pub workflows: Vec<String>,
    pub operations: i64,
    /// The department's name.
    pub department: String,
    pub requester: String,
    pub reason: String,
    #[serde(with = "super::wire_time::optional_moment")] // the inbox is in the first download
    pub submitted_at: Option<DateTime<Utc>>,
    /// Until when it may be approved.
    #[serde(with = "super::wire_time::optional_moment")]
    pub expires_at: Option<DateTime<Utc>>,
    /// A request's plan: step (its name in the reader's language) and its original idempotency key.
    pub steps: Vec<(String, String)>,
    pub approvals: i64,
    pub required: i64,
    pub stage: Stage,
    /// Whether the reader may decide now, or why not.
    pub standing: Standing,
    /// In "my decisions": what the reader decided.
    pub my_decision: Option<Decision>,
}

/// The reader's lists: what waits for their decision (oldest deadline first), what they asked for, what they
/// decided.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbox {
    /// The reader decides for some department (the first list is theirs).
    pub decides: bool,
    pub waiting: Vec<InboxItem>,
    pub requested: Vec<InboxItem>,
    pub decided: Vec<InboxItem>,
}
