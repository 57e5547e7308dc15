//! The sweeper: finds running operations that stalled, classifies them, and records it. Safe with several
//! server processes: the status change is a compare-and-set (`WHERE status = 'running'`), so exactly one
//! instance records each stall and its audit event.
use super::audit::record;
use super::reconciliation;
use crate::db::operations::OperationRow;
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::operations::OperationStatus;
use domain::reasons::SystemReason;
use domain::stall::{StepFacts, detect_stall};
use domain::steps::Step;
use serde_json::json;

const PAGE: i64 = 500;

/// One pass over all running operations (and requests past their approval's validity); returns how many
/// operations it marked stalled.
pub async fn sweep(state: &AppState) -> Result<usize, AppError> {
    let mut marked = 0;
    let mut after = 0;
    loop {
        let mut read = state.db.begin_read().await?;
        let page = db::operations::running_after(&mut read, after, PAGE).await?;
        let mut candidates = Vec::new();
        for operation in &page {
            let steps = db::operations::steps(&mut read, operation.id).await?;
            candidates.push((operation.clone(), steps));
        }
        drop(read);
        for (operation, steps) in candidates {
            if mark_if_stalled(state, &operation, &steps).await? {
                marked += 1;
                // What the outside systems say is the first thing staff need on a stalled operation.
                let asked_by = Actor::system(SystemActor::Reconciler);
                if let Err(error) = reconciliation::reconcile(state, &operation, asked_by, None).await {
                    tracing::error!(
                        process_id = %operation.process_id,
                        %error,
                        "reconciliation after the stall failed"
                    );
                }
            }
        }
        match page.last() {
            Some(last) if page.len() as i64 == PAGE => after = last.id,
            _ => break,
        }
    }
    let expired = super::approvals::expire_overdue(state).await? + super::batches::expire_overdue(state).await?;
    if expired > 0 {
        tracing::info!(expired, "rerun requests or bulk reruns expired without a decision");
    }
    super::batches::resume_stale_previews(state).await?;
    Ok(marked)
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
    let facts: Vec<StepFacts> = steps
        .iter()
        .map(|s| {
            let definition = workflow.steps.iter().find(|d| d.name == s.name);
            StepFacts {
                name: s.name.clone(),
                state: s.state,
                error_class: s.error_class.clone(),
                result_id: s.result_id.clone(),
                started_at: s.started_at,
                last_heartbeat_at: s.last_heartbeat_at,
                completed_at: s.completed_at,
                deadline_seconds: definition.map_or(600, |d| d.deadline_seconds),
                heartbeat_seconds: definition.and_then(|d| d.heartbeat_seconds),
            }
        })
        .collect();
    let Some(stall) = detect_stall(&facts, operation.created_at, now) else { return Ok(false) };
    let event = stall.event.as_str();
    let failure_class = stall.event.failure_class().as_str();
    let mut tx = state.db.begin_write().await?;
    if !db::operations::mark_stalled(&mut tx, operation.id, event, failure_class, now).await? {
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
    tx.commit().await?;
    tracing::info!(process_id = %operation.process_id, event, step = %stall.step, "operation stalled");
    Ok(true)
}
