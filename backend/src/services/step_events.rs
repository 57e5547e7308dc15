//! Step events from the integration. What an event does to a step is the domain's (`Step::after`); this
//! service chooses where the step is read from and how the change is written.
//!
//! The step comes from what this instance last wrote of it (`known_steps`, no read) when the event applies to
//! it, otherwise it is read outside the write lock. The decision is taken once on it, then written by one of
//! two paths: the fast path writes the step and its audit event grouped with other events waiting for the
//! writer (one round trip on SQLite, one transaction on PostgreSQL); the fallback is a transaction of its own,
//! for events that write more (an AI attempt, a heartbeat's liveness, the operation's completion) and for a
//! step that changed since it was seen — only then is the event decided again, under the lock. This keeps the
//! serialised part (both engines write one transaction at a time) to the writes themselves in the common case.
use super::api_clients::ApiClient;
use super::audit::record;
use super::operations::step_view;
use crate::db::operations::StepInOperation;
use crate::reconciliation::ConfiguredConnector;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::operations::{StepEvent, StepEventAnswer};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::invalid::{Field, Invalid, Rule};
use domain::operations::StepEventType;
use domain::steps::{Reported, Step};
use serde_json::json;

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
    check(&event)?;
    let now = state.clock.now();
    let reported = reported(&event);
    let known = known_steps(state).get(process_id, step_name).filter(|k| client.may_see(&k.department));
    let known = known.and_then(|k| Some((k.step.after(&reported, now)?, k)));
    let (operation, seen, next) = match known {
        Some((next, k)) => {
            let operation = Operation {
                id: k.step.operation_id,
                process_id: process_id.into(),
                workflow: k.workflow,
                department: k.department,
            };
            (operation, k.step, next)
        }
        // Not known, or known but the event does not apply to it: the step as it is now.
        None => {
            let (operation, seen) = read(state, client, process_id, step_name).await?;
            let Some(next) = seen.after(&reported, now) else {
                return Ok(StepEventAnswer { applied: false, step: step_view(seen) });
            };
            (operation, seen, next)
        }
    };
    if let Some(answer) = write_at_once(state, client, &operation, &seen, &next, &event, now).await? {
        return Ok(answer);
    }
    // What this instance knew of the step is not what it will be after the fallback.
    known_steps(state).forget(process_id, step_name);
    write_in_transaction(state, client, &operation, seen, next, &event, &reported, now).await
}

/// Refuses what no step could take.
/// The steps this instance changed last (a guess that saves a read; see `known_steps`).
fn known_steps(state: &AppState) -> std::sync::Arc<super::known_steps::KnownSteps> {
    state.kept.get_or_init(super::known_steps::KnownSteps::default)
}

fn check(event: &StepEvent) -> Result<(), AppError> {
    if event.seq < 0 {
        return Err(AppError::invalid(Field::Seq, Invalid::new(Rule::OutOfRange, "seq must be zero or more")));
    }
    if event.usage.is_some_and(|u| u.input_tokens < 0 || u.output_tokens < 0) {
        return Err(AppError::invalid(
            Field::Usage,
            Invalid::new(Rule::OutOfRange, "token counts must be zero or more"),
        ));
    }
    if event.kind == StepEventType::Failed && event.error.is_none() {
        return Err(AppError::invalid(
            Field::Error,
            Invalid::new(Rule::Required, "a failed event needs an error with class and message"),
        ));
    }
    Ok(())
}

/// The event as the domain reads it.
fn reported(event: &StepEvent) -> Reported<'_> {
    Reported {
        kind: event.kind,
        seq: event.seq,
        at: event.at,
        result_id: event.result_id.as_deref(),
        error: event.error.as_ref().map(|e| (e.class.as_str(), e.message.as_str())),
    }
}

/// The step and its operation, read without a transaction or the writer: the compare-and-set of either path
/// catches any change since.
async fn read(
    state: &AppState,
    client: &ApiClient,
    process_id: &str,
    step_name: &str,
) -> Result<(Operation, Step), AppError> {
    let found = db::operations::step_in_operation(&mut state.db.connection().await?, process_id, step_name).await?;
    let Some(StepInOperation { step, process_id, workflow, department }) = found else {
        return Err(no_such_step(state, client, (process_id, step_name)).await?);
    };
    if !client.may_see(&department) {
        return Err(AppError::NotFound);
    }
    Ok((Operation { id: step.operation_id, process_id, workflow, department }, step))
}

