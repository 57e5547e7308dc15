//! The stalled-operations board and the operation detail page.
use super::AppError;
use super::operations::OperationView;
use crate::domain::operations::OperationStatus;
use crate::domain::rerun_request::RerunRequestStatus;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services,
    crate::domain::reconciliation::Verdict,
};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardFilter {
    pub department: Option<String>,
    pub workflow: Option<String>,
    pub event: Option<String>,
    /// Only operations registered at least this many minutes ago.
    pub min_age_minutes: Option<i64>,
    /// Keyset cursor: the last row of the previous page.
    pub after: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardRow {
    pub cursor: i64,
    pub process_id: String,
    pub workflow: String,
    pub department: String,
    /// `stalled`, or `on_hold` while someone waits for the provider.
    pub status: OperationStatus,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub business_key: Option<String>,
    pub possible_duplicate_of: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// A drill's practice operation.
    #[serde(default)]
    pub drill: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardPage {
    /// Stalled operations per event (`None`: not classified), under the filters other than the event.
    pub counts: Vec<(Option<String>, i64)>,
    pub rows: Vec<BoardRow>,
    /// Pass as `after` for the next page; `None` on the last page.
    pub next: Option<i64>,
    /// The departments and workflows the filters may choose from.
    pub departments: Vec<String>,
    pub workflows: Vec<String>,
    /// In demo mode, the operation a newcomer should open first (the partial-success case).
    pub demo_start: Option<String>,
    /// Prevention actions of the caller's departments still open after their due date (incident reports).
    #[serde(default)]
    pub overdue_actions: Vec<super::incidents::OverdueAction>,
    /// Dispatches stopped by the stop switch (a banner on the board).
    #[serde(default)]
    pub pauses: Vec<super::stop_switch::PauseView>,
    /// Staff and managers of a department may start a bulk rerun from the board.
    #[serde(default)]
    pub may_start_bulk: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub reason: Option<String>,
    pub after: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationDetail {
    pub operation: OperationView,
    pub timeline: Vec<TimelineEntry>,
    pub hold: Option<HoldView>,
    /// Staff or manager of the department: may ask the outside systems and place or release holds.
    pub may_act: bool,
    /// A manager of the department: may record a verdict found out by hand.
    pub may_record_verdict: bool,
    /// The operation's open rerun request: its ID and status.
    pub open_request: Option<(String, RerunRequestStatus)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldView {
    pub placed_by: String,
    pub placed_at: DateTime<Utc>,
    pub reason: String,
}

#[server(endpoint = "board/stalled", input = Json)]
pub async fn stalled_operations(filter: BoardFilter) -> Result<BoardPage, AppError> {
    context::read_once(("board/stalled", &filter), async {
        let (state, caller) = context::caller().await?;
        let mut page = services::board::stalled(&state, &caller, filter.clone()).await?;
        page.demo_start = state.settings.demo_systems.then(|| "ORD-1002".into());
        Ok(page)
    })
    .await
}

#[server(endpoint = "board/operation")]
pub async fn load_operation(process_id: String) -> Result<OperationDetail, AppError> {
    context::read_once(("board/operation", &process_id), async {
        let (state, caller) = context::caller().await?;
        services::board::detail(&state, &caller, &process_id).await
    })
    .await
}

/// Asks the outside systems again about every step of the operation (staff or manager of its department).
#[server(endpoint = "board/reconcile")]
pub async fn reconcile_now(process_id: String) -> Result<usize, AppError> {
    let (state, caller) = context::caller().await?;
    Ok(
        services::reconciliation::on_demand(&state, &caller, &process_id)
            .await?
            .len(),
    )
}

/// Puts a stalled operation on hold, with the reason (staff or manager of its department).
#[server(endpoint = "board/hold")]
pub async fn place_hold(process_id: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::holds::place(&state, &caller, &process_id, &reason).await
}

/// Takes an operation off hold, with the reason; it is stalled again.
#[server(endpoint = "board/release")]
pub async fn release_hold(process_id: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::holds::release(&state, &caller, &process_id, &reason).await
}

/// A manager records a step's verdict found out by hand (e.g. the provider's support confirmed nothing was sent).
#[server(endpoint = "board/manual_verdict")]
pub async fn record_manual_verdict(
    process_id: String,
    step: String,
    verdict: String,
    evidence: String,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let verdict = Verdict::parse(&verdict).ok_or_else(|| AppError::invalid("verdict", "unknown verdict"))?;
    services::holds::manual_verdict(&state, &caller, &process_id, &step, verdict, &evidence).await
}

/// Adopts one AI generation of a step: only it counts as the step's result (staff or manager).
#[server(endpoint = "board/adopt")]
pub async fn adopt_ai_attempt(process_id: String, step: String, result_id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::ai_attempts::adopt(&state, &caller, &process_id, &step, &result_id).await
}
