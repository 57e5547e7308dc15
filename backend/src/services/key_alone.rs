//! A step the outside system shows executed, though nothing of what ran was compared with it, is left out of a
//! rerun on its key alone. Before the request goes to its approvers a person looks at the record beside the
//! step's content and confirms that what ran is what was meant: the step's flag is then set, its audit event says
//! that it rests on the key alone and who confirmed it, and the draft's plan is bound to the facts as they are now.
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
use domain::rerun_plan::{Change, StepFacts};
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
    if !db::rerun_requests::confirm_step_flag(&mut tx, row.id, now).await? {
        return Ok(()); // Confirmed meanwhile.
    }
    let content: Option<Map<String, Value>> = row.content_json.as_deref().and_then(|c| serde_json::from_str(c).ok());
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::StepFlagConfirmed, ObjectType::Operation, &request.process_id)
            .department(Some(&request.department))
            .before(json!({"step": step, "completed_at": null}))
            .after(json!({
                "step": step,
                "completed_at": now,
                "rests_on": "key_alone",
                "rerun_id": id,
                "connector": connector,
                "external_id": evidence.as_ref().and_then(|e| e.external_id.clone()),
                "record": evidence.as_ref().map(|e| &e.uncompared_record),
                "content": content.as_ref().map(redacted),
            }))
            .reason(comment);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    super::makers::took_part(&mut tx, caller, id, MakerPart::ConfirmedCheck, now).await?;
    // The flag is now part of the facts the approval is bound to.
    let facts: Vec<StepFacts> = snap
        .steps
        .iter()
        .map(|(r, f, _, _)| StepFacts { completed: f.completed || r.name == step, ..f.clone() })
        .collect();
    plan.rebind(&facts);
    let plan_json = serde_json::to_string(&plan).map_err(|e| AppError::internal("plan", e))?;
    if !db::rerun_requests::rebind_draft(&mut tx, id, &plan_json, &plan.verdicts_hash).await? {
        return Err(AppError::conflict(Conflict::NotDraft, "the request changed meanwhile"));
    }
    tx.commit().await?;
    Ok(())
}
