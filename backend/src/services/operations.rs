//! Reading operations back (the ingestion API's third route), their views, and their status moves.
//! Registering them is `registration`.
use super::api_clients::ApiClient;
use super::audit::record;
use super::names::Names;
use crate::db::ai_attempts::AttemptRow;
use crate::db::operations::OperationRow;
use crate::db::reconciliations::ReconciliationRow;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::operations::{AiAttemptView, OperationView, ReconciliationView, StepError, StepView};
use domain::ai::{AiStatus, Usage};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::operations::{OperationEvent, OperationStatus};
use domain::reconciliation::{Verdict, superseded_at};
use domain::stall::FailureClass;
use domain::steps::Step;
use serde_json::json;
use words::audit::asked_by_label_in;
use words::evidence::basis_label_in;
use words::i18n::Locale;

/// One operation for an API client of its department; 404 for anything else.
pub async fn get_for_client(state: &AppState, client: &ApiClient, process_id: &str) -> Result<OperationView, AppError> {
    let mut tx = state.db.begin_read().await?;
    let view = view_in(&mut tx, process_id).await?.ok_or(AppError::NotFound)?;
    if !client.may_see(&view.department) {
        return Err(AppError::NotFound);
    }
    Ok(view)
}

/// The steps as a page shows them: who asked for each reconciliation (people by name) and what its verdict rests
/// on, in the reader's language (the API keeps the code and the English sentence).
pub fn in_readers_words(steps: &mut [StepView], locale: Locale, names: &Names) {
    for reconciliation in steps.iter_mut().filter_map(|s| s.reconciliation.as_mut()) {
        reconciliation.asked_by_person = names.person_who_asked(&reconciliation.asked_by).map(str::to_string);
        reconciliation.asked_by = asked_by_label_in(locale, &reconciliation.asked_by);
        reconciliation.evidence.summary = basis_label_in(locale, &reconciliation.evidence.basis());
    }
}

/// The operation with its steps, each with its latest reconciliation and evidence.
pub async fn view_in(tx: &mut db::Conn, process_id: &str) -> Result<Option<OperationView>, sqlx::Error> {
    let Some(row) = db::operations::by_process_id(tx, process_id).await? else { return Ok(None) };
    let steps = db::operations::steps(tx, row.id).await?;
    let mut latest = db::reconciliations::latest_for_operation(tx, row.id).await?;
    let attempts = db::ai_attempts::for_operation(tx, row.id).await?;
    let mut view = operation_view(row, Vec::new());
    for step in steps {
        let reconciliation = latest
            .iter()
            .position(|r| r.step_id == step.id)
            .map(|i| reconciliation_view(latest.swap_remove(i), step.completed_at));
        let ai_attempts = attempts.iter().filter(|a| a.step_id == step.id).map(attempt_view).collect();
        view.steps.push(StepView { reconciliation, ai_attempts, ..step_view(step) });
    }
    Ok(Some(view))
}

fn attempt_view(a: &AttemptRow) -> AiAttemptView {
    AiAttemptView {
        result_id: a.result_id.clone(),
        background_status: a.background_status.as_deref().and_then(AiStatus::parse),
        cancel_requested_at: a.cancel_requested_at,
        cancel_confirmed_at: a.cancel_confirmed_at,
        usage: match (a.input_tokens, a.output_tokens) {
            (None, None) => None,
            (i, o) => Some(Usage { input_tokens: i.unwrap_or(0), output_tokens: o.unwrap_or(0) }),
        },
        cost_micro_yen: a.cost_micro_yen,
        adopted: a.adopted,
        first_seen_at: a.first_seen_at,
    }
}

