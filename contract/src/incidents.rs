//! Incident reports, their prevention actions, and the known patterns shown on an operation's page.
use chrono::{DateTime, NaiveDate, Utc};
use domain::incidents::ActionStatus;
use serde::{Deserialize, Serialize};

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
    pub failure_class: Option<domain::stall::FailureClass>,
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
    /// Who acted and the action's name, in the reader's language; `action` is the raw code.
    pub actor: super::audit::ActorView,
    pub action: String,
    pub action_label: String,
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
    #[serde(with = "super::wire_time::day")] // on the board: the first download
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
