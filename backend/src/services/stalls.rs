//! When an operation stalls: the sweeper's rule for one operation (`domain::stall::detect_stall`), its record
//! and audit event — a compare-and-set, so that with several server processes exactly one records each stall —
//! the outside systems asked at once, and a rerun that stalled again ended as failed. The sweeper runs it over
//! every running operation; a bulk rerun's stage check for one whose step reported an error.
use super::audit::record;
use super::reconciliation;
use crate::db::operations::OperationRow;
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::notifications::RerunNews;
use domain::operations::{OperationEvent, OperationStatus, StepState};
use domain::reasons::SystemReason;
use domain::rerun_request::RequestEvent;
use domain::stall::{StepFacts, detect_stall};
use domain::steps::Step;
use serde_json::json;

/// The sweeper's rule for one operation, now: a bulk rerun's stage check asks it about a rerun whose step reported
/// an error, so that the stage fails at once rather than at the next sweep. `true` when it stalled.
pub async fn stall_if_due(state: &AppState, operation_id: i64) -> Result<bool, AppError> {
    let (operation, steps) = {
        let mut read = state.db.begin_read().await?;
        let operation = db::operations::by_id(&mut read, operation_id).await?.ok_or(AppError::NotFound)?;
        let steps = db::operations::steps(&mut read, operation.id).await?;
        (operation, steps)
    };
    stalled_and_reconciled(state, &operation, &steps).await
}

/// Marks the operation stalled if it is, then asks the outside systems: what they say is the first thing staff
/// need on a stalled operation.
pub(super) async fn stalled_and_reconciled(
    state: &AppState,
    operation: &OperationRow,
    steps: &[Step],
) -> Result<bool, AppError> {
    if !mark_if_stalled(state, operation, steps).await? {
        return Ok(false);
    }
    let asked_by = Actor::system(SystemActor::Reconciler);
    if let Err(error) = reconciliation::reconcile(state, operation, asked_by, None).await {
        tracing::error!(process_id = %operation.process_id, %error, "reconciliation after the stall failed");
    }
    Ok(true)
}

async fn mark_if_stalled(state: &AppState, operation: &OperationRow, steps: &[Step]) -> Result<bool, AppError> {
    let now = state.clock.now();
    let Some(workflow) = state.config.workflow(&operation.workflow) else {
        tracing::warn!(
            process_id = %operation.process_id,
            workflow = %operation.workflow,
            "workflow no longer configured"
        );
        return Ok(false);
    };
    // A rerun's clock starts when it was sent: what its steps said before then is the stall it answers.
    let rerun = operation.status == OperationStatus::Rerunning;
    let since = match rerun {
        true => db::rerun_requests::sent_at(&mut state.db.connection().await?, operation.id).await?,
        false => None,
    };
    let facts: Vec<StepFacts> = steps
        .iter()
        .map(|s| {
            let definition = workflow.steps.iter().find(|d| d.name == s.name);
            let stale = since.is_some_and(|at| s.completed_at.is_none() && s.updated_at < at);
            StepFacts {
                name: s.name.clone(),
                state: if stale { StepState::NotStarted } else { s.state },
                error_class: s.error_class.clone().filter(|_| !stale),
                result_id: s.result_id.clone(),
                started_at: s.started_at.filter(|_| !stale),
                last_heartbeat_at: s.last_heartbeat_at.filter(|_| !stale),
                completed_at: s.completed_at,
                deadline_seconds: definition.map_or(600, |d| d.deadline_seconds),
                heartbeat_seconds: definition.and_then(|d| d.heartbeat_seconds),
            }
        })
        .collect();
    let started = since.unwrap_or(operation.created_at);
    let Some(stall) = detect_stall(&facts, started, now) else { return Ok(false) };
    let event = stall.event.as_str();
    let failure_class = stall.event.failure_class().as_str();
    let move_ = if rerun { OperationEvent::RerunStalled } else { OperationEvent::Stall };
    let mut tx = state.db.begin_write().await?;
    if !db::operations::mark_stalled(&mut tx, operation.id, move_, (event, failure_class), now).await? {
        return Ok(false);
    }
    let entry = AuditEntry::new(
        Actor::system(SystemActor::Sweeper),
        AuditAction::OperationStalled,
        ObjectType::Operation,
        &operation.process_id,
    )
    .department(Some(&operation.department))
    .before(json!({"status": operation.status}))
    .after(
        json!({"status": OperationStatus::Stalled, "event": event, "failure_class": failure_class, "step": stall.step,
            "stall_reason": stall.reason}),
    )
    .reason(SystemReason::Stalled(stall.reason.clone()).text());
    record(&mut tx, entry, None, now).await?;
    if rerun {
        let met = steps.iter().find(|s| s.name == stall.step);
        rerun_failed(&mut tx, state, operation, (&stall.step, met), now).await?;
    }
    tx.commit().await?;
    tracing::info!(process_id = %operation.process_id, event, step = %stall.step, "operation stalled");
    Ok(true)
}

/// The rerun that was sent stalled again: its request ends as failed (the operation is stalled already, so a new
/// request can be made), with the error its step met, and the requester is told.
async fn rerun_failed(
    tx: &mut db::Conn,
    state: &AppState,
    operation: &OperationRow,
    (step, met): (&str, Option<&Step>),
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    let Some(request) = db::rerun_requests::open_for_operation(tx, operation.id).await? else { return Ok(()) };
    let to = request.status.next(RequestEvent::RerunStalled)?;
    if !db::rerun_requests::set_status(tx, &request.id, request.status, to, now).await? {
        return Ok(());
    }
    let error = met.and_then(|s| Some(json!({"class": s.error_class.as_ref()?, "message": s.error_message})));
    let entry = AuditEntry::new(
        Actor::system(SystemActor::Sweeper),
        AuditAction::RerunFailed,
        ObjectType::Operation,
        &operation.process_id,
    )
    .department(Some(&operation.department))
    .before(json!({"rerun_id": request.id, "status": request.status}))
    .after(json!({"rerun_id": request.id, "status": to, "step": step, "error": error}));
    record(tx, entry, None, now).await?;
    let audience = super::notifications::Audience::Requester;
    super::notifications::notify(tx, state, &request, RerunNews::StalledAgain, audience, now).await?;
    Ok(())
}
