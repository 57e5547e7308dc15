//! Step events from the integration: the newest `seq` wins, success sets the completion flag in the same
//! transaction, and an operation whose steps all succeeded is completed.
use super::api_clients::ApiClient;
use super::audit::record;
use super::operations::step_view;
use crate::api::AppError;
use crate::api::operations::{StepEvent, StepEventAnswer};
use crate::backend::{AppState, db};
use crate::domain::audit::AuditEntry;
use crate::domain::operations::{OperationStatus, StepEventType, StepState, is_newer, may_leave_success};
use serde_json::json;

const MAX_MESSAGE_CHARS: usize = 2_000;

pub async fn report(
    state: &AppState,
    client: &ApiClient,
    process_id: &str,
    step_name: &str,
    event: StepEvent,
) -> Result<StepEventAnswer, AppError> {
    if event.seq < 0 {
        return Err(AppError::invalid("seq", "seq must be zero or more"));
    }
    if event.kind == StepEventType::Failed && event.error.is_none() {
        return Err(AppError::invalid("error", "a failed event needs an error with class and message"));
    }
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let operation = db::operations::by_process_id(&mut tx, process_id).await?.ok_or(AppError::NotFound)?;
    if !client.may_see(&operation.department) {
        return Err(AppError::NotFound);
    }
    let steps = db::operations::steps(&mut tx, operation.id).await?;
    let current = steps.iter().find(|s| s.name == step_name).cloned().ok_or(AppError::NotFound)?;
    let current_state = StepState::parse(&current.state).unwrap_or(StepState::Unknown);
    let next_state = event.kind.resulting_state();

    // Late, repeated or contradicting events are answered, never applied, and never an error (no retries).
    if !is_newer(current.last_seq, event.seq) || !may_leave_success(current_state, next_state) {
        return Ok(StepEventAnswer { applied: false, step: step_view(current) });
    }

    let at = event.at.unwrap_or(now);
    let mut step = current.clone();
    step.state = next_state.as_str().to_string();
    step.last_seq = Some(event.seq);
    step.updated_at = now;
    // An outcome reported without a `started` event still was an attempt.
    if current_state == StepState::NotStarted && !matches!(event.kind, StepEventType::Started | StepEventType::Heartbeat) {
        step.attempts += 1;
    }
    match event.kind {
        StepEventType::Started => {
            step.attempts += 1;
            step.started_at = Some(at);
            step.last_heartbeat_at = Some(at);
        }
        StepEventType::Heartbeat => step.last_heartbeat_at = Some(at),
        StepEventType::Succeeded => {
            step.result_id = event.result_id.clone().or(step.result_id);
            step.completed_at = Some(at); // the completion flag
            step.error_class = None;
            step.error_message = None;
        }
        StepEventType::Failed | StepEventType::Unknown => {
            if let Some(error) = &event.error {
                step.error_class = Some(error.class.chars().take(64).collect());
                step.error_message = Some(error.message.chars().take(MAX_MESSAGE_CHARS).collect());
            }
        }
    }
    db::operations::update_step(&mut tx, &step).await?;

    // Heartbeats only show liveness; every real state change is audited.
    if event.kind != StepEventType::Heartbeat {
        let entry = AuditEntry::new(client.actor(), step_action(event.kind), "operation", process_id)
            .department(Some(&operation.department))
            .before(json!({"step": step_name, "state": current.state, "seq": current.last_seq}))
            .after(json!({
                "step": step_name, "state": step.state, "seq": step.last_seq, "result_id": step.result_id,
                "completed_at": step.completed_at, "error_class": step.error_class,
            }));
        record(&mut tx, entry, None, now).await?;
    }
    let all_done = steps.iter().all(|s| if s.id == step.id { step.completed_at.is_some() } else { s.completed_at.is_some() });
    if all_done && operation.status != OperationStatus::Completed.as_str() {
        db::operations::set_status(&mut tx, operation.id, OperationStatus::Completed.as_str(), now).await?;
        let entry = AuditEntry::new(client.actor(), "operation.completed", "operation", process_id)
            .department(Some(&operation.department))
            .before(json!({"status": operation.status}))
            .after(json!({"status": OperationStatus::Completed.as_str()}));
        record(&mut tx, entry, None, now).await?;
    }
    tx.commit().await?;
    Ok(StepEventAnswer { applied: true, step: step_view(step) })
}

fn step_action(kind: StepEventType) -> &'static str {
    match kind {
        StepEventType::Started => "step.started",
        StepEventType::Succeeded => "step.succeeded",
        StepEventType::Failed => "step.failed",
        StepEventType::Unknown => "step.unknown",
        StepEventType::Heartbeat => "step.heartbeat",
    }
}
