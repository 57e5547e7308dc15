//! AI generation attempts, learned from look-ups, webhooks and step events, in the transaction of whatever
//! told us; and the adoption of one generation by a person.
use super::Caller;
use super::audit::record;
use crate::db::ai_attempts::Seen;
use crate::reconciliation::ConfiguredConnector;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::operations::StepEvent;
use domain::ai::{AiStatus, cost_micro_yen};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::invalid::{Field, Invalid, Rule};
use domain::operations::StepEventType;
use domain::reconciliation::Record;
use domain::rights::Act;
use domain::steps::Step;
use serde_json::json;

/// Keeps every generation a provider showed for the step (an AI connector only).
pub async fn from_records(
    tx: &mut db::Conn,
    connector: &ConfiguredConnector,
    step_id: i64,
    records: &[Record],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if !connector.ai {
        return Ok(());
    }
    for r in records {
        let Some(result_id) = r.external_id.as_deref() else { continue };
        let seen = Seen {
            step_id,
            result_id,
            status: r.status_text.as_deref(),
            input_tokens: r.usage.map(|u| u.input_tokens),
            output_tokens: r.usage.map(|u| u.output_tokens),
            cost_micro_yen: r.usage.zip(connector.prices).map(|(u, p)| cost_micro_yen(u, p)),
            cancel_confirmed_at: (r.status_text.as_deref().and_then(AiStatus::parse) == Some(AiStatus::Cancelled))
                .then_some(now),
        };
        db::ai_attempts::upsert(tx, &seen, now).await?;
    }
    Ok(())
}

/// Whether a step event tells anything about a generation (a result ID to attach it to, or a cancel request).
pub fn concerns(step: &Step, event: &StepEvent) -> bool {
    event.result_id.is_some() || step.result_id.is_some() || is_cancel_request(event)
}

fn is_cancel_request(event: &StepEvent) -> bool {
    event.error.as_ref().is_some_and(|e| e.class == domain::stall::ErrorClass::CancelRequested)
}

/// What a step event says about the step's generation: started, done, usage, or a cancel requested.
pub async fn from_event(
    tx: &mut db::Conn,
    connector: &ConfiguredConnector,
    step: &Step,
    event: &StepEvent,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if is_cancel_request(event) {
        db::ai_attempts::cancel_requested(tx, step.id, now).await?;
    }
    let Some(result_id) = event.result_id.as_deref().or(step.result_id.as_deref()) else { return Ok(()) };
    let status = match event.kind {
        StepEventType::Started | StepEventType::Heartbeat => Some("in_progress"),
        StepEventType::Succeeded => Some("completed"),
        StepEventType::Failed | StepEventType::Unknown => None,
    };
    let record = Record {
        external_id: Some(result_id.to_string()),
        at: None,
        status_text: status.map(str::to_string),
        status: domain::reconciliation::RecordStatus::Unclear,
        fields: Default::default(),
        usage: event.usage,
    };
    from_records(tx, connector, step.id, &[record], now).await
}

/// Staff or a manager of the department adopt one generation: only it counts as the step's result.
pub async fn adopt(
    state: &AppState,
    caller: &Caller,
    process_id: &str,
    step_name: &str,
    result_id: &str,
) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let operation = db::operations::by_process_id(&mut tx, process_id).await?.ok_or(AppError::NotFound)?;
    caller.check_act(Act::AdoptResult, &operation.department)?;
    let step = db::operations::step_by_name(&mut tx, operation.id, step_name).await?.ok_or(AppError::NotFound)?;
    if !db::ai_attempts::adopt(&mut tx, step.id, result_id).await? {
        return Err(AppError::invalid(
            Field::ResultId,
            Invalid::new(Rule::Unknown, "no completed generation with this result ID for this step"),
        ));
    }
    let entry = AuditEntry::new(caller.actor(), AuditAction::AiAttemptAdopted, ObjectType::Operation, process_id)
        .department(Some(&operation.department))
        .after(json!({"step": step.name, "result_id": result_id}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}
