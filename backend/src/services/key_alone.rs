//! A step the outside system shows executed, though nothing of what ran was compared with it, is left out of a
//! rerun on its key alone. Before the request goes to its approvers a person looks at the record beside the
//! step's content and confirms, on the request, that what ran is what was meant: the judgment is the request's
//! (who, when, what they compared, in its plan), makes its author one of the request's makers, and sets the
//! step's flag only when the request is approved and sent (`dispatcher`), after the plan is checked there. A
//! withdrawn request's judgment sets nothing; a later request asks again.
use super::Caller;
use super::audit::record;
use super::rerun_requests::{checked_snapshot, draft_to_change, plan_changed};
use crate::{AppState, db};
use contract::AppError;
use domain::approval::MakerPart;
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::invalid::{Field, Invalid, Rule};
use domain::reconciliation::redacted;
use domain::rerun_plan::{Change, Judgment};
use serde_json::{Map, Value, json};

/// Staff of the department confirm, with a comment on what they compared, that what ran at the outside system
/// for `step` is what was meant.
pub async fn confirm(state: &AppState, caller: &Caller, id: &str, step: &str, comment: &str) -> Result<(), AppError> {
    let comment = comment.trim();
    if comment.is_empty() {
        let why = Invalid::new(Rule::Required, "say what you compared: the record beside the step's content");
        return Err(AppError::invalid(Field::Comment, why));
    }
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let request = draft_to_change(&mut tx, caller, id).await?;
    let mut plan = request.plan()?;
    if !plan.on_key_alone.iter().any(|s| s == step) {
        return Err(AppError::NotFound);
    }
    let (check, snap) = checked_snapshot(state, &mut tx, &request, &[]).await?;
    if check.changes.iter().any(|c| !matches!(c, Change::Unconfirmed { .. })) {
        return Err(plan_changed());
    }
    let (row, _, connector, evidence) =
        snap.steps.iter().find(|(r, _, _, _)| r.name == step).ok_or(AppError::NotFound)?;
    if plan.judged.iter().any(|j| j.step == step) {
        return Ok(()); // Confirmed meanwhile.
    }
    let judgment = Judgment {
        step: step.into(),
        by: caller.user_id(),
        by_name: caller.user().display_name.clone(),
        at: now,
        comment: comment.into(),
    };
    plan.judged.push(judgment);
    let plan_json = serde_json::to_string(&plan).map_err(|e| AppError::internal("plan", e))?;
    if !db::rerun_requests::rebind_draft(&mut tx, id, &plan_json, &plan.verdicts_hash).await? {
        return Err(AppError::conflict(Conflict::NotDraft, "the request changed meanwhile"));
    }
    let content: Option<Map<String, Value>> = row.content_json.as_deref().and_then(|c| serde_json::from_str(c).ok());
    let entry = AuditEntry::new(
        caller.actor(),
        AuditAction::RerunRequestKeyAloneConfirmed,
        ObjectType::Operation,
        &request.process_id,
    )
    .department(Some(&request.department))
    .after(json!({
        "rerun_id": id,
        "step": step,
        "rests_on": "key_alone",
        "connector": connector,
        "external_id": evidence.as_ref().and_then(|e| e.external_id.clone()),
        "record": evidence.as_ref().map(|e| &e.uncompared_record),
        "content": content.as_ref().map(redacted),
    }))
    .reason(comment);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    super::makers::took_part(&mut tx, caller, id, MakerPart::ConfirmedCheck, now).await?;
    tx.commit().await?;
    Ok(())
}
