//! Registering an operation under the client's Idempotency-Key (the ingestion API's first route), in one write
//! transaction: the key's claim, the operation and its steps, the business-key check, the audit event and the
//! stored answer commit together, so that a replay or a twin sees all of it or nothing. A registration is first
//! written as if it were new and unique (as nearly all are) with the other writes waiting for the writer
//! (`Db::write_at_once`: one round trip on SQLite, one transaction on PostgreSQL), which checks that it is;
//! anything else takes the ordinary path, which decides under the lock.
use super::api_clients::ApiClient;
use super::audit::record;
use super::idempotency::{self, Claim};
use super::operations::operation_view;
use crate::db::registrations::{NewStep, Registration};
use crate::reconciliation::FieldsRead;
use crate::{AppState, db};
use chrono::SubsecRound;
use contract::AppError;
use contract::operations::{RegisterOperation, Registered, RegistrationWarning, WarningKind};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::canonical_json::to_canonical_string;
use domain::configuration::WorkflowConfig;
use domain::conflict::Conflict;
use domain::fingerprint::fingerprint;
use domain::ids::DepartmentCode;
use domain::invalid::{Field, Invalid, Rule};
use domain::operations::{IdempotencyKey, OperationStatus, ProcessId};
use domain::steps::Step;
use domain::tallies::RegistrationRefusal;
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
        refused(state, client, body, RegistrationRefusal::MissingProcessId).await?;
        return Err(AppError::invalid(
            Field::ProcessId,
            Invalid::new(Rule::Required, "every operation needs its process ID"),
        ));
    }
    let request = RegisterOperation::deserialize(body)
        .map_err(|e| AppError::invalid(Field::Body, Invalid::new(Rule::Malformed, e.to_string())))?;
    // What needs no database is decided before the writer's turn; a refusal is told only once the key says
    // this request is new (a replay or a mismatch answers first).
    let at = state.clock.now().trunc_subsecs(6); // as PostgreSQL keeps it, so the stored answer reads back equal
    let fingerprint = fingerprint(body);
    let new = checked(state, client, key.as_str(), fingerprint.clone(), request, drill, at);
    if let Ok(new) = &new
        && let Some(answer) = at_once(state, new).await?
    {
        return Ok(answer);
    }
    let deadline = tokio::time::Instant::now() + idempotency::WAIT_FOR_ANSWER;
    loop {
        let mut tx = state.db.begin_write().await?;
        let claim = idempotency::claim(&mut tx, state, client.id, key.as_str(), &fingerprint).await;
        match claim {
            Ok(Claim::Proceed) => {
                // Refused: the transaction is dropped, and the claim with it, so the sender may correct and retry.
                let mut new = new?;
                let answer = insert(&mut tx, state, client, &mut new).await?;
                tx.commit().await?;
                return Ok(answer);
            }
            Ok(Claim::Replay { status, body }) => return Ok(Answer { status, body, replayed: true }),
            Ok(Claim::InFlight) => drop(tx),
            Err(refusal) => {
                drop(tx);
                if let AppError::Conflict { problem: Conflict::IdempotencyKeyMismatch, .. } = &refusal {
                    refused(state, client, body, RegistrationRefusal::IdempotencyKeyMismatch).await?;
                }
                return Err(refusal);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(idempotency::in_flight());
        }
        tokio::time::sleep(idempotency::POLL).await;
    }
}

/// A registration as checked without the database: its rows, its answer and its audit event, as they will be
/// written unless the database says otherwise (the process ID or a step key taken, a business-key duplicate).
#[derive(Clone)]
struct New {
    registration: Registration,
    entry: AuditEntry,
    warnings: Vec<RegistrationWarning>,
}

