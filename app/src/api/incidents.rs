//! Incident reports, their prevention actions, and the known patterns shown on an operation's page.
use crate::contract::AppError;
use crate::contract::incidents::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

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
pub async fn add_prevention_action(
    id: i64,
    description: String,
    owner_id: String,
    due_on: String,
) -> Result<i64, AppError> {
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
