//! The dispatcher: sends approved reruns from the outbox. Before sending it asks the outside systems again (a
//! step that is executed by now is not sent; its flag is set). Then one signed POST to the workflow's rerun
//! URL per the contract, `webhook-id` = `Idempotency-Key` = the rerun ID on every attempt. No HTTP call happens
//! inside a transaction; each outcome and its audit event are written in one.
use super::audit::record;
use super::notifications::{Audience, notify};
use super::reconciliation;
use crate::api::AppError;
use crate::backend::db::dispatches::DispatchRow;
use crate::backend::db::rerun_requests::RequestRow;
use crate::backend::reconciliation::http_json::describe;
use crate::backend::reconciliation::ssrf;
use crate::backend::{AppState, db};
use crate::domain::audit::{Actor, AuditEntry};
use crate::domain::dispatch::{Answer, answer_of, next_delay};
use crate::domain::reconciliation::{Verdict, redact};
use crate::domain::rerun_plan::{PlannedStep, RerunPlan};
use crate::domain::webhooks::Secret;
use chrono::{DateTime, Duration, Utc};
use rand::Rng;
use serde_json::json;


/// Sends what is due; returns how many dispatches it handled.
pub async fn dispatch_due(state: &AppState) -> Result<usize, AppError> {
    let mut handled = 0;
    while handled < 50 {
        let now = state.clock.now();
        let mut tx = state.db.begin_write().await?;
        let lease = Duration::from_std(state.settings.dispatch_lease).unwrap_or(Duration::seconds(120));
        let claimed = db::dispatches::claim(&mut tx, now, now + lease).await?;
        tx.commit().await?;
        let Some(dispatch) = claimed else { break };
        if let Err(error) = send(state, &dispatch).await {
            tracing::error!(rerun = %dispatch.request_id, %error, "dispatch failed; the lease will pass it on");
        }
        handled += 1;
    }
    Ok(handled)
}

fn actor() -> Actor {
    Actor::system("dispatcher")
}

async fn send(state: &AppState, dispatch: &DispatchRow) -> Result<(), AppError> {
    let id = &dispatch.request_id;
    let (request, operation) = {
        let mut tx = state.db.begin_read().await?;
        let request = db::rerun_requests::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
        let operation = db::operations::by_id(&mut tx, request.operation_id).await?.ok_or(AppError::NotFound)?;
        (request, operation)
    };
    let now = state.clock.now();
    if request.expires_at.is_some_and(|at| now >= at) {
        return end(state, &request, dispatch, End::Expired).await;
    }
    let plan: RerunPlan = serde_json::from_str(&request.plan_json).map_err(|e| crate::backend::auth::internal("plan", e))?;
    // Ask again right before sending: what happened since the approval decides what is sent.
    let verdicts = reconciliation::reconcile(state, &operation, actor(), None).await?;
    let mut to_send: Vec<&PlannedStep> = Vec::new();
    let mut executed: Vec<String> = Vec::new();
    for step in &plan.steps {
        match verdicts.iter().find(|v| v.step == step.name).map(|v| v.verdict) {
            None | Some(Verdict::NotExecuted) => to_send.push(step),
            Some(Verdict::Executed) => executed.push(step.name.clone()),
            Some(_) => return end(state, &request, dispatch, End::PlanNoLongerHolds).await,
        }
    }
    if to_send.is_empty() {
        return end(state, &request, dispatch, End::NothingToSend(executed)).await;
    }
    let Some(workflow) = state.config.workflow(&operation.workflow) else {
        return end(state, &request, dispatch, End::Refused("the workflow is no longer configured".into())).await;
    };
    let approvers: Vec<String> = {
        let mut tx = state.db.begin_read().await?;
        db::rerun_requests::decisions(&mut tx, id).await?.into_iter().filter(|d| d.decision == "approved").map(|d| d.approver).collect()
    };
    let body = json!({
        "type": "rerun.approved",
        "rerun_id": id,
        "process_id": operation.process_id,
        "workflow": operation.workflow,
        "steps": to_send.iter().map(|s| json!({"name": s.name, "idempotency_key": s.idempotency_key})).collect::<Vec<_>>(),
        "requested_by": request.requester,
        "approved_by": approvers,
        "approved_at": request.decided_at,
    })
    .to_string();
    let secret = std::env::var(&workflow.signing_secret_env).ok().and_then(|s| Secret::parse(&s).ok());
    let Some(secret) = secret else {
        let why = format!("the signing secret variable {} is not set (or not a whsec_ secret)", workflow.signing_secret_env);
        return retry_or_fail(state, &request, dispatch, None, &why).await;
    };
    let target = Target { url: &workflow.rerun_url, allow_loopback: workflow.rerun_allow_loopback, timeout: state.settings.dispatch_timeout };
    fault_point("before_send");
    let answer = post(&target, id, &secret, &body, now).await;
    match answer {
        Ok((status, retry_after)) => match answer_of(status) {
            Answer::Accepted => {
                fault_point("after_send");
                end(state, &request, dispatch, End::Sent { executed, attempts: dispatch.attempts + 1 }).await?;
                fault_point("after_commit");
                Ok(())
            }
            Answer::TryAgain => retry_or_fail(state, &request, dispatch, retry_after, &format!("HTTP {status}")).await,
            Answer::Gone => end(state, &request, dispatch, End::Gone).await,
            Answer::Refused | Answer::Unknown => end(state, &request, dispatch, End::Refused(format!("HTTP {status}"))).await,
        },
        Err(Sent::NotSent(why)) => retry_or_fail(state, &request, dispatch, None, &why).await,
        Err(Sent::NoAnswer(why)) => end(state, &request, dispatch, End::Unknown(why)).await,
    }
}

