//! Registering operations and reading them back (the ingestion API's first and third routes).
use super::api_clients::ApiClient;
use super::audit::record;
use super::idempotency::{self, Claim};
use crate::backend::db::ai_attempts::AttemptRow;
use crate::backend::db::operations::{NewOperation, OperationRow};
use crate::backend::db::reconciliations::ReconciliationRow;
use crate::backend::{AppState, db};
use crate::contract::AppError;
use crate::contract::operations::{
    AiAttemptView, OperationView, ReconciliationView, RegisterOperation, StepError, StepView,
};
use crate::domain::ai::Usage;
use crate::domain::audit::AuditEntry;
use crate::domain::audit_action::AuditAction;
use crate::domain::canonical_json::to_canonical_string;
use crate::domain::conflict::Conflict;
use crate::domain::fingerprint::fingerprint;
use crate::domain::ids::DepartmentCode;
use crate::domain::invalid::{Invalid, Rule};
use crate::domain::operations::{IdempotencyKey, OperationEvent, OperationStatus, ProcessId};
use crate::domain::reconciliation::Verdict;
use crate::domain::steps::Step;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the API answers: a status, the body, and whether it is a replay of an earlier answer.
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub replayed: bool,
}

/// Registers an operation under the client's Idempotency-Key (`body` is the request's JSON).
pub async fn register(state: &AppState, client: &ApiClient, key: &str, body: &Value) -> Result<Answer, AppError> {
    register_marked(state, client, key, body, None).await
}

/// A drill's practice operation, registered by the demo integration and marked with its drill.
pub async fn register_in_drill(
    state: &AppState,
    client: &ApiClient,
    key: &str,
    body: &Value,
    drill: &str,
) -> Result<Answer, AppError> {
    register_marked(state, client, key, body, Some(drill)).await
}

async fn register_marked(
    state: &AppState,
    client: &ApiClient,
    key: &str,
    body: &Value,
    drill: Option<&str>,
) -> Result<Answer, AppError> {
    let key = IdempotencyKey::parse(key).map_err(|e| AppError::BadRequest(e.message))?;
    // Registrations without a process ID are refused and counted for the reviews (SPEC "Reviews and indicators").
    if body.get("process_id").and_then(Value::as_str).is_none_or(|p| p.trim().is_empty()) {
        refused(state, client, body, "missing_process_id").await?;
        return Err(AppError::invalid(
            "process_id",
            Invalid::new(Rule::Required, "every operation needs its process ID"),
        ));
    }
    let request = RegisterOperation::deserialize(body)
        .map_err(|e| AppError::invalid("body", Invalid::new(Rule::Malformed, e.to_string())))?;
    let claim = idempotency::claim(state, client.id, key.as_str(), &fingerprint(body)).await;
    if let Err(AppError::Conflict { problem, .. }) = &claim
        && *problem == Conflict::IdempotencyKeyMismatch
    {
        refused(state, client, body, "idempotency_key_mismatch").await?;
    }
    match claim? {
        Claim::Replay { status, body } => Ok(Answer { status, body, replayed: true }),
        Claim::Proceed => match insert(state, client, key.as_str(), request, drill).await {
            Ok(answer) => Ok(answer),
            Err(refused) => {
                idempotency::release(state, client.id, key.as_str()).await?;
                Err(refused)
            }
        },
    }
}

/// Counts a refused registration under the department it named (if the client may see it), else the client's
/// only department, else none (then only the all-departments review counts it).
async fn refused(state: &AppState, client: &ApiClient, body: &Value, kind: &str) -> Result<(), AppError> {
    let named = body.get("department").and_then(Value::as_str).filter(|d| client.may_see(d));
    let department = named.or(match client.departments.as_slice() {
        [only] => Some(only.as_str()),
        _ => None,
    });
    let mut tx = state.db.begin_write().await?;
    db::reviews::record_refusal(&mut tx, client.id, department, kind, state.clock.now()).await?;
    tx.commit().await?;
    Ok(())
}

