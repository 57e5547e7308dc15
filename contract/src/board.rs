//! The stalled-operations board and the operation detail page.
use super::operations::OperationView;
use chrono::{DateTime, Utc};
use domain::operations::OperationStatus;
use domain::rerun_request::RerunRequestStatus;
use serde::{Deserialize, Serialize};

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
    pub failure_class: Option<domain::stall::FailureClass>,
    pub business_key: Option<String>,
    pub possible_duplicate_of: Option<String>,
    // The board is in the first download: its moments are read by `wire_time`, not chrono's parser.
    #[serde(with = "super::wire_time::moment")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "super::wire_time::moment")]
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
    /// The departments the reader may filter by, with their names.
    pub departments: Vec<super::DepartmentDto>,
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
    /// Who acted, in the reader's language (a part of the system by what it is called).
    pub actor: super::audit::ActorView,
    /// The raw code (`operation.stalled`), and its name in the reader's language.
    pub action: String,
    pub action_label: String,
    pub reason: Option<super::audit::ReasonView>,
    pub after: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationDetail {
    pub operation: OperationView,
    /// The operation's department, by name.
    pub department_name: String,
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