/// Crash-safety tests (QUALITY 22) stop the process here and kill it: `RERUN_GATE_FAULT_POINT=before_send`,
/// `after_send` (before the dispatch is marked sent) or `after_commit`. Unset in production.
fn fault_point(name: &str) {
    if std::env::var("RERUN_GATE_FAULT_POINT").as_deref() == Ok(name) {
        eprintln!("fault point {name} reached");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
}

enum Sent {
    /// Nothing reached the receiver (no connection): safe to try again with the same ID.
    NotSent(String),
    /// It may have arrived: an unknown outcome, for reconciliation to settle.
    NoAnswer(String),
}

struct Target<'a> {
    url: &'a str,
    allow_loopback: bool,
    timeout: std::time::Duration,
}

/// One signed POST; no redirects, no proxy, outbound addresses checked.
async fn post(target: &Target<'_>, id: &str, secret: &Secret, body: &str, now: DateTime<Utc>) -> Result<(u16, Option<i64>), Sent> {
    let url = reqwest::Url::parse(target.url).map_err(|e| Sent::NotSent(format!("rerun_url: {e}")))?;
    ssrf::check_url(&url, target.allow_loopback).map_err(Sent::NotSent)?;
    let client = ssrf::shared_client(target.allow_loopback).map_err(Sent::NotSent)?;
    let timestamp = now.timestamp();
    let answer = client
        .post(url)
        .timeout(target.timeout)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", secret.sign(id, timestamp, body.as_bytes()))
        .header("idempotency-key", id)
        .body(body.to_string())
        .send()
        .await;
    match answer {
        Ok(answer) => {
            let retry_after = answer.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
            Ok((answer.status().as_u16(), retry_after))
        }
        Err(e) if e.is_connect() => Err(Sent::NotSent(redact(&describe(&e)))),
        Err(e) => Err(Sent::NoAnswer(redact(&describe(&e)))),
    }
}

enum End {
    Sent { executed: Vec<String>, attempts: i64 },
    NothingToSend(Vec<String>),
    Unknown(String),
    Gone,
    Refused(String),
    Exhausted(String),
    Expired,
    PlanNoLongerHolds,
}

async fn retry_or_fail(state: &AppState, request: &RequestRow, dispatch: &DispatchRow, retry_after: Option<i64>, why: &str) -> Result<(), AppError> {
    let attempts = dispatch.attempts + 1;
    let jitter = rand::thread_rng().gen_range(0.0..1.0);
    let Some(wait) = next_delay(attempts, retry_after, jitter) else {
        return end(state, request, dispatch, End::Exhausted(why.to_string())).await;
    };
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::dispatches::settle(&mut tx, &request.id, "pending", attempts, now + wait, Some(why), now).await?;
    tx.commit().await?;
    tracing::warn!(rerun = %request.id, attempts, wait_seconds = wait.num_seconds(), why, "dispatch will be tried again");
    Ok(())
}