async fn insert(
    state: &AppState,
    client: &ApiClient,
    key: &str,
    request: RegisterOperation,
    drill: Option<&str>,
) -> Result<Answer, AppError> {
    let process_id = ProcessId::parse(&request.process_id).map_err(|m| AppError::invalid("process_id", m))?;
    let department = DepartmentCode::parse(&request.department).map_err(|m| AppError::invalid("department", m))?;
    // Another department's data does not exist for this client (QUALITY 10).
    if !client.may_see(department.as_str()) {
        return Err(AppError::NotFound);
    }
    let workflow = state.config.workflow(&request.workflow).ok_or_else(|| {
        AppError::invalid("workflow", Invalid::new(Rule::Unknown, format!("unknown workflow '{}'", request.workflow)))
    })?;
    if workflow.department != department.as_str() {
        let message = format!("workflow '{}' belongs to department '{}'", workflow.name, workflow.department);
        return Err(AppError::invalid("department", Invalid::new(Rule::Malformed, message)));
    }
    let expected: Vec<&str> = workflow.steps.iter().map(|s| s.name.as_str()).collect();
    let given: Vec<&str> = request.steps.iter().map(|s| s.name.as_str()).collect();
    if expected != given {
        let message = format!("steps must be exactly {expected:?} in this order (got {given:?})");
        return Err(AppError::invalid("steps", Invalid::new(Rule::Malformed, message)));
    }
    // Content is what connectors compare field by field: an object, as the API document says, or nothing.
    if request.content.as_ref().is_some_and(|c| !c.is_object()) {
        return Err(AppError::invalid("content", Invalid::new(Rule::Malformed, "content must be a JSON object")));
    }
    if request.steps.iter().any(|s| s.content.as_ref().is_some_and(|c| !c.is_object())) {
        return Err(AppError::invalid(
            "steps",
            Invalid::new(Rule::Malformed, "a step's content must be a JSON object"),
        ));
    }
    let mut keys: Vec<IdempotencyKey> = Vec::new();
    for step in &request.steps {
        let step_key = IdempotencyKey::parse(&step.idempotency_key).map_err(|m| AppError::invalid("steps", m))?;
        if keys.contains(&step_key) {
            return Err(AppError::invalid(
                "steps",
                Invalid::new(Rule::Malformed, format!("idempotency key '{step_key}' is used by two steps")),
            ));
        }
        keys.push(step_key);
    }
    let business_key = request.business_key.as_deref().map(str::trim).filter(|k| !k.is_empty());

    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if let Some(existing) = db::operations::by_process_id(&mut tx, process_id.as_str()).await? {
        // Another department's operation does not exist for this client: the answer of an unknown department.
        if !client.may_see(&existing.department) {
            tracing::warn!(client = %client.name, %process_id, "registration of a process ID another department holds");
            return Err(AppError::NotFound);
        }
        return Err(AppError::conflict(
            Conflict::ProcessIdExists,
            format!("process_id '{process_id}' is already registered under another Idempotency-Key"),
        ));
    }
    let duplicate_of = match business_key {
        Some(k) => {
            db::operations::other_with_business_key(&mut tx, department.as_str(), k, process_id.as_str()).await?
        }
        None => None,
    };
    let content_json = request.content.as_ref().map(to_canonical_string);
    let content_fingerprint = request.content.as_ref().map(fingerprint);
    let new = NewOperation {
        process_id: process_id.as_str(),
        workflow: &workflow.name,
        workflow_version: &workflow.version,
        department: department.as_str(),
        business_key,
        content_json: content_json.as_deref(),
        content_fingerprint: content_fingerprint.as_deref(),
        possible_duplicate_of: duplicate_of.as_deref(),
        registered_by: client.id,
        drill_id: drill,
    };
    for (step, step_key) in request.steps.iter().zip(&keys) {
        let Some(connector) = state.config.connector_of(&workflow.name, &step.name) else { continue };
        let holders = db::operations::holders_of_key(&mut tx, step_key.as_str()).await?;
        if state.config.key_taken_at(connector, holders.iter().map(|(w, s)| (w.as_str(), s.as_str()))) {
            return Err(AppError::conflict(
                Conflict::IdempotencyKeyTaken,
                format!(
                    "idempotency key '{step_key}' is already used by another step at the outside system '{connector}'"
                ),
            ));
        }
    }
    let operation_id = db::operations::insert(&mut tx, &new, now).await?;
    for (position, (step, step_key)) in request.steps.iter().zip(&keys).enumerate() {
        let content = step.content.as_ref().map(|c| (to_canonical_string(c), fingerprint(c)));
        let content = content.as_ref().map(|(json, print)| (json.as_str(), print.as_str()));
        db::operations::insert_step(
            &mut tx,
            operation_id,
            position as i64 + 1,
            &step.name,
            step_key.as_str(),
            content,
            now,
        )
        .await?;
    }
    let mut after = json!({
        "workflow": workflow.name,
        "business_key": business_key,
        "content_fingerprint": content_fingerprint,
        "steps": request.steps.iter().zip(&keys).map(|(s, k)| json!({"name": s.name, "idempotency_key": k})).collect::<Vec<_>>(),
        "possible_duplicate_of": duplicate_of,
    });
    if let Some(drill) = drill {
        after["drill_id"] = json!(drill); // a practice operation, marked in the trail and its exports too
    }
    let entry = AuditEntry::new(client.actor(), AuditAction::OperationRegistered, "operation", process_id.as_str())
        .department(Some(department.as_str()))
        .after(after);
    record(&mut tx, entry, None, now).await?;
    let view = view_in(&mut tx, process_id.as_str()).await?.ok_or(AppError::Internal)?;
    let body = serde_json::to_string(&view).map_err(|e| AppError::internal("serialize", e))?;
    idempotency::complete(&mut tx, client.id, key, 201, &body).await?;
    tx.commit().await?;
    if let Some(other) = duplicate_of {
        tracing::warn!(process_id = %process_id, other = %other, "possible business-level duplicate");
    }
    Ok(Answer { status: 201, body, replayed: false })
}

