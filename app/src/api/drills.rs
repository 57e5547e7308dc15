//! Drills: inject faults into the demo outside systems for a period (demo or drill databases only), practise the
//! decision table on the operations they stall, and read the report.
use crate::contract::AppError;
use crate::contract::drills::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services, crate::domain::drills::Fault};

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
        chosen.push(Fault::parse(name).ok_or_else(|| {
            AppError::invalid(
                crate::domain::invalid::Field::Faults,
                crate::domain::invalid::Invalid::new(
                    crate::domain::invalid::Rule::Unknown,
                    format!("unknown fault '{name}'"),
                ),
            )
        })?);
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
