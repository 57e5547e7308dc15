//! Drills: inject faults into the demo outside systems for a period (demo or drill databases only), practise the
//! decision table on the operations they stall, and read the report.
use chrono::{DateTime, Utc};
use domain::drills::{Fault, ReportLine};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillView {
    pub id: String,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    /// When its faults end (or ended, if it was ended early).
    pub ends_at: DateTime<Utc>,
    pub faults: Vec<Fault>,
    pub note: String,
    /// Its faults are in force now.
    pub active: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillOverview {
    /// Drills run only on a database marked as a demo or drill environment.
    pub database_marked: bool,
    pub may_start: bool,
    pub drills: Vec<DrillView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillReport {
    pub drill: DrillView,
    pub lines: Vec<ReportLine>,
}
