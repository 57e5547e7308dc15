//! Step events from the integration: the newest `seq` wins, success sets the completion flag in the same
//! transaction, and an operation whose steps all succeeded is completed.
//!
//! The step is read outside the write lock (or taken from what this instance last wrote of it, see
//! `known_steps`) and written back with a compare-and-set on its revision; when anything changed the step
//! since, the decision is taken again under the lock. This keeps the serialised part (SQLite has one writer)
//! to the writes themselves in the common case.
use super::api_clients::ApiClient;
use super::audit::record;
use super::operations::step_view;
use crate::backend::db::operations::{StepInOperation, StepRow};
use crate::backend::reconciliation::ConfiguredConnector;
use crate::backend::{AppState, db};
use crate::contract::AppError;
use crate::contract::operations::{StepEvent, StepEventAnswer};
use crate::domain::audit::AuditEntry;
use crate::domain::audit_action::AuditAction;
use crate::domain::operations::{OperationStatus, StepEventType, StepState, is_newer, may_leave_success};
use crate::domain::rerun_request::RequestEvent;
use chrono::{DateTime, Utc};
use serde_json::json;

const MAX_MESSAGE_CHARS: usize = 2_000;

/// What a step event needs of its operation.
struct Operation {
    id: i64,
    process_id: String,
    workflow: String,
    department: String,
}

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
    if event.usage.is_some_and(|u| u.input_tokens < 0 || u.output_tokens < 0) {
        return Err(AppError::invalid("usage", "token counts must be zero or more"));
    }
    if event.kind == StepEventType::Failed && event.error.is_none() {
        return Err(AppError::invalid("error", "a failed event needs an error with class and message"));
    }
    let now = state.clock.now();
    // The step as this instance last wrote it: no read. A guess that fails (the step changed since, or the
    // event would not apply to it) is forgotten and the step read.
    if let Some(known) = state.known_steps.get(process_id, step_name).filter(|k| client.may_see(&k.department)) {
        let operation = Operation {
            id: known.step.operation_id,
            process_id: process_id.to_string(),
            workflow: known.workflow,
            department: known.department,
        };
        if let Some(next) = decide(&known.step, &event, now)
            && let Some(answer) = write_at_once(state, client, &operation, &known.step, next, &event, now).await?
        {
            return Ok(answer);
        }
        state.known_steps.forget(process_id, step_name);
    }
    // The step is read without a transaction or the writer; the compare-and-set below catches any change since.
    let found = db::operations::step_in_operation(&mut state.db.connection().await?, process_id, step_name).await?;
    let Some(StepInOperation { step: seen, process_id, workflow, department, operation_status }) = found else {
        return Err(AppError::NotFound);
    };
    if !client.may_see(&department) {
        return Err(AppError::NotFound);
    }
    let operation = Operation { id: seen.operation_id, process_id, workflow, department };
    let Some(next) = decide(&seen, &event, now) else {
        return Ok(StepEventAnswer { applied: false, step: step_view(seen) });
    };
    if let Some(answer) = write_at_once(state, client, &operation, &seen, next.clone(), &event, now).await? {
        return Ok(answer);
    }

    let mut tx = state.db.begin_write().await?;
    let (current, next) = if db::operations::update_step_if_unchanged(&mut tx, &next).await? {
        (seen, next)
    } else {
        // Something changed the step first: decide again on the row as it is now, under the lock.
        let current = db::operations::step_for_update(&mut tx, seen.id).await?;
        let Some(next) = decide(&current, &event, now) else {
            return Ok(StepEventAnswer { applied: false, step: step_view(current) });
        };
        if !db::operations::update_step_if_unchanged(&mut tx, &next).await? {
            return Err(AppError::internal("step event", "locked step changed"));
        }
        (current, next)
    };
    // AI steps keep each generation as an attempt, in the same transaction.
    if let Some(ai) = ai_connector(state, &operation, &next, &event) {
        super::ai_attempts::from_event(&mut tx, ai, &next, &event, now).await?;
    }
    finish_write(tx, state, client, &operation, operation_status, &current, next, event.kind, now).await
}

/// Most events change the step and write one audit event, nothing else: on SQLite one round trip holding the
/// writer, shared with the other events waiting for it (see `Db::write_step_at_once`). `None` when the event
/// has more to write (an AI attempt, a heartbeat's liveness), or when the write is refused (a success that
/// would complete the operation, a step changed since `current`, any doubt): the caller takes the ordinary path.
async fn write_at_once(
    state: &AppState,
    client: &ApiClient,
    operation: &Operation,
    current: &StepRow,
    next: StepRow,
    event: &StepEvent,
    now: DateTime<Utc>,
) -> Result<Option<StepEventAnswer>, AppError> {
    if event.kind == StepEventType::Heartbeat || ai_connector(state, operation, &next, event).is_some() {
        return Ok(None);
    }
    let entry = step_entry(client, operation, current, &next, event.kind);
    if !state.db.write_step_at_once(db::StepChange { step: next.clone(), entry, now }).await? {
        return Ok(None);
    }
    state.known_steps.written(&operation.process_id, next.clone(), &operation.workflow, &operation.department);
    Ok(Some(StepEventAnswer { applied: true, step: step_view(next) }))
}

