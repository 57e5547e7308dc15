//! Incident reports, their prevention actions, and the known patterns shown on an operation's page.
use super::AppError;
use crate::domain::incidents::ActionStatus;
use chrono::{DateTime, NaiveDate, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentSummary {
    pub id: i64,
    pub title: String,
    pub department: String,
    pub occurred_at: DateTime<Utc>,
    pub open_actions: i64,
    pub overdue_actions: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentList {
    /// Newest first, one page.
    pub incidents: Vec<IncidentSummary>,
    /// Pass as `before` for the next page; `None` on the last page.
    pub next: Option<i64>,
    /// Staff or a manager of some department: may file a report.
    pub may_file: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkedOperation {
    pub process_id: String,
    /// The operation's event and failure class when it was linked.
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub linked_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionView {
    pub id: i64,
    pub description: String,
    pub owner_id: i64,
    pub owner: String,
    pub due_on: NaiveDate,
    pub status: ActionStatus,
    pub done_at: Option<DateTime<Utc>>,
    pub overdue: bool,
}

/// Someone of the department who may own an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub id: i64,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentView {
    pub id: i64,
    pub department: String,
    pub title: String,
    pub occurred_at: DateTime<Utc>,
    pub impact: String,
    pub cause: String,
    pub response: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub operations: Vec<LinkedOperation>,
    /// By due date.
    pub actions: Vec<ActionView>,
    /// The report's audit events, newest first.
    pub history: Vec<HistoryEntry>,
    /// Staff or a manager of the department (auditors read only).
    pub may_edit: bool,
    /// Who may own an action (only for those who may edit).
    pub people: Vec<Person>,
    /// The app's today (Japan time): overdue means open and due before it.
    pub today: NaiveDate,
}

/// An open action past its due date, for the board.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverdueAction {
    pub incident_id: i64,
    pub incident_title: String,
    pub department: String,
    pub action_id: i64,
    pub description: String,
    pub owner: String,
    pub due_on: NaiveDate,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acknowledgement {
    pub evidence: String,
    pub by: String,
    pub at: DateTime<Utc>,
}

/// A past incident of the department with the same event and failure class as this operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownPattern {
    pub incident_id: i64,
    pub title: String,
    pub occurred_at: DateTime<Utc>,
    pub response: String,
    /// "This pattern is already understood", for this operation.
    pub acknowledgement: Option<Acknowledgement>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownPatterns {
    /// Empty unless the operation is stalled or on hold and classified.
    pub patterns: Vec<KnownPattern>,
    /// Staff or a manager of the department: may acknowledge a pattern and file a report.
    pub may_act: bool,
}

/// A page of reports, newest first; `before`: the `next` of the previous page.
#[server(endpoint = "incidents/list")]
pub async fn list_incidents(before: Option<i64>) -> Result<IncidentList, AppError> {
    context::read_once(("incidents/list", &before), async {
        let (state, caller) = context::caller().await?;
        services::incidents::list(&state, &caller, before).await
    })
    .await
}

#[server(endpoint = "incidents/load")]
pub async fn load_incident(id: i64) -> Result<IncidentView, AppError> {
    context::read_once(("incidents/load", &id), async {
        let (state, caller) = context::caller().await?;
        services::incidents::load(&state, &caller, id).await
    })
    .await
}

/// Files a report from operations of one department (process IDs separated by commas or lines); its ID.
#[server(endpoint = "incidents/file")]
pub async fn file_incident(
    process_ids: String,
    title: String,
    occurred_at: String,
    impact: String,
    cause: String,
    response: String,
) -> Result<i64, AppError> {
    let (state, caller) = context::caller().await?;
    let texts = services::incidents::TextsForm { title, occurred_at, impact, cause, response };
    services::incidents::file(&state, &caller, &process_ids, texts).await
}

#[server(endpoint = "incidents/update")]
pub async fn update_incident(
    id: i64,
    title: String,
    occurred_at: String,
    impact: String,
    cause: String,
    response: String,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let texts = services::incidents::TextsForm { title, occurred_at, impact, cause, response };
    services::incidents::update(&state, &caller, id, texts).await
}

#[server(endpoint = "incidents/link")]
pub async fn link_operation(id: i64, process_id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::incidents::link(&state, &caller, id, &process_id).await
}

/// Adds a prevention action: what, who (a user of the department, by ID) and by when (`YYYY-MM-DD`).
#[server(endpoint = "incidents/add_action")]
pub async fn add_prevention_action(id: i64, description: String, owner_id: String, due_on: String) -> Result<i64, AppError> {
    let (state, caller) = context::caller().await?;
    services::incidents::add_action(&state, &caller, id, &description, &owner_id, &due_on).await
}

/// Marks an action done or dropped, or reopens it (`open`, `done`, `dropped`).
#[server(endpoint = "incidents/action_status")]
pub async fn set_action_status(id: i64, action_id: i64, status: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::incidents::set_action_status(&state, &caller, id, action_id, &status).await
}

#[server(endpoint = "incidents/patterns")]
pub async fn load_known_patterns(process_id: String) -> Result<KnownPatterns, AppError> {
    context::read_once(("incidents/patterns", &process_id), async {
        let (state, caller) = context::caller().await?;
        services::known_patterns::load(&state, &caller, &process_id).await
    })
    .await
}

/// "This pattern is already understood" for the operation, with the evidence (staff or manager).
#[server(endpoint = "incidents/acknowledge")]
pub async fn acknowledge_pattern(process_id: String, incident_id: i64, evidence: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::known_patterns::acknowledge(&state, &caller, &process_id, incident_id, &evidence).await
}
