//! Known patterns: past incidents of the department that link an operation with the same event and failure
//! class as a stalled (or held) one, shown on its page; staff and managers mark one as already understood with
//! evidence, audited on the operation (`operation.pattern_acknowledged`).
use super::Caller;
use super::audit::record;
use super::incidents::{may_write, require_write};
use crate::db::Conn;
use crate::db::operations::OperationRow;
use crate::{AppState, db};
use contract::AppError;
use contract::incidents::{Acknowledgement, KnownPattern, KnownPatterns};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::incidents as rules;
use domain::invalid::Field;
use serde_json::json;

/// The operation, if the caller may see it.
async fn visible_operation(tx: &mut Conn, caller: &Caller, process_id: &str) -> Result<OperationRow, AppError> {
    let operation = db::operations::by_process_id(tx, process_id).await?.ok_or(AppError::NotFound)?;
    if !caller.may_read(&operation.department) {
        return Err(AppError::NotFound);
    }
    Ok(operation)
}

/// Past incidents matching a stalled or held operation's event and failure class (see `db::incidents::known_patterns`).
async fn patterns_of(tx: &mut Conn, operation: &OperationRow) -> Result<Vec<KnownPattern>, AppError> {
    let (true, Some(event), Some(class)) =
        (rules::shows_known_patterns(operation.status), &operation.event, &operation.failure_class)
    else {
        return Ok(Vec::new());
    };
    let rows = db::incidents::known_patterns(tx, &operation.department, event, class, operation.id).await?;
    Ok(rows
        .into_iter()
        .map(|r| KnownPattern {
            incident_id: r.incident_id,
            title: r.title,
            occurred_at: r.occurred_at,
            response: r.response,
            acknowledgement: match (r.acknowledged_evidence, r.acknowledged_by, r.acknowledged_at) {
                (Some(evidence), Some(by), Some(at)) => Some(Acknowledgement { evidence, by, at }),
                _ => None,
            },
        })
        .collect())
}

pub async fn load(state: &AppState, caller: &Caller, process_id: &str) -> Result<KnownPatterns, AppError> {
    let mut tx = state.db.begin_read().await?;
    let operation = visible_operation(&mut tx, caller, process_id).await?;
    let patterns = patterns_of(&mut tx, &operation).await?;
    Ok(KnownPatterns { patterns, may_act: may_write(caller, &operation.department) })
}

/// Records that one of the operation's known patterns is already understood, with the evidence.
pub async fn acknowledge(
    state: &AppState,
    caller: &Caller,
    process_id: &str,
    incident_id: i64,
    evidence: &str,
) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let operation = visible_operation(&mut tx, caller, process_id).await?;
    require_write(caller, &operation.department)?;
    let evidence = rules::text(evidence).map_err(|refusal| AppError::invalid(Field::Evidence, refusal))?;
    // Only a pattern the page shows for this operation now (same department, event and failure class).
    let pattern = patterns_of(&mut tx, &operation)
        .await?
        .into_iter()
        .find(|p| p.incident_id == incident_id)
        .ok_or(AppError::NotFound)?;
    if !db::incidents::acknowledge(&mut tx, operation.id, incident_id, &evidence, caller.user_id(), now).await? {
        return Err(AppError::conflict(Conflict::AlreadyAcknowledged, "this pattern is already marked as understood"));
    }
    let audit =
        AuditEntry::new(caller.actor(), AuditAction::OperationPatternAcknowledged, ObjectType::Operation, process_id)
            .department(Some(&operation.department))
            .after(json!({"incident_id": incident_id, "incident_title": pattern.title, "event": operation.event,
            "failure_class": operation.failure_class, "evidence": evidence}))
            .reason(&evidence);
    record(&mut tx, audit, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}
