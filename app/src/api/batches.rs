//! Bulk reruns: select stalled operations by filter or by ticks, preview (a dry run), request, confirm the five
//! checks once, approve once, and watch the dispatch at its rate with pause, resume and cancel.
// a server function's arguments are its form's fields, and the macro drops an item's own allow
#![allow(clippy::too_many_arguments)]
use crate::contract::AppError;
use crate::contract::batches::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

/// Freezes the selection as a bulk rerun and starts its look-ups. Times are the form's local date and time
/// in the user's time zone; ticked process IDs are separated by commas or spaces.
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
    let form =
        SelectionForm { department, workflow, event, failure_class, registered_from, registered_to, process_ids };
    services::batches::create(&state, &caller, form.read(&caller.user().time_zone)?, &reason).await
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
        Some(r) => Some(r.parse::<u32>().map_err(|_| {
            AppError::invalid(
                crate::domain::invalid::Field::RatePerMinute,
                crate::domain::invalid::Invalid::new(
                    crate::domain::invalid::Rule::OutOfRange,
                    "a whole number of reruns a minute",
                ),
            )
        })?),
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
