//! The dispatcher: sends approved reruns from the outbox. Before sending it asks the outside systems again (a
//! step that is executed by now is not sent; its flag is set). Then one signed POST to the workflow's rerun
//! URL per the contract, `webhook-id` = `Idempotency-Key` = the rerun ID on every attempt. No HTTP call happens
//! inside a transaction. A worker claims a batch, attempts its dispatches side by side, then writes every
//! outcome (the look-ups' evidence, the new states and their audit events) in one transaction: a crash before
//! that commit leaves the claims to expire, and the same rerun IDs are sent again (receivers deduplicate).
use super::audit::{record, record_all};
use super::notifications::{Audience, notify};
use super::reconciliation::{self, Looked};
use super::rerun_post;
use super::rerun_requests::{advance_by_id, plan_check};
use crate::db::dispatches::DispatchRow;
use crate::db::rerun_requests::RequestRow;
use crate::{AppState, db};
use chrono::{DateTime, Duration, Utc};
use contract::AppError;
use contract::rerun_call::{RerunCall, RerunCallStep, RerunCallType};
use domain::approval::is_expired;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::dispatch::{Answer, DispatchStatus, LeasedWork, answer_of, lease_covers, next_delay};
use domain::notifications::RerunNews;
use domain::reasons::SystemReason;
use domain::reconciliation::Verdict;
use domain::rerun_plan::Change;
use domain::rerun_request::{RequestEvent, RerunRequestStatus};
use domain::stop_switch::{Stopped, holding};
use rand::Rng;
use serde_json::json;

/// How many claimed dispatches one worker sends at a time: their look-ups and POSTs overlap while the
/// database writes take turns.
const BATCH: usize = 32;

/// How often a rerun held by the stop switch is looked at again (a resume also wakes the dispatcher).
const HELD_RECHECK_SECONDS: i64 = 5;

/// Sends what is due; returns how many dispatches it handled. A batch's outcomes are written (one transaction, in
/// line for the writer's lock) while the next batch is claimed and sent, so that the sends do not wait for the
/// writes of the batches before them; at most one sent batch waits to be written.
pub async fn dispatch_due(state: &AppState) -> Result<usize, AppError> {
    let mut handled = 0;
    let mut unwritten = None;
    // A process that is shutting down finishes the batch it claimed and claims no other.
    while handled < 4 * BATCH && !state.is_stopping() {
        let (written, next) = futures::join!(write_batch(state, unwritten.take()), claim_and_send(state));
        written?;
        let Some(sent) = next? else { break };
        handled += sent.claimed;
        unwritten = Some(sent);
    }
    write_batch(state, unwritten).await?;
    Ok(handled)
}

/// A batch claimed and sent, its outcomes not yet written.
struct SentBatch<'a> {
    /// The claim's mark on the leases (`db::dispatches::still_held`).
    owner: String,
    claimed: usize,
    outcomes: Vec<Outcome<'a>>,
}

/// Claims the next batch and attempts its dispatches side by side; `None` when nothing is due.
async fn claim_and_send(state: &AppState) -> Result<Option<SentBatch<'_>>, AppError> {
    let now = state.clock.now();
    let lease = Duration::from_std(state.server.dispatch_lease).unwrap_or(Duration::seconds(120));
    let owner = lease_owner();
    let mut tx = state.db.begin_claim().await?;
    let claimed = db::dispatches::claim(&mut tx, now, now + lease, &owner, BATCH as i64).await?;
    tx.commit().await?;
    if claimed.is_empty() {
        return Ok(None);
    }
    let stopped = super::stop_switch::stopped(state).await?;
    let attempts = futures::future::join_all(claimed.iter().map(|dispatch| attempt(state, dispatch, &stopped))).await;
    let mut outcomes = Vec::new();
    for (dispatch, attempt) in claimed.iter().zip(attempts) {
        match attempt {
            Ok(outcome) => outcomes.push(outcome),
            Err(error) => {
                tracing::error!(rerun = %dispatch.request_id, %error, "dispatch failed; the lease will pass it on")
            }
        }
    }
    Ok(Some(SentBatch { owner, claimed: claimed.len(), outcomes }))
}