fn checked(
    state: &AppState,
    client: &ApiClient,
    key: &str,
    fingerprint: String,
    request: RegisterOperation,
    drill: Option<&str>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<New, AppError> {
    let process_id = ProcessId::parse(&request.process_id).map_err(|m| AppError::invalid(Field::ProcessId, m))?;
    let department = DepartmentCode::parse(&request.department).map_err(|m| AppError::invalid(Field::Department, m))?;
    // Another department's data does not exist for this client (QUALITY 10).
    if !client.may_see(department.as_str()) {
        return Err(AppError::NotFound);
    }
    let workflow = state.config.workflow(&request.workflow).ok_or_else(|| {
        AppError::invalid(
            Field::Workflow,
            Invalid::new(Rule::Unknown, format!("unknown workflow '{}'", request.workflow)),
        )
    })?;
    if workflow.department != department.as_str() {
        let message = format!("workflow '{}' belongs to department '{}'", workflow.name, workflow.department);
        return Err(AppError::invalid(Field::Department, Invalid::new(Rule::Malformed, message)));
    }
    // Content is what connectors compare field by field: an object, as the API document says, or nothing.
    if request.content.as_ref().is_some_and(|c| !c.is_object()) {
        return Err(AppError::invalid(Field::Content, Invalid::new(Rule::Malformed, "content must be a JSON object")));
    }
    let steps = new_steps(workflow, &request)?;
    let registration = Registration {
        client: client.id,
        key: key.to_string(),
        fingerprint,
        expires_at: idempotency::expires_at(state, at),
        answer: String::new(),
        process_id: process_id.as_str().to_string(),
        workflow: workflow.name.clone(),
        workflow_version: workflow.version.clone(),
        department: department.as_str().to_string(),
        business_key: request.business_key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_string),
        content_json: request.content.as_ref().map(to_canonical_string),
        content_fingerprint: request.content.as_ref().map(domain::fingerprint::fingerprint),
        possible_duplicate_of: None,
        drill_id: drill.map(str::to_string),
        steps,
        at,
    };
    let entry =
        AuditEntry::new(client.actor(), AuditAction::OperationRegistered, ObjectType::Operation, process_id.as_str())
            .department(Some(department.as_str()));
    let warnings = content_warnings(state, workflow, &request);
    let mut new = New { registration, entry, warnings };
    new.settle(None)?;
    Ok(new)
}

/// The request's steps, checked against its workflow's: the same names in the same order, content an object,
/// each idempotency key valid and used once.
fn new_steps(workflow: &WorkflowConfig, request: &RegisterOperation) -> Result<Vec<NewStep>, AppError> {
    let expected: Vec<&str> = workflow.steps.iter().map(|s| s.name.as_str()).collect();
    let given: Vec<&str> = request.steps.iter().map(|s| s.name.as_str()).collect();
    if expected != given {
        let message = format!("steps must be exactly {expected:?} in this order (got {given:?})");
        return Err(AppError::invalid(Field::Steps, Invalid::new(Rule::Malformed, message)));
    }
    if request.steps.iter().any(|s| s.content.as_ref().is_some_and(|c| !c.is_object())) {
        return Err(AppError::invalid(
            Field::Steps,
            Invalid::new(Rule::Malformed, "a step's content must be a JSON object"),
        ));
    }
    let mut steps: Vec<NewStep> = Vec::new();
    for step in &request.steps {
        let step_key = IdempotencyKey::parse(&step.idempotency_key).map_err(|m| AppError::invalid(Field::Steps, m))?;
        if steps.iter().any(|s| s.idempotency_key == step_key.as_str()) {
            return Err(AppError::invalid(
                Field::Steps,
                Invalid::new(Rule::Malformed, format!("idempotency key '{step_key}' is used by two steps")),
            ));
        }
        steps.push(NewStep {
            name: step.name.clone(),
            idempotency_key: step_key.as_str().to_string(),
            content_json: step.content.as_ref().map(to_canonical_string),
            content_fingerprint: step.content.as_ref().map(domain::fingerprint::fingerprint),
        });
    }
    Ok(steps)
}