/// Why an event names no step: the operation is not known (or not in the client's departments), or it has no step
/// of that name, which the answer names with the steps it has (a typo would otherwise look like a missing
/// operation).
async fn no_such_step(
    state: &AppState,
    client: &ApiClient,
    (process_id, step): (&str, &str),
) -> Result<AppError, AppError> {
    let mut conn = state.db.connection().await?;
    let Some(operation) = db::operations::by_process_id(&mut conn, process_id).await? else {
        return Ok(AppError::NotFound);
    };
    if !client.may_see(&operation.department) {
        return Ok(AppError::NotFound);
    }
    let names: Vec<String> =
        db::operations::steps(&mut conn, operation.id).await?.into_iter().map(|s| s.name).collect();
    let problem = format!("operation {process_id} has no step '{step}': its steps are {}", names.join(", "));
    Ok(AppError::invalid(Field::Step, Invalid::new(Rule::Unknown, problem)))
}

/// The fast path: the step's change and its audit event in one round trip holding the writer, shared with the
/// other events waiting for it (see `Db::write_at_once`). `None` when the event has more to write (an AI
/// attempt, a heartbeat's liveness), or when the write is refused (a success that would complete the
/// operation, a step changed since `seen`, any doubt).
async fn write_at_once(
    state: &AppState,
    client: &ApiClient,
    operation: &Operation,
    seen: &Step,
    next: &Step,
    event: &StepEvent,
    now: DateTime<Utc>,
) -> Result<Option<StepEventAnswer>, AppError> {
    if event.kind == StepEventType::Heartbeat || ai_connector(state, operation, next, event).is_some() {
        return Ok(None);
    }
    let entry = step_entry(client, operation, seen, next, event.kind);
    if !state.db.write_at_once(db::Change { write: db::Write::Step(next.clone()), entry, now }).await? {
        return Ok(None);
    }
    known_steps(state).written(&operation.process_id, next.clone(), &operation.workflow, &operation.department);
    Ok(Some(StepEventAnswer { applied: true, step: step_view(next.clone()) }))
}

/// The fallback: a write transaction of its own. The step is written if unchanged since `seen`; otherwise the
/// event is decided again on the row as it is now, under the lock.
#[allow(clippy::too_many_arguments)] // the write's own pieces, each used once; a struct would only rename them
async fn write_in_transaction(
    state: &AppState,
    client: &ApiClient,
    operation: &Operation,
    seen: Step,
    next: Step,
    event: &StepEvent,
    reported: &Reported<'_>,
    now: DateTime<Utc>,
) -> Result<StepEventAnswer, AppError> {
    let mut tx = state.db.begin_write().await?;
    let (current, next) = if db::operations::update_step_if_unchanged(&mut tx, &next).await? {
        (seen, next)
    } else {
        let current = db::operations::step_for_update(&mut tx, seen.id).await?;
        let Some(next) = current.after(reported, now) else {
            return Ok(StepEventAnswer { applied: false, step: step_view(current) });
        };
        if !db::operations::update_step_if_unchanged(&mut tx, &next).await? {
            return Err(AppError::internal("step event", "locked step changed"));
        }
        (current, next)
    };
    // AI steps keep each generation as an attempt, in the same transaction.
    if let Some(ai) = ai_connector(state, operation, &next, event) {
        super::ai_attempts::from_event(&mut tx, ai, &next, event, now).await?;
    }
    finish_write(tx, state, client, operation, &current, next, event.kind, now).await
}

/// The AI connector of the step, when the event concerns one of its generations.
fn ai_connector<'a>(
    state: &'a AppState,
    operation: &Operation,
    next: &Step,
    event: &StepEvent,
) -> Option<&'a ConfiguredConnector> {
    let ai = state.connectors.of_step(&state.config, &operation.workflow, &next.name).filter(|c| c.ai);
    ai.filter(|_| super::ai_attempts::concerns(next, event))
}

/// After the step's row is written: its audit event and, after the last success, the operation's completion,
/// in the same transaction.
#[allow(clippy::too_many_arguments)] // the write's own pieces, each used once; a struct would only rename them
async fn finish_write(
    mut tx: db::Conn,
    state: &AppState,
    client: &ApiClient,
    operation: &Operation,
    current: &Step,
    step: Step,
    kind: StepEventType,
    now: DateTime<Utc>,
) -> Result<StepEventAnswer, AppError> {
    let process_id = operation.process_id.as_str();
    // Heartbeats only show liveness; every real state change is audited.
    if kind != StepEventType::Heartbeat {
        record(&mut tx, step_entry(client, operation, current, &step, kind), None, now).await?;
    }
    if kind == StepEventType::Succeeded {
        let facts = (operation.id, process_id, operation.department.as_str());
        super::rerun_requests::completed_by_rerun(&mut tx, state, client.actor(), facts, now).await?;
    }
    tx.commit().await?;
    Ok(StepEventAnswer { applied: true, step: step_view(step) })
}

/// The audit event of a step's change.
fn step_entry(
    client: &ApiClient,
    operation: &Operation,
    current: &Step,
    step: &Step,
    kind: StepEventType,
) -> AuditEntry {
    AuditEntry::new(client.actor(), step_action(kind), ObjectType::Operation, &operation.process_id)
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