/// The AI connector of the step, when the event concerns one of its generations.
fn ai_connector<'a>(
    state: &'a AppState,
    operation: &Operation,
    next: &StepRow,
    event: &StepEvent,
) -> Option<&'a ConfiguredConnector> {
    let ai = state.connectors.of_step(&state.config, &operation.workflow, &next.name).filter(|c| c.ai);
    ai.filter(|_| super::ai_attempts::concerns(next, event))
}

/// The step after the event, or `None` when the event must not be applied: late, repeated or contradicting
/// events are answered `applied: false`, never an error, so that senders do not retry them.
fn decide(current: &StepRow, event: &StepEvent, now: DateTime<Utc>) -> Option<StepRow> {
    let current_state = current.state;
    let newer = is_newer(current.last_seq, event.seq);
    (newer && may_leave_success(current_state, event.kind.resulting_state())).then(|| apply(current, event, now))
}

/// The step after the event.
fn apply(current: &StepRow, event: &StepEvent, now: DateTime<Utc>) -> StepRow {
    let at = event.at.unwrap_or(now);
    let mut step = current.clone();
    step.state = event.kind.resulting_state();
    step.last_seq = Some(event.seq);
    step.updated_at = now;
    // An outcome reported without a `started` event still was an attempt.
    if current.state == StepState::NotStarted
        && !matches!(event.kind, StepEventType::Started | StepEventType::Heartbeat)
    {
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
    step
}

/// After the step's row is written: its audit event and, after the last success, the operation's completion,
/// in the same transaction.
#[allow(clippy::too_many_arguments)] // the write's own pieces, each used once; a struct would only rename them
async fn finish_write(
    mut tx: db::Tx,
    state: &AppState,
    client: &ApiClient,
    operation: &Operation,
    operation_status: OperationStatus,
    current: &StepRow,
    step: StepRow,
    kind: StepEventType,
    now: DateTime<Utc>,
) -> Result<StepEventAnswer, AppError> {
    let process_id = operation.process_id.as_str();
    // Heartbeats only show liveness; every real state change is audited.
    if kind != StepEventType::Heartbeat {
        record(&mut tx, step_entry(client, operation, current, &step, kind), None, now).await?;
    }
    let facts = (operation.id, process_id, operation.department.as_str());
    if kind == StepEventType::Succeeded
        && super::operations::complete_if_done(&mut tx, client.actor(), facts, operation_status, None, now).await?
    {
        // The rerun that brought it here succeeded.
        if let Some(request) = db::rerun_requests::open_for_operation(&mut tx, operation.id).await? {
            let moved = super::rerun_requests::advance(&mut tx, &request, RequestEvent::Completed, now).await?;
            if moved.request {
                let entry =
                    AuditEntry::new(client.actor(), AuditAction::RerunRequestSucceeded, "operation", process_id)
                        .department(Some(&operation.department))
                        .before(json!({"rerun_id": request.id, "status": request.status}))
                        .after(json!({"rerun_id": request.id, "status": moved.to}));
                record(&mut tx, entry, None, now).await?;
                let title = "再実行が完了しました";
                super::notifications::notify(
                    &mut tx,
                    state,
                    &request,
                    "completed",
                    title,
                    super::notifications::Audience::Requester,
                    now,
                )
                .await?;
            }
        }
    }
    tx.commit().await?;
    Ok(StepEventAnswer { applied: true, step: step_view(step) })
}

/// The audit event of a step's change.
fn step_entry(
    client: &ApiClient,
    operation: &Operation,
    current: &StepRow,
    step: &StepRow,
    kind: StepEventType,
) -> AuditEntry {
    AuditEntry::new(client.actor(), step_action(kind), "operation", &operation.process_id)
        .department(Some(&operation.department))
        .before(json!({"step": step.name, "state": current.state, "seq": current.last_seq}))
        .after(json!({
            "step": step.name, "state": step.state, "seq": step.last_seq, "result_id": step.result_id,
            "completed_at": step.completed_at, "error_class": step.error_class,
        }))
}

fn step_action(kind: StepEventType) -> AuditAction {
    match kind {
        StepEventType::Started => AuditAction::StepStarted,
        StepEventType::Succeeded => AuditAction::StepSucceeded,
        StepEventType::Failed => AuditAction::StepFailed,
        StepEventType::Unknown => AuditAction::StepUnknown,
        StepEventType::Heartbeat => AuditAction::StepHeartbeat,
    }
}