/// A side-effecting step checked at an outside system whose content gives reconciliation nothing to compare: no
/// content, or none of the fields the connector reads. Its verdict could then only ever be "executed, content not
/// compared", however much the record differs. Accepted, and said.
fn content_warnings(
    state: &AppState,
    workflow: &WorkflowConfig,
    request: &RegisterOperation,
) -> Vec<RegistrationWarning> {
    let steps = workflow.steps.iter().zip(&request.steps).filter(|(definition, _)| definition.side_effect);
    steps
        .filter_map(|(definition, given)| {
            let connector = state.connectors.get(definition.connector.as_deref()?)?;
            let content = given.content.as_ref().and_then(|c| c.as_object()).filter(|c| !c.is_empty());
            let (kind, message) =
                not_compared(&definition.name, &connector.name, &connector.connector.fields_read(), content)?;
            Some(RegistrationWarning { kind, step: definition.name.clone(), message })
        })
        .collect()
}

/// Why nothing of a step would be compared, and what to do; `None` when something would.
fn not_compared(
    step: &str,
    connector: &str,
    fields: &FieldsRead,
    content: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Option<(WarningKind, String)> {
    Some(match (content, fields) {
        (_, FieldsRead::Nothing) => (
            WarningKind::ConnectorReadsNoField,
            format!(
                "step '{step}': its connector '{connector}' reads no field of the outside system's records, so \
                 nothing of what ran is compared with the step; give the connector a `fields` mapping"
            ),
        ),
        (None, _) => (
            WarningKind::StepContentMissing,
            format!(
                "step '{step}' has no content: its outside system's record will not be compared with it, so a record \
                 that differs from what the step meant (another amount, another recipient) would not be seen; send \
                 the fields the step sets (e.g. {{\"amount\": 4000}}) as the step's `content`"
            ),
        ),
        (Some(content), FieldsRead::These(names)) if !fields.meets(content) => (
            WarningKind::StepContentNotRead,
            format!(
                "step '{step}': none of its content's fields ({}) is a field the connector '{connector}' reads ({}), \
                 so nothing is compared; name the content's fields as the connector does",
                content.keys().cloned().collect::<Vec<_>>().join(", "),
                names.join(", ")
            ),
        ),
        _ => return None,
    })
}

impl New {
    /// Fills in what depends on the business-key duplicate: the row's mark, the audit event's after-state and
    /// the answer (the view that a read of the new operation gives).
    fn settle(&mut self, duplicate_of: Option<String>) -> Result<(), AppError> {
        let r = &mut self.registration;
        r.possible_duplicate_of = duplicate_of;
        let mut after = json!({
            "workflow": r.workflow,
            "business_key": r.business_key,
            "content_fingerprint": r.content_fingerprint,
            "steps": r
                .steps
                .iter()
                .map(|s| json!({"name": s.name, "idempotency_key": s.idempotency_key}))
                .collect::<Vec<_>>(),
            "possible_duplicate_of": r.possible_duplicate_of,
        });
        if let Some(drill) = &r.drill_id {
            after["drill_id"] = json!(drill); // a practice operation, marked in the trail and its exports too
        }
        self.entry.after = Some(after);
        let answer = Registered { operation: view(r), warnings: self.warnings.clone() };
        r.answer = serde_json::to_string(&answer).map_err(|e| AppError::internal("serialize", e))?;
        Ok(())
    }
}

/// The new operation as a read of it answers: running, every step not started.
fn view(r: &Registration) -> contract::operations::OperationView {
    let row = db::operations::OperationRow {
        id: 0,
        process_id: r.process_id.clone(),
        workflow: r.workflow.clone(),
        workflow_version: r.workflow_version.clone(),
        department: r.department.clone(),
        business_key: r.business_key.clone(),
        content_json: r.content_json.clone(),
        content_fingerprint: r.content_fingerprint.clone(),
        status: OperationStatus::Running,
        event: None,
        failure_class: None,
        possible_duplicate_of: r.possible_duplicate_of.clone(),
        created_at: r.at,
        updated_at: r.at,
        drill_id: r.drill_id.clone(),
    };
    let steps = r.steps.iter().enumerate().map(|(i, s)| {
        let content = (s.content_json.clone(), s.content_fingerprint.clone());
        Step::registered(i as i64 + 1, s.name.clone(), s.idempotency_key.clone(), content, r.at)
    });
    operation_view(row, steps.collect())
}

/// The grouped write, decided on what is usual: the key, the process ID and the step keys unused, and no other
/// operation with the business key. The write checks each (SQLite: the unique keys and the audit hash's
/// condition; PostgreSQL: a read under the audit head's lock); `None` sends anything else the ordinary way,
/// which decides under the lock. No read beforehand: it would cost every registration a round trip for what is
/// rare.
async fn at_once(state: &AppState, new: &New) -> Result<Option<Answer>, AppError> {
    let answer = Answer { status: 201, body: new.registration.answer.clone(), replayed: false };
    let (write, now) = (db::Write::Registration(new.registration.clone()), new.registration.at);
    let change = db::Change { write, entry: new.entry.clone(), now };
    Ok(state.db.write_at_once(change).await?.then_some(answer))
}

/// The rows, the audit event and the stored answer in the caller's transaction, which holds the key's claim.
async fn insert(tx: &mut db::Conn, state: &AppState, client: &ApiClient, new: &mut New) -> Result<Answer, AppError> {
    let r = &new.registration;
    if let Some(existing) = db::operations::by_process_id(tx, &r.process_id).await? {
        // Another department's operation does not exist for this client: the answer of an unknown department.
        if !client.may_see(&existing.department) {
            tracing::warn!(
                client = %client.name,
                process_id = %r.process_id,
                "registration of a process ID another department holds"
            );
            return Err(AppError::NotFound);
        }
        return Err(AppError::conflict(
            Conflict::ProcessIdExists,
            format!("process_id '{}' is already registered under another Idempotency-Key", r.process_id),
        ));
    }
    for step in &r.steps {
        let Some(connector) = state.config.connector_of(&r.workflow, &step.name) else { continue };
        let holders = db::operations::holders_of_key(tx, &step.idempotency_key).await?;
        if state.config.key_taken_at(connector, holders.iter().map(|(w, s)| (w.as_str(), s.as_str()))) {
            return Err(AppError::conflict(
                Conflict::IdempotencyKeyTaken,
                format!(
                    "idempotency key '{}' is already used by another step at the outside system '{connector}'",
                    step.idempotency_key
                ),
            ));
        }
    }
    let duplicate_of = match &r.business_key {
        Some(k) => db::operations::other_with_business_key(tx, &r.department, k, &r.process_id).await?,
        None => None,
    };
    new.settle(duplicate_of)?;
    let r = &new.registration;
    if let Some(other) = &r.possible_duplicate_of {
        tracing::warn!(process_id = %r.process_id, %other, "possible business-level duplicate");
    }
    db::registrations::insert(tx, r).await?;
    record(tx, new.entry.clone(), None, r.at).await?;
    idempotency::complete(tx, client.id, &r.key, 201, &r.answer).await?;
    Ok(Answer { status: 201, body: r.answer.clone(), replayed: false })
}

/// Counts a refused registration under the department it named (if the client may see it), else the client's
/// only department, else none (then only the all-departments review counts it).
async fn refused(
    state: &AppState,
    client: &ApiClient,
    body: &Value,
    refusal: RegistrationRefusal,
) -> Result<(), AppError> {
    let named = body.get("department").and_then(Value::as_str).filter(|d| client.may_see(d));
    let department = named.or(match client.departments.as_slice() {
        [only] => Some(only.as_str()),
        _ => None,
    });
    let mut tx = state.db.begin_write().await?;
    db::reviews::record_refusal(&mut tx, client.id, department, refusal, state.clock.now()).await?;
    tx.commit().await?;
    Ok(())
}
