//! Bulk reruns: select stalled operations by filter or by ticks, preview (a dry run), request, confirm the five
//! checks once, approve once, and watch the dispatch at its rate with pause, resume and cancel.
use super::reruns::DecisionView;
use chrono::{DateTime, Utc};
use domain::batches::{BatchStatus, MemberState, Progress, Reason};
use domain::canary::{CanaryConfig, StageFailure, StageOutcome};
use serde::{Deserialize, Serialize};

/// What staff selected: by filters, or by ticked rows (then the filters are ignored).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub department: Option<String>,
    pub workflow: Option<String>,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    /// Registered at or after this time.
    pub registered_from: Option<DateTime<Utc>>,
    /// Registered before this time.
    pub registered_to: Option<DateTime<Utc>>,
    #[serde(default)]
    pub process_ids: Vec<String>,
}

/// The bulk-rerun form as a browser posts it: texts (an empty one is no filter), times as the reader's local date
/// and time, the ticked process IDs in one field (separated by commas, spaces or lines).
#[derive(Clone, Debug, Default)]
pub struct SelectionForm {
    pub department: Option<String>,
    pub workflow: Option<String>,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub registered_from: Option<String>,
    pub registered_to: Option<String>,
    pub process_ids: Option<String>,
}

impl SelectionForm {
    /// The selection the form means, its times read in the reader's `time_zone`.
    pub fn read(self, time_zone: &str) -> Result<Selection, crate::AppError> {
        use domain::invalid::Field;
        let zone = domain::preferences::time_zone_or_default(time_zone);
        let time = |field: Field, text: Option<String>| {
            domain::batches::local_time(text.as_deref().unwrap_or(""), zone)
                .map_err(|m| crate::AppError::invalid(field, m))
        };
        let text = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        Ok(Selection {
            department: text(self.department),
            workflow: text(self.workflow),
            event: text(self.event),
            failure_class: text(self.failure_class),
            registered_from: time(Field::RegisteredFrom, self.registered_from)?,
            registered_to: time(Field::RegisteredTo, self.registered_to)?,
            process_ids: domain::batches::process_ids(self.process_ids.as_deref().unwrap_or("")),
        })
    }
}

/// The dry run's totals over the operations in the request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub operations: usize,
    /// Planned steps per outside system (connector): the calls the reruns will make there.
    pub calls: Vec<(String, usize)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberView {
    pub process_id: String,
    pub workflow: String,
    pub state: MemberState,
    /// The plan: step and its original idempotency key.
    pub steps: Vec<(String, String)>,
    pub reasons: Vec<Reason>,
    pub rerun_id: Option<String>,
    pub progress: Option<Progress>,
    /// Sent but not ended, or failed: the error the integration or the outside system gave.
    pub held_by: Option<String>,
}

/// The stages a bulk rerun runs in: its plan (part of what is approved) and how each stage went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagesView {
    pub plan: CanaryConfig,
    pub stages: Vec<StageView>,
    /// Stopped by a failed stage: managers decide whether it goes on.
    pub awaits_decision: bool,
    /// While stopped: who decided it goes on so far, and how many decisions it needs (its approval's quorum).
    #[serde(default)]
    pub resume_decisions: Vec<String>,
    #[serde(default)]
    pub resume_required: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageView {
    /// Numbered from 1.
    pub number: u32,
    /// Its operations: as planned for the requested ones, as assigned once approved.
    pub operations: usize,
    pub sent: usize,
    /// Reported by the integration (done or failed).
    pub reported: usize,
    /// Every re-run step shown executed with its content by the outside systems after the settle time.
    pub verified: usize,
    pub failed: usize,
    pub started_at: Option<DateTime<Utc>>,
    pub outcome: Option<StageOutcome>,
    pub decided_at: Option<DateTime<Utc>>,
    /// The reruns that failed it, each with why (its evidence is on the operation's page).
    pub failures: Vec<(String, StageFailure)>,
    pub resumed_by: Option<String>,
    pub resumed_at: Option<DateTime<Utc>>,
    pub resume_reason: Option<String>,
}

/// One of the five checks for the whole batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub number: i64,
    /// "412 of 412 pre-checks pass": operations in the request of those that reached the checks.
    pub passing: usize,
    pub of: usize,
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub cause_class: Option<domain::stall::FailureClass>,
    pub cause_text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchView {
    pub id: String,
    pub department: String,
    /// The department's name.
    pub department_name: String,
    pub creator: String,
    pub reason: String,
    pub status: BatchStatus,
    pub selection: Selection,
    pub created_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub rate_per_minute: i64,
    pub max_rate_per_minute: i64,
    pub selected: usize,
    pub looked_up: usize,
    pub eligible: usize,
    pub blocked: usize,
    pub nothing_to_rerun: usize,
    pub requested: usize,
    pub dropped: usize,
    pub totals: Totals,
    pub checks: Vec<CheckSummary>,
    /// The cause the fifth check offers first: the failure class most of the requested operations have.
    pub likely_cause: Option<domain::stall::FailureClass>,
    pub decisions: Vec<DecisionView>,
    pub progress: Vec<(Progress, i64)>,
    pub members: Vec<MemberView>,
    pub may_request: bool,
    pub may_confirm: bool,
    /// Whether the reader may approve or reject it now, or why not.
    pub standing: domain::approval::Standing,
    pub may_pause: bool,
    pub may_resume: bool,
    pub may_cancel: bool,
    /// `None`: sent all at once.
    pub stages: Option<StagesView>,
    /// Its audit events, newest first: each decision, stage, pause and resumption.
    pub history: Vec<super::board::TimelineEntry>,
}

/// What a batch's page follows every 2 s while the batch moves: far less than the whole view, which holds up to
/// 2,000 members with their plans.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchProgress {
    pub status: BatchStatus,
    pub selected: usize,
    pub looked_up: usize,
    pub progress: Vec<(Progress, i64)>,
    /// Each member's stage of the dispatch, in the batch's order (`None`: not requested).
    pub members: Vec<Option<Progress>>,
    /// Each member's error while it is sent but not ended, or failed, in the batch's order.
    pub held_by: Vec<Option<String>>,
    pub stages: Option<StagesView>,
}

impl From<&BatchView> for BatchProgress {
    fn from(b: &BatchView) -> Self {
        BatchProgress {
            status: b.status,
            selected: b.selected,
            looked_up: b.looked_up,
            progress: b.progress.clone(),
            members: b.members.iter().map(|m| m.progress).collect(),
            held_by: b.members.iter().map(|m| m.held_by.clone()).collect(),
            stages: b.stages.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSummary {
    pub id: String,
    pub department: String,
    pub creator: String,
    pub reason: String,
    pub status: BatchStatus,
    pub created_at: DateTime<Utc>,
    /// Waiting for this reader's decision.
    pub awaits_me: bool,
    /// The department's name.
    pub department_name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    Pause,
    Resume,
    Cancel,
}