/// Writes a sent batch's outcomes in one transaction: a crash before its commit leaves the leases to expire, and
/// the same rerun IDs are sent again (receivers deduplicate).
async fn write_batch(state: &AppState, sent: Option<SentBatch<'_>>) -> Result<(), AppError> {
    let Some(SentBatch { owner, outcomes, .. }) = sent else { return Ok(()) };
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    // A lease that passed to another dispatcher (this one was too slow): that one records the rerun.
    let ids: Vec<&str> = outcomes.iter().map(|o| o.request.id.as_str()).collect();
    let held = db::dispatches::still_held(&mut tx, &ids, &owner).await?;
    let (outcomes, passed): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(|o| held.contains(&o.request.id));
    for outcome in passed {
        tracing::warn!(
            rerun = %outcome.request.id,
            "the dispatch lease passed to another dispatcher: this outcome is not recorded"
        );
    }
    // The look-ups right before sending, all in a few statements; then each dispatch's new states.
    let looks: Vec<&Looked> = outcomes.iter().filter_map(|o| o.looked.as_ref()).collect();
    Looked::record_all(&mut tx, &looks, actor(), None).await?;
    let mut writes = Writes::default();
    for outcome in &outcomes {
        write(&mut tx, state, outcome, now, &mut writes).await?;
    }
    db::dispatches::settle(&mut tx, &writes.settled, now).await?;
    record_all(&mut tx, writes.ended, None).await?;
    // The integration may have reported its steps before this write, and the flags set here be the last ones
    // (writers take turns: one of the two writes sees every flag and completes the operation).
    for request in writes.completing {
        let facts = (request.operation_id, request.process_id.as_str(), request.department.as_str());
        super::rerun_requests::completed_by_rerun(&mut tx, state, actor(), facts, now).await?;
    }
    for (batch, request) in writes.dropped {
        super::batches::drop_after_approval(&mut tx, batch, request, now).await?;
    }
    let mut batches: Vec<&str> = outcomes.iter().filter_map(|o| o.request.batch_id.as_deref()).collect();
    batches.sort_unstable();
    batches.dedup();
    for batch in batches {
        super::batches::sent_if_done(&mut tx, state, batch, now).await?;
    }
    tx.commit().await?;
    if outcomes.iter().any(|o| matches!(o.next, Next::End(End::Sent { .. }))) {
        fault_point("after_commit");
    }
    for outcome in &outcomes {
        outcome.log();
    }
    Ok(())
}

/// One claim's mark on the dispatches it leases (`db::dispatches::still_held`).
fn lease_owner() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill(&mut bytes);
    hex::encode(bytes)
}

/// Refuses a lease that could end while its holder still works (`domain::dispatch::lease_covers`): checked
/// before the dispatcher starts, against the configured connectors' timeouts and the send timeout.
pub fn check_lease(state: &AppState) -> Result<(), String> {
    let look_ups = |workflow: &domain::configuration::WorkflowConfig| -> u64 {
        let connectors =
            workflow.steps.iter().filter_map(|s| s.connector.as_deref()).filter_map(|c| state.connectors.get(c));
        connectors.map(|c| c.common.timeout_seconds).sum()
    };
    let slowest = state.config.workflows.iter().map(|w| (look_ups(w), w.name.clone())).max().unwrap_or_default();
    let work = LeasedWork {
        workflow: slowest.1,
        look_ups: slowest.0,
        send: state.server.dispatch_timeout.as_secs_f64().ceil() as u64,
    };
    lease_covers(state.server.dispatch_lease.as_secs(), &work)
}

fn actor() -> Actor {
    Actor::system(SystemActor::Dispatcher)
}

/// What one attempt came to, not yet written.
struct Outcome<'a> {
    request: RequestRow,
    dispatch: DispatchRow,
    /// The look-up right before sending, recorded with the outcome.
    looked: Option<Looked<'a>>,
    next: Next,
}

enum Next {
    TryAgain {
        at: DateTime<Utc>,
        why: String,
    },
    /// The stop switch holds it: it waits in the outbox, its attempts untouched.
    Held {
        at: DateTime<Utc>,
        why: String,
    },
    End(End),
}

