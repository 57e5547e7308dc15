//! Rerun requests: start one from a stalled operation, confirm its checklist, request approval.
use crate::contract::AppError;
use crate::contract::reruns::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services, crate::domain::approval::Decision};

#[server(endpoint = "reruns/start")]
pub async fn start_rerun_request(process_id: String, reason: String) -> Result<StartAnswer, AppError> {
    let (state, caller) = context::caller().await?;
    services::rerun_requests::start(&state, &caller, &process_id, &reason).await
}

#[server(endpoint = "reruns/load")]
pub async fn load_rerun_request(id: String) -> Result<RerunRequestView, AppError> {
    context::read_once(("reruns/load", &id), async {
        let (state, caller) = context::caller().await?;
        services::rerun_requests::view(&state, &caller, &id).await
    })
    .await
}

/// Confirms one of the five checks with a comment (the fifth with the cause class and text).
#[server(endpoint = "reruns/confirm")]
pub async fn confirm_check(
    id: String,
    number: i64,
    comment: String,
    cause_class: Option<String>,
    cause_text: Option<String>,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let cause = services::rerun_requests::Cause { class: cause_class, text: cause_text };
    services::rerun_requests::confirm(&state, &caller, &id, number, &comment, cause).await
}

/// A step left out on the key alone: staff confirm, having looked at the record beside its content, that what ran
/// is what was meant.
#[server(endpoint = "reruns/confirm_key_alone")]
pub async fn confirm_key_alone(id: String, step: String, comment: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::key_alone::confirm(&state, &caller, &id, &step, &comment).await
}

/// All five checks confirmed: the request goes to the department's owners for approval.
#[server(endpoint = "reruns/submit")]
pub async fn request_approval(id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::rerun_requests::submit(&state, &caller, &id).await
}

/// A draft whose facts changed: withdrawn, and started again with the same reason on the facts as they are now.
#[server(endpoint = "reruns/replan")]
pub async fn make_plan_again(id: String) -> Result<StartAnswer, AppError> {
    let (state, caller) = context::caller().await?;
    services::rerun_requests::make_again(&state, &caller, &id).await
}

#[server(endpoint = "approvals/inbox")]
pub async fn approval_inbox() -> Result<Inbox, AppError> {
    context::read_once("approvals/inbox", async {
        let (state, caller) = context::caller().await?;
        services::inbox::inbox(&state, &caller).await
    })
    .await
}

/// An owner approves (comment optional) or rejects (comment required) a request.
#[server(endpoint = "approvals/decide")]
pub async fn decide_rerun(id: String, approve: bool, comment: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let decision = if approve { Decision::Approve } else { Decision::Reject };
    services::approvals::decide(&state, &caller, &id, decision, &comment).await
}

/// Withdraws a request that is not approved yet (staff or manager of the department), with a reason.
#[server(endpoint = "reruns/cancel")]
pub async fn cancel_rerun_request(id: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::rerun_requests::cancel(&state, &caller, &id, &reason).await
}