/// The dispatch's end, with the request's and the operation's new states and the audit event, in one transaction.
async fn end(state: &AppState, request: &RequestRow, dispatch: &DispatchRow, end: End) -> Result<(), AppError> {
    let now = state.clock.now();
    let tried = matches!(end, End::Sent { .. } | End::Unknown(_) | End::Gone | End::Refused(_) | End::Exhausted(_));
    let attempts = dispatch.attempts + tried as i64;
    let (dispatch_status, request_status, operation_status, action, detail) = match &end {
        End::Sent { executed, attempts } => ("sent", "dispatched", "rerunning", "rerun.dispatched", json!({"attempts": attempts, "not_sent_executed": executed})),
        End::NothingToSend(executed) => ("sent", "succeeded", "stalled", "rerun.nothing_to_send", json!({"executed": executed})),
        End::Unknown(why) => ("unknown", "dispatched", "rerunning", "rerun.outcome_unknown", json!({"why": why})),
        End::Gone => ("failed", "failed", "stalled", "rerun.endpoint_gone", json!({"status": 410})),
        End::Refused(why) => ("failed", "failed", "stalled", "rerun.refused", json!({"why": why})),
        End::Exhausted(why) => ("failed", "failed", "stalled", "rerun.failed", json!({"why": why, "attempts": attempts})),
        End::Expired => ("failed", "expired", "stalled", "rerun_request.expired", json!({"why": "the approval's validity ran out before the dispatch"})),
        End::PlanNoLongerHolds => ("failed", "cancelled", "stalled", "rerun_request.voided", json!({"why": "a planned step is no longer proven not executed"})),
    };
    let mut tx = state.db.begin_write().await?;
    db::dispatches::settle(&mut tx, &request.id, dispatch_status, attempts, now, None, now).await?;
    db::rerun_requests::set_status(&mut tx, &request.id, "approved", request_status, now).await?;
    db::operations::set_status_from(&mut tx, request.operation_id, "rerun_pending", operation_status, now).await?;
    let executed = match &end {
        End::Sent { executed, .. } | End::NothingToSend(executed) => executed.clone(),
        _ => Vec::new(),
    };
    for name in &executed {
        if let Some(step) = db::operations::step_by_name(&mut tx, request.operation_id, name).await? {
            if db::rerun_requests::confirm_step_flag(&mut tx, step.id, now).await? {
                let entry = AuditEntry::new(actor(), "step.flag_confirmed", "operation", &request.process_id)
                    .department(Some(&request.department))
                    .after(json!({"step": name, "completed_at": now}))
                    .reason("executed at the outside system before the rerun was sent");
                record(&mut tx, entry, None, now).await?;
            }
        }
    }
    if matches!(end, End::NothingToSend(_)) {
        let facts = (request.operation_id, request.process_id.as_str(), request.department.as_str());
        super::operations::complete_if_done(&mut tx, actor(), facts, operation_status, None, now).await?;
    }
    let entry = AuditEntry::new(actor(), action, "operation", &request.process_id)
        .department(Some(&request.department))
        .before(json!({"rerun_id": request.id, "status": "approved"}))
        .after(json!({"rerun_id": request.id, "status": request_status, "detail": detail}));
    record(&mut tx, entry, None, now).await?;
    let (title, audience) = match end {
        End::Sent { .. } => ("再実行を送信しました", Audience::Requester),
        End::NothingToSend(_) => ("外部システムで実行済みのため、送信せずに完了しました", Audience::Requester),
        End::Unknown(_) => ("再実行の送信結果が不明です（照合で確認してください）", Audience::Both),
        End::Gone | End::Refused(_) | End::Exhausted(_) => ("再実行の送信に失敗しました", Audience::Both),
        End::Expired | End::PlanNoLongerHolds => ("再実行は送信されず、差し戻されました", Audience::Requester),
    };
    notify(&mut tx, state, request, request_status, title, audience, now).await?;
    tx.commit().await?;
    tracing::info!(rerun = %request.id, outcome = action, "dispatch ended");
    Ok(())
}
