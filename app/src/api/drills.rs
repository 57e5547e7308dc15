//! Drills: inject faults into the demo outside systems for a period (demo or drill databases only), practise the
//! decision table on the operations they stall, and read the report.
use super::AppError;
use crate::domain::drills::{Fault, ReportLine};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

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

#[server(endpoint = "drills/overview")]
pub async fn load_drills() -> Result<DrillOverview, AppError> {
    context::read_once("drills/overview", async {
        let (state, caller) = context::caller().await?;
        services::drills::overview(&state, &caller).await
    })
    .await
}

/// Starts a drill with the chosen faults (their names separated by commas) for `minutes`.
#[server(endpoint = "drills/start")]
pub async fn start_drill(faults: String, minutes: i64, note: String) -> Result<String, AppError> {
    let (state, caller) = context::caller().await?;
    let mut chosen = Vec::new();
    for name in faults.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        chosen.push(Fault::parse(name).ok_or_else(|| AppError::invalid("faults", format!("unknown fault '{name}'")))?);
    }
    services::drills::start(&state, &caller, &chosen, minutes, &note).await
}

#[server(endpoint = "drills/end")]
pub async fn end_drill(id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::drills::end(&state, &caller, &id).await
}

#[server(endpoint = "drills/report")]
pub async fn load_drill_report(id: String) -> Result<DrillReport, AppError> {
    context::read_once(("drills/report", &id), async {
        let (state, caller) = context::caller().await?;
        services::drills::report(&state, &caller, &id).await
    })
    .await
}