/// Asks the outside systems again, then sends what is still not executed. Writes nothing.
async fn attempt<'a>(
    state: &'a AppState,
    dispatch: &DispatchRow,
    stopped: &[Stopped],
) -> Result<Outcome<'a>, AppError> {
    let id = &dispatch.request_id;
    let (request, operation) = {
        let mut tx = state.db.connection().await?; // the request names its operation: no snapshot needed
        let request = db::rerun_requests::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
        let operation = db::operations::by_id(&mut tx, request.operation_id).await?.ok_or(AppError::NotFound)?;
        (request, operation)
    };
    let now = state.clock.now();
    let outcome = |looked, next| Ok(Outcome { request: request.clone(), dispatch: dispatch.clone(), looked, next });
    if is_expired(request.expires_at, now) {
        return outcome(None, Next::End(End::Expired));
    }
    let plan = request.plan()?;
    let definition = state.config.workflow(&operation.workflow);
    let connectors: Vec<&str> =
        plan.steps.iter().filter_map(|s| state.config.connector_of(&operation.workflow, &s.name)).collect();
    if let Some(pause) = holding(stopped, &operation.workflow, &connectors) {
        let why = format!("held by the stop switch: {} {} is paused", pause.scope.as_str(), pause.name);
        return outcome(None, Next::Held { at: now + Duration::seconds(HELD_RECHECK_SECONDS), why });
    }
    // Ask again right before sending, then check the approved plan against the facts as they are now (flags,
    // verdicts recorded by hand or by webhook, the workflow's definition) with what was just found: any change
    // voids the approval and nothing is sent (`domain::rerun_plan::check`, as at the approval).
    let looked = reconciliation::look(state, &operation).await?;
    let fresh: Vec<(String, Verdict)> = looked.verdicts().into_iter().map(|v| (v.step, v.verdict)).collect();
    let check = {
        let mut tx = state.db.connection().await?;
        plan_check(state, &mut tx, &request, &fresh).await?
    };
    if !check.holds() {
        return outcome(Some(looked), Next::End(End::Voided(check.changes)));
    }
    let (to_send, executed) = (check.to_send, check.executed);
    if to_send.is_empty() {
        return outcome(Some(looked), Next::End(End::NothingToSend(executed)));
    }
    let Some(workflow) = definition else {
        return outcome(Some(looked), Next::End(End::Refused("the workflow is no longer configured".into())));
    };
    let body = rerun_call(state, id, &operation, &request, &to_send).await?;
    let secret = match rerun_post::signing_secret(workflow) {
        Ok(secret) => secret,
        Err(why) => return outcome(Some(looked), try_again(dispatch, None, why, now)),
    };
    let target = rerun_post::Target {
        url: &workflow.rerun_url,
        allow_loopback: workflow.rerun_allow_loopback,
        timeout: state.server.dispatch_timeout,
        test: false,
    };
    fault_point("before_send");
    let signing = rerun_post::Signing::Signed { secret: &secret, at: now };
    let next = match rerun_post::post(&target, id, signing, &body).await {
        Ok(rerun_post::Posted { status, retry_after, .. }) => match answer_of(status) {
            Answer::Accepted => {
                fault_point("after_send");
                Next::End(End::Sent { executed, attempts: dispatch.attempts + 1 })
            }
            Answer::TryAgain => try_again(dispatch, retry_after, format!("HTTP {status}"), now),
            Answer::Gone => Next::End(End::Gone),
            Answer::Refused | Answer::Unknown => Next::End(End::Refused(format!("HTTP {status}"))),
        },
        Err(rerun_post::Sent::NotSent(why)) => try_again(dispatch, None, why, now),
        Err(rerun_post::Sent::NoAnswer(why)) => Next::End(End::Unknown(why)),
    };
    outcome(Some(looked), next)
}

/// The body of the signed POST: the steps to send with their original keys, and who asked and approved.
async fn rerun_call(
    state: &AppState,
    id: &str,
    operation: &db::operations::OperationRow,
    request: &RequestRow,
    to_send: &[domain::rerun_plan::PlannedStep],
) -> Result<String, AppError> {
    let approvals: Vec<_> = {
        let mut tx = state.db.connection().await?;
        let decisions = db::rerun_requests::decisions(&mut tx, id).await?;
        decisions.into_iter().filter(|d| d.decision == domain::approval::Decision::Approve).collect()
    };
    let call = RerunCall {
        kind: RerunCallType::Approved,
        rerun_id: id.to_string(),
        process_id: operation.process_id.clone(),
        workflow: operation.workflow.clone(),
        steps: to_send
            .iter()
            .map(|s| RerunCallStep { name: s.name.clone(), idempotency_key: s.idempotency_key.clone() })
            .collect(),
        requested_by: request.requester.clone(),
        approved_by: approvals.iter().map(|d| d.approver.clone()).collect(),
        requested_by_id: request.requested_by,
        approved_by_ids: approvals.iter().map(|d| d.approver_id).collect(),
        approved_at: request.decided_at,
    };
    serde_json::to_string(&call).map_err(|e| AppError::internal("serialize", e))
}

