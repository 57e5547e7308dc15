//! The preview: the outside systems are asked about every member, a few at a time, and each gets its plan —
//! a dry run that sends nothing. One worker at a time holds the batch's lease; a stopped one's runs out.
use super::rerun_requests::{plan_for, snapshot};
use super::*;
use domain::audit_action::AuditAction;

/// How long a preview worker's claim lasts without renewal (it renews after every few look-ups).
const PREVIEW_LEASE_SECONDS: i64 = 60;

/// Asks the outside systems about every waiting member, a few at a time, and records each one's plan. Safe to
/// run on several instances: one holds the batch's lease at a time, and a stopped one's lease runs out.
pub async fn preview(state: &AppState, id: &str) -> Result<(), AppError> {
    let chunk = i64::from(state.config.bulk_lookup_concurrency.max(1)) * 2;
    let mut lease: Option<DateTime<Utc>> = None;
    loop {
        let now = state.clock.now();
        let until = (now + Duration::seconds(PREVIEW_LEASE_SECONDS)).trunc_subsecs(3);
        let (waiting, batch) = {
            let mut tx = state.db.begin_write().await?;
            if !db::batches::claim_preview(&mut tx, id, lease, now, until).await? {
                return Ok(()); // another worker has it, or the batch left the preview (e.g. cancelled)
            }
            lease = Some(until);
            let batch = db::batches::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
            let waiting = db::batches::members_in(&mut tx, id, MemberState::Waiting, chunk).await?;
            tx.commit().await?;
            (waiting, batch)
        };
        if waiting.is_empty() {
            return finish_preview(state, &batch).await;
        }
        let concurrency = state.config.bulk_lookup_concurrency.max(1) as usize;
        let looked: Vec<(MemberRow, Option<Result<Looked<'_>, AppError>>)> = futures::stream::iter(waiting)
            .map(|member| async move {
                if member.operation_status != OperationStatus::Stalled {
                    return (member, None);
                }
                let operation = {
                    let mut tx = state.db.connection().await;
                    match tx.as_mut() {
                        Ok(tx) => db::operations::by_id(tx, member.operation_id).await.ok().flatten(),
                        Err(_) => None,
                    }
                };
                let looked = match operation {
                    Some(operation) => Some(reconciliation::look(state, &operation).await),
                    None => None,
                };
                (member, looked)
            })
            .buffered(concurrency)
            .collect()
            .await;
        let now = state.clock.now();
        let mut tx = state.db.begin_write().await?;
        // Every look-up's evidence in a few statements, before each member is judged by it.
        let found: Vec<&reconciliation::Looked> =
            looked.iter().filter_map(|(_, looked)| looked.as_ref()?.as_ref().ok()).collect();
        reconciliation::Looked::record_all(&mut tx, &found, Actor::system(SystemActor::BulkPreview), None).await?;
        for (member, looked) in looked {
            let (found, plan, reasons) = match looked {
                None => (
                    MemberEvent::FoundBlocked,
                    None,
                    vec![Reason::NotStalled { status: member.operation_status.to_string() }],
                ),
                Some(Err(error)) => {
                    (MemberEvent::FoundBlocked, None, vec![Reason::LookupError { message: error.to_string() }])
                }
                Some(Ok(_)) => judge(state, &mut tx, &member).await?,
            };
            let plan_json =
                plan.map(|p| serde_json::to_string(&p)).transpose().map_err(|e| AppError::internal("plan", e))?;
            let reasons_json = serde_json::to_string(&reasons).map_err(|e| AppError::internal("reasons", e))?;
            let update = MemberUpdate {
                state: member.state.next(found).map_err(|r| AppError::internal("member", r))?,
                plan_json: plan_json.as_deref(),
                reasons_json: Some(&reasons_json),
                request_id: None,
                looked_up_at: Some(now),
            };
            db::batches::set_member(&mut tx, id, member.position, &update).await?;
        }
        tx.commit().await?;
    }
}

/// A member's plan after its look-up: eligible with a plan, done (nothing to rerun) or blocked with reasons.
async fn judge(
    state: &AppState,
    tx: &mut db::Conn,
    member: &MemberRow,
) -> Result<(MemberEvent, Option<RerunPlan>, Vec<Reason>), AppError> {
    let Some(operation) = db::operations::by_id(tx, member.operation_id).await? else {
        return Ok((MemberEvent::FoundBlocked, None, vec![Reason::NotStalled { status: "gone".into() }]));
    };
    if operation.status != OperationStatus::Stalled {
        return Ok((
            MemberEvent::FoundBlocked,
            None,
            vec![Reason::NotStalled { status: operation.status.to_string() }],
        ));
    }
    let snap = snapshot(state, tx, operation).await?;
    let outcome = match plan_for(state, &snap) {
        Ok(outcome) => outcome,
        Err(error) => {
            return Ok((MemberEvent::FoundBlocked, None, vec![Reason::LookupError { message: error.to_string() }]));
        }
    };
    // Nobody goes through a member step by step: what rests on the key alone blocks it.
    let blocked = outcome.blocked_unless_a_person_confirms();
    if !blocked.is_empty() {
        let reasons = blocked.into_iter().map(|b| Reason::Blocked { step: b.step, why: b.why }).collect();
        return Ok((MemberEvent::FoundBlocked, None, reasons));
    }
    if outcome.plan.steps.is_empty() {
        return Ok((
            MemberEvent::FoundExecuted,
            None,
            vec![Reason::NothingToRerun { confirmed: outcome.confirm_flags }],
        ));
    }
    Ok((MemberEvent::FoundEligible, Some(outcome.plan), Vec::new()))
}

async fn finish_preview(state: &AppState, batch: &BatchRow) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let previewed =
        BatchStatus::Previewing.next(BatchEvent::Previewed).map_err(|r| AppError::internal("preview", r))?;
    if !db::batches::set_status(&mut tx, &batch.id, BatchStatus::Previewing, previewed, now).await? {
        return Ok(());
    }
    let members = db::batches::members(&mut tx, &batch.id).await?;
    let count = |s: MemberState| members.iter().filter(|m| m.state == s).count();
    let entry =
        batch_entry(Actor::system(SystemActor::BulkPreview), AuditAction::RerunBatchPreviewed, batch).after(json!({
            "eligible": count(MemberState::Eligible),
            "blocked": count(MemberState::Blocked),
            "nothing_to_rerun": count(MemberState::Done),
        }));
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    Ok(())
}

/// Previews whose worker stopped are carried on (run by the sweeper).
pub async fn resume_stale_previews(state: &AppState) -> Result<(), AppError> {
    let stale = {
        let mut tx = state.db.begin_read().await?;
        db::batches::stale_previews(&mut tx, state.clock.now()).await?
    };
    for id in stale {
        preview(state, &id).await?;
    }
    Ok(())
}
