//! Holds and manual verdicts: staff stop work on a stalled operation while they ask the provider, and let it
//! go with a reason; a manager records what the provider's support confirmed. Each is one transaction with
//! its audit event.
use super::Caller;
use super::audit::record;
use crate::db::operations::OperationRow;
use crate::db::reconciliations::NewReconciliation;
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::holds::{may_be_held, may_record_by_hand, reason};
use domain::invalid::{Field, Invalid, Rule};
use domain::operations::{OperationEvent, OperationStatus};
use domain::reconciliation::{Basis, Evidence, Verdict};
use domain::rights::Act;
use serde_json::json;

/// The operation, if the caller may do this act on it (a member of its department with the role for it).
async fn operation_for(
    state: &AppState,
    caller: &Caller,
    process_id: &str,
    act: Act,
) -> Result<OperationRow, AppError> {
    let operation = {
        let mut tx = state.db.begin_read().await?;
        db::operations::by_process_id(&mut tx, process_id).await?.ok_or(AppError::NotFound)?
    };
    caller.check_act(act, &operation.department)?;
    Ok(operation)
}

fn field(name: Field, text: &str) -> Result<String, AppError> {
    reason(text).map_err(|message| AppError::invalid(name, message))
}

pub async fn place(state: &AppState, caller: &Caller, process_id: &str, why: &str) -> Result<(), AppError> {
    let why = field(Field::Reason, why)?;
    let operation = operation_for(state, caller, process_id, Act::Hold).await?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let moved = may_be_held(operation.status)
        && super::operations::advance(&mut tx, operation.id, OperationEvent::Hold, now).await?;
    if !moved {
        return Err(AppError::conflict(Conflict::NotStalled, "only a stalled operation can be put on hold"));
    }
    db::holds::place(&mut tx, operation.id, caller.user_id(), &why, now).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::OperationHeld, ObjectType::Operation, process_id)
        .department(Some(&operation.department))
        .before(json!({"status": OperationStatus::Stalled}))
        .after(json!({"status": OperationStatus::OnHold}))
        .reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn release(state: &AppState, caller: &Caller, process_id: &str, why: &str) -> Result<(), AppError> {
    let why = field(Field::Reason, why)?;
    let operation = operation_for(state, caller, process_id, Act::Release).await?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let hold = db::holds::open(&mut tx, operation.id).await?;
    let moved = super::operations::advance(&mut tx, operation.id, OperationEvent::Release, now).await?;
    let (Some(hold), true) = (hold, moved) else {
        return Err(AppError::conflict(Conflict::NotOnHold, "the operation is not on hold"));
    };
    db::holds::release(&mut tx, hold.id, caller.user_id(), &why, now).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::OperationReleased, ObjectType::Operation, process_id)
        .department(Some(&operation.department))
        .before(json!({"status": OperationStatus::OnHold, "hold_reason": hold.reason}))
        .after(json!({"status": OperationStatus::Stalled}))
        .reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// A manager of the department records a verdict found out by hand, with the evidence in words, after a fresh
/// sign-in; a plan that rests on it may not be decided by them (`MakerPart::RecordedVerdict`).
pub async fn manual_verdict(
    state: &AppState,
    caller: &Caller,
    process_id: &str,
    step_name: &str,
    verdict: Verdict,
    evidence_text: &str,
) -> Result<(), AppError> {
    let evidence_text = field(Field::Evidence, evidence_text)?;
    if !may_record_by_hand(verdict) {
        let why = "record what was found out: executed, executed_mismatch, not_executed or unknown";
        return Err(AppError::invalid(Field::Verdict, Invalid::new(Rule::NotByHand, why)));
    }
    let operation = operation_for(state, caller, process_id, Act::RecordVerdict).await?;
    // A verdict by hand can make a step rerunnable: it is a decision, given by the person now.
    let authenticated = caller.fresh_sign_in(state)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let step = db::operations::step_by_name(&mut tx, operation.id, step_name)
        .await?
        .ok_or_else(|| AppError::invalid(Field::Step, Invalid::new(Rule::Unknown, "no such step in this operation")))?;
    let evidence = Evidence::of(Basis::ByHand { text: evidence_text.clone() });
    let evidence_json = serde_json::to_string(&evidence).map_err(|e| AppError::internal("evidence", e))?;
    let asked_by = format!("manual:{}", caller.user().username);
    let new = NewReconciliation {
        step_id: step.id,
        connector: "manual",
        verdict: verdict.as_str(),
        external_id: None,
        evidence_json: &evidence_json,
        asked_by: &asked_by,
        recorded_by: Some(caller.user_id()),
        records: 0,
    };
    db::reconciliations::insert(&mut tx, &new, now).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::StepManualVerdict, ObjectType::Operation, process_id)
        .department(Some(&operation.department))
        .before(json!({"step": step.name, "verdict": step.latest_verdict}))
        .after(json!({"step": step.name, "verdict": verdict}))
        .reason(&evidence_text)
        .authenticated(authenticated);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}
