//! Rerun requests: start one from a stalled operation, confirm its checklist, request approval.
use super::AppError;
use crate::domain::approval::Decision;
use crate::domain::rerun_plan::{Blocked, RerunPlan};
use crate::domain::rerun_request::RerunRequestStatus;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services,
};

/// What starting a request led to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartAnswer {
    /// A draft request with its computed plan and pre-filled checklist.
    Created { id: String },
    /// The steps' state forbids a rerun, with the reasons.
    Blocked { reasons: Vec<Blocked> },
    /// Nothing left to rerun: the executed steps got their completion flags.
    NothingToRerun { confirmed: Vec<String> },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckView {
    pub number: i64,
    pub label: String,
    /// Whether the system's own check holds.
    pub holds: bool,
    pub evidence: String,
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub cause_class: Option<String>,
    pub cause_text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RerunRequestView {
    pub id: String,
    pub process_id: String,
    pub department: String,
    pub status: RerunRequestStatus,
    pub requester: String,
    pub reason: String,
    pub created_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub plan: RerunPlan,
    pub checks: Vec<CheckView>,
    /// Staff or manager of the department while the request is a draft.
    pub may_confirm: bool,
    /// Staff or manager of the department while the request is not approved yet.
    pub may_cancel: bool,
    /// The owners' decisions so far.
    pub decisions: Vec<DecisionView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionView {
    pub approver: String,
    pub decision: Decision,
    pub comment: Option<String>,
    pub decided_at: DateTime<Utc>,
}

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

/// All five checks confirmed: the request goes to the department's owners for approval.
#[server(endpoint = "reruns/submit")]
pub async fn request_approval(id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::rerun_requests::submit(&state, &caller, &id).await
}

/// A request waiting for this manager's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxItem {
    pub id: String,
    pub process_id: String,
    pub department: String,
    pub requester: String,
    pub reason: String,
    pub submitted_at: Option<DateTime<Utc>>,
    /// The plan: step and its original idempotency key.
    pub steps: Vec<(String, String)>,
    pub approvals: i64,
    pub required: i64,
    /// The manager asked for this one: someone else must decide.
    pub own_request: bool,
}

#[server(endpoint = "approvals/inbox")]
pub async fn approval_inbox() -> Result<Vec<InboxItem>, AppError> {
    context::read_once("approvals/inbox", async {
        let (state, caller) = context::caller().await?;
        services::approvals::inbox(&state, &caller).await
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