/// One operation for an API client of its department; 404 for anything else.
pub async fn get_for_client(state: &AppState, client: &ApiClient, process_id: &str) -> Result<OperationView, AppError> {
    let mut tx = state.db.begin_read().await?;
    let view = view_in(&mut tx, process_id).await?.ok_or(AppError::NotFound)?;
    if !client.may_see(&view.department) {
        return Err(AppError::NotFound);
    }
    Ok(view)
}

/// The operation with its steps, each with its latest reconciliation and evidence.
pub async fn view_in(tx: &mut db::Conn, process_id: &str) -> Result<Option<OperationView>, sqlx::Error> {
    let Some(row) = db::operations::by_process_id(tx, process_id).await? else { return Ok(None) };
    let steps = db::operations::steps(tx, row.id).await?;
    let mut latest = db::reconciliations::latest_for_operation(tx, row.id).await?;
    let attempts = db::ai_attempts::for_operation(tx, row.id).await?;
    let mut view = operation_view(row, Vec::new());
    for step in steps {
        let reconciliation =
            latest.iter().position(|r| r.step_id == step.id).map(|i| reconciliation_view(latest.swap_remove(i)));
        let ai_attempts = attempts.iter().filter(|a| a.step_id == step.id).map(attempt_view).collect();
        view.steps.push(StepView { reconciliation, ai_attempts, ..step_view(step) });
    }
    Ok(Some(view))
}

fn attempt_view(a: &AttemptRow) -> AiAttemptView {
    AiAttemptView {
        result_id: a.result_id.clone(),
        background_status: a.background_status.clone(),
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

fn reconciliation_view(row: ReconciliationRow) -> ReconciliationView {
    ReconciliationView {
        verdict: Verdict::parse(&row.verdict).unwrap_or(Verdict::Unknown),
        connector: row.connector,
        checked_at: row.checked_at,
        asked_by: row.asked_by,
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
        failure_class: row.failure_class,
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
    actor: crate::domain::audit::Actor,
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
    let entry = AuditEntry::new(actor, AuditAction::OperationCompleted, "operation", process_id)
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
        tracing::warn!(count = shared.len(), keys = ?first, "idempotency keys held by several steps at one outside system");
    }
    Ok(shared.len())
}