/// Another attempt after the backoff (or the receiver's `Retry-After`), unless the attempts are used up.
fn try_again(dispatch: &DispatchRow, retry_after: Option<i64>, why: String, now: DateTime<Utc>) -> Next {
    let jitter = rand::thread_rng().gen_range(0.0..1.0);
    match next_delay(dispatch.attempts + 1, retry_after, jitter) {
        Some(wait) => Next::TryAgain { at: now + wait, why },
        None => Next::End(End::Exhausted(why)),
    }
}

/// What a batch's outcomes write together once each has written its own rows: the dispatches' new states in
/// one statement, the ends' audit events in another, then the bulk reruns' members dropped after their approval
/// was voided (each after its request's event).
#[derive(Default)]
struct Writes<'o> {
    settled: Vec<db::dispatches::Settled<'o>>,
    ended: Vec<(AuditEntry, DateTime<Utc>)>,
    dropped: Vec<(&'o str, &'o RequestRow)>,
    /// Sent or found done: the operation completes if this write set its last flags.
    completing: Vec<&'o RequestRow>,
}

/// Writes one outcome's new states in the batch's transaction (its look-up is recorded with the batch's).
async fn write<'o>(
    tx: &mut db::Conn,
    state: &AppState,
    outcome: &'o Outcome<'_>,
    now: DateTime<Utc>,
    writes: &mut Writes<'o>,
) -> Result<(), AppError> {
    let request_id = outcome.request.id.as_str();
    let pending = |attempts, at: &DateTime<Utc>, why: &'o str| db::dispatches::Settled {
        request_id,
        status: DispatchStatus::Pending,
        attempts,
        next_attempt_at: *at,
        error: Some(why),
    };
    match &outcome.next {
        Next::TryAgain { at, why } => writes.settled.push(pending(outcome.dispatch.attempts + 1, at, why)),
        Next::Held { at, why } => writes.settled.push(pending(outcome.dispatch.attempts, at, why)),
        Next::End(end) => write_end(tx, state, &outcome.request, &outcome.dispatch, end, now, writes).await?,
    }
    Ok(())
}