fn reconciliation_view(row: ReconciliationRow, completed_at: Option<DateTime<Utc>>) -> ReconciliationView {
    ReconciliationView {
        superseded_at: superseded_at(row.checked_at, completed_at),
        verdict: Verdict::parse(&row.verdict).unwrap_or(Verdict::Unknown),
        connector: row.connector,
        checked_at: row.checked_at,
        asked_by: row.asked_by,
        asked_by_person: None,
        evidence: serde_json::from_str(&row.evidence_json).unwrap_or_default(),
    }
}

pub fn operation_view(row: OperationRow, steps: Vec<Step>) -> OperationView {
    OperationView {
        process_id: row.process_id,
        workflow: row.workflow,
        department: row.department,
        business_key: row.business_key,
        status: row.status,
        event: row.event,
        failure_class: row.failure_class.as_deref().and_then(FailureClass::parse),
        possible_duplicate_of: row.possible_duplicate_of,
        created_at: row.created_at,
        updated_at: row.updated_at,
        steps: steps.into_iter().map(step_view).collect(),
        drill_id: row.drill_id,
    }
}

pub fn step_view(row: Step) -> StepView {
    let error = match (row.error_class, row.error_message) {
        (Some(class), message) => Some(StepError { class, message: message.unwrap_or_default() }),
        _ => None,
    };
    StepView {
        position: row.position,
        name: row.name,
        state: row.state,
        idempotency_key: row.idempotency_key,
        result_id: row.result_id,
        attempts: row.attempts,
        last_seq: row.last_seq,
        completed_at: row.completed_at,
        error,
        latest_verdict: row.latest_verdict,
        reconciliation: None,
        ai_attempts: Vec::new(),
    }
}

/// Moves an operation by the domain's table (`OperationEvent::moves`); `false` when it was not in the event's
/// `from` state (someone else was first, or it never was).
pub async fn advance(
    tx: &mut db::Conn,
    id: i64,
    event: OperationEvent,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, AppError> {
    let (from, to) = event.moves();
    Ok(db::operations::set_status_from(tx, id, from, to, now).await?)
}

/// The operation whose steps are all complete becomes `completed`, with its audit event, in the caller's
/// transaction; `true` when it just did.
pub async fn complete_if_done(
    tx: &mut db::Conn,
    actor: domain::audit::Actor,
    operation: (i64, &str, &str),
    request_id: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, AppError> {
    let (id, process_id, department) = operation;
    let completed = OperationStatus::Completed;
    // The status it leaves, as this transaction sees it: what the audit event's `before` says.
    let (before, incomplete) = db::operations::status_and_incomplete_steps(tx, id).await?.ok_or(AppError::NotFound)?;
    if incomplete > 0 || before == completed || !db::operations::set_status_from(tx, id, before, completed, now).await?
    {
        return Ok(false);
    }
    let entry = AuditEntry::new(actor, AuditAction::OperationCompleted, ObjectType::Operation, process_id)
        .department(Some(department))
        .before(json!({"status": before}))
        .after(json!({"status": completed}));
    record(tx, entry, request_id, now).await?;
    Ok(true)
}

/// Keys registered before a key was unique per outside system, held by several steps at one connector: reported
/// at start-up (their webhooks apply to none of them until an operator settles them), never failed on blindly.
pub async fn report_shared_keys(state: &AppState) -> Result<usize, AppError> {
    let rows = {
        let mut tx = state.db.begin_read().await?;
        db::operations::shared_keys(&mut tx).await?
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut shared: Vec<String> = Vec::new();
    for (key, workflow, step) in &rows {
        let Some(connector) = state.config.connector_of(workflow, step) else { continue };
        if seen.contains(&(key.as_str(), connector)) {
            shared.push(format!("{connector}:{key}"));
        } else {
            seen.push((key.as_str(), connector));
        }
    }
    shared.dedup();
    if !shared.is_empty() {
        let first: Vec<&str> = shared.iter().take(20).map(String::as_str).collect();
        tracing::warn!(
            count = shared.len(),
            keys = ?first,
            "idempotency keys held by several steps at one outside system"
        );
    }
    Ok(shared.len())
}
