//! Bulk reruns: select stalled operations by filter or by ticks, preview (a dry run), request, confirm the five
//! checks once, approve once, and watch the dispatch at its rate with pause, resume and cancel.
use super::AppError;
use super::reruns::DecisionView;
use crate::domain::batches::{BatchStatus, MemberState, Progress, Reason};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

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
    pub cause_class: Option<String>,
    pub cause_text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchView {
    pub id: String,
    pub department: String,
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
    pub decisions: Vec<DecisionView>,
    pub progress: Vec<(Progress, i64)>,
    pub members: Vec<MemberView>,
    pub may_request: bool,
    pub may_confirm: bool,
    pub may_decide: bool,
    pub may_pause: bool,
    pub may_resume: bool,
    pub may_cancel: bool,
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
}

impl From<&BatchView> for BatchProgress {
    fn from(b: &BatchView) -> Self {
        BatchProgress {
            status: b.status.clone(),
            selected: b.selected,
            looked_up: b.looked_up,
            progress: b.progress.clone(),
            members: b.members.iter().map(|m| m.progress).collect(),
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
    /// Waiting for this manager's decision.
    pub awaits_me: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    Pause,
    Resume,
    Cancel,
}

/// Freezes the selection as a bulk rerun and starts its look-ups. Times are the form's local date and time
/// in the user's time zone; ticked process IDs are separated by commas or spaces.
#[allow(clippy::too_many_arguments)]
#[server(endpoint = "batches/create")]
pub async fn create_batch(
    department: Option<String>,
    workflow: Option<String>,
    event: Option<String>,
    failure_class: Option<String>,
    registered_from: Option<String>,
    registered_to: Option<String>,
    process_ids: Option<String>,
    reason: String,
) -> Result<String, AppError> {
    let (state, caller) = context::caller().await?;
    let zone = crate::domain::preferences::time_zone_or_default(&caller.user.user.time_zone);
    let time = |field: &str, text: Option<String>| {
        crate::domain::batches::local_time(text.as_deref().unwrap_or(""), zone).map_err(|m| AppError::invalid(field, m))
    };
    let text = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let selection = Selection {
        department: text(department),
        workflow: text(workflow),
        event: text(event),
        failure_class: text(failure_class),
        registered_from: time("registered_from", registered_from)?,
        registered_to: time("registered_to", registered_to)?,
        process_ids: crate::domain::batches::process_ids(process_ids.as_deref().unwrap_or("")),
    };
    services::batches::create(&state, &caller, selection, &reason).await
}

#[server(endpoint = "batches/load")]
pub async fn load_batch(id: String) -> Result<BatchView, AppError> {
    context::read_once(("batches/load", &id), async {
        let (state, caller) = context::caller().await?;
        services::batches::view(&state, &caller, &id).await
    })
    .await
}

/// The moving parts of a batch (its page follows them while the batch moves).
#[server(endpoint = "batches/progress")]
pub async fn follow_batch(id: String) -> Result<BatchProgress, AppError> {
    let (state, caller) = context::caller().await?;
    services::batches::progress(&state, &caller, &id).await
}

#[server(endpoint = "batches/list")]
pub async fn list_batches() -> Result<Vec<BatchSummary>, AppError> {
    context::read_once("batches/list", async {
        let (state, caller) = context::caller().await?;
        services::batches::list(&state, &caller).await
    })
    .await
}

/// Requests the previewed plans, at a rate of at most the configured one (empty: the configured one).
#[server(endpoint = "batches/request")]
pub async fn request_batch(id: String, rate_per_minute: Option<String>) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let rate = match rate_per_minute.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => Some(r.parse::<u32>().map_err(|_| AppError::invalid("rate_per_minute", "a whole number of reruns a minute"))?),
        None => None,
    };
    services::batches::request(&state, &caller, &id, rate).await
}

#[server(endpoint = "batches/confirm")]
pub async fn confirm_batch_check(
    id: String,
    number: i64,
    comment: String,
    cause_class: Option<String>,
    cause_text: Option<String>,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let cause = services::rerun_requests::Cause { class: cause_class, text: cause_text };
    services::batches::confirm(&state, &caller, &id, number, &comment, cause).await
}

#[server(endpoint = "batches/submit")]
pub async fn submit_batch(id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::batches::submit(&state, &caller, &id).await
}

#[server(endpoint = "batches/decide")]
pub async fn decide_batch(id: String, approve: bool, comment: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::batches::decide(&state, &caller, &id, approve, &comment).await
}

#[server(endpoint = "batches/control")]
pub async fn control_batch(id: String, control: Control, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::batches::control(&state, &caller, &id, control, &reason).await
}