impl Outcome<'_> {
    fn log(&self) {
        let rerun = &self.request.id;
        match &self.next {
            Next::TryAgain { at, why } => tracing::warn!(%rerun, %at, why, "dispatch will be tried again"),
            Next::Held { why, .. } => tracing::debug!(%rerun, why, "dispatch held"),
            Next::End(end) => tracing::info!(%rerun, outcome = end.action().as_str(), "dispatch ended"),
        }
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

enum End {
    Sent {
        executed: Vec<String>,
        attempts: i64,
    },
    NothingToSend(Vec<String>),
    Unknown(String),
    Gone,
    Refused(String),
    Exhausted(String),
    Expired,
    /// What the approval was bound to changed while it waited: back to staff, nothing sent.
    Voided(Vec<Change>),
}

impl End {
    /// What the requester (and, when something went wrong, the owners) are told.
    fn news(&self) -> (RerunNews, Audience) {
        match self {
            End::Sent { .. } => (RerunNews::Sent, Audience::Requester),
            End::NothingToSend(_) => (RerunNews::NothingToSend, Audience::Requester),
            End::Unknown(_) => (RerunNews::OutcomeUnknown, Audience::Both),
            End::Gone | End::Refused(_) | End::Exhausted(_) => (RerunNews::SendFailed, Audience::Both),
            End::Expired | End::Voided(_) => (RerunNews::NotSent, Audience::Requester),
        }
    }

    /// The audit event's action.
    fn action(&self) -> AuditAction {
        match self {
            End::Sent { .. } => AuditAction::RerunDispatched,
            End::NothingToSend(_) => AuditAction::RerunNothingToSend,
            End::Unknown(_) => AuditAction::RerunOutcomeUnknown,
            End::Gone => AuditAction::RerunEndpointGone,
            End::Refused(_) => AuditAction::RerunRefused,
            End::Exhausted(_) => AuditAction::RerunFailed,
            End::Expired => AuditAction::RerunRequestExpired,
            End::Voided(_) => AuditAction::RerunRequestVoided,
        }
    }
}

/// The request was approved and sent, its plan checked right before: the flags of the steps it left out on the key
/// alone are set now, on the judgment of the person who confirmed each on it (named in the flag's event).
async fn judged_flags(tx: &mut db::Conn, request: &RequestRow, now: DateTime<Utc>) -> Result<(), AppError> {
    for judgment in request.plan()?.judged {
        if let Some(step) = db::operations::step_by_name(tx, request.operation_id, &judgment.step).await?
            && db::rerun_requests::confirm_step_flag(tx, step.id, now).await?
        {
            let entry =
                AuditEntry::new(actor(), AuditAction::StepFlagConfirmed, ObjectType::Operation, &request.process_id)
                    .department(Some(&request.department))
                    .before(json!({"step": judgment.step, "completed_at": null}))
                    .after(json!({"step": judgment.step, "completed_at": now, "rests_on": "key_alone",
                        "rerun_id": request.id, "confirmed_by": judgment.by_name, "confirmed_at": judgment.at}))
                    .reason(&judgment.comment);
            record(tx, entry, None, now).await?;
        }
    }
    Ok(())
}

/// The dispatch's end, with the request's and the operation's new states and the audit event.
async fn write_end<'o>(
    tx: &mut db::Conn,
    state: &AppState,
    request: &'o RequestRow,
    dispatch: &DispatchRow,
    end: &End,
    now: DateTime<Utc>,
    writes: &mut Writes<'o>,
) -> Result<(), AppError> {
    let tried = matches!(end, End::Sent { .. } | End::Unknown(_) | End::Gone | End::Refused(_) | End::Exhausted(_));
    let attempts = dispatch.attempts + tried as i64;
    use DispatchStatus as D;
    use RequestEvent as E;
    let (dispatch_status, event, detail) = match end {
        End::Sent { executed, attempts } => {
            (D::Sent, E::Sent, json!({"attempts": attempts, "not_sent_executed": executed}))
        }
        End::NothingToSend(executed) => (D::Sent, E::NothingToSend, json!({"executed": executed})),
        End::Unknown(why) => (D::Unknown, E::Sent, json!({"why": why})),
        End::Gone => (D::Failed, E::SendFailed, json!({"status": 410})),
        End::Refused(why) => (D::Failed, E::SendFailed, json!({"why": why})),
        End::Exhausted(why) => (D::Failed, E::SendFailed, json!({"why": why, "attempts": attempts})),
        End::Expired => (D::Failed, E::Expire, json!({"why": "the approval's validity ran out before the dispatch"})),
        End::Voided(changes) => {
            (D::Failed, E::Void, json!({"why": "the approved plan no longer holds", "changes": changes}))
        }
    };
    writes.settled.push(db::dispatches::Settled {
        request_id: &request.id,
        status: dispatch_status,
        attempts,
        next_attempt_at: now,
        error: None,
    });
    // The outbox holds approved requests only: the dispatch moves the request from `approved` (a request the
    // operation's completion closed meanwhile stays as it is).
    let approved = (request.id.as_str(), request.operation_id, RerunRequestStatus::Approved);
    let request_status = advance_by_id(tx, approved, event, now).await?.to;
    let executed = match end {
        End::Sent { executed, .. } | End::NothingToSend(executed) => executed.clone(),
        _ => Vec::new(),
    };
    for name in &executed {
        if let Some(step) = db::operations::step_by_name(tx, request.operation_id, name).await?
            && db::rerun_requests::confirm_step_flag(tx, step.id, now).await?
        {
            let entry =
                AuditEntry::new(actor(), AuditAction::StepFlagConfirmed, ObjectType::Operation, &request.process_id)
                    .department(Some(&request.department))
                    .after(json!({"step": name, "completed_at": now}))
                    .reason(SystemReason::ExecutedBeforeSend.text());
            record(tx, entry, None, now).await?;
        }
    }
    if matches!(end, End::Sent { .. } | End::NothingToSend(_) | End::Unknown(_)) {
        judged_flags(tx, request, now).await?;
        writes.completing.push(request);
    }
    let entry = AuditEntry::new(actor(), end.action(), ObjectType::Operation, &request.process_id)
        .department(Some(&request.department))
        .before(json!({"rerun_id": request.id, "status": RerunRequestStatus::Approved}))
        .after(
            json!({"rerun_id": request.id, "batch_id": request.batch_id, "status": request_status, "detail": detail}),
        );
    writes.ended.push((entry, now));
    if let (Some(batch), End::Voided(_)) = (&request.batch_id, end) {
        writes.dropped.push((batch, request));
    }
    // A bulk rerun tells its requester once, when the batch completes.
    if request.batch_id.is_none() {
        let (news, audience) = end.news();
        notify(tx, state, request, news, audience, now).await?;
    }
    Ok(())
}
