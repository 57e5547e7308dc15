//! An approved bulk rerun withdrawn before all of it went out: by a person's cancel, or by the gate itself when
//! what it was approved with no longer holds. Its own file, so that the control of a batch and its stages both
//! stand on it.
use super::*;
use domain::audit_action::AuditAction;

/// Withdraws each approved member whose dispatch is still waiting (not the ones being sent now), or whose stage
/// has not started.
pub(super) async fn withdraw_waiting(
    tx: &mut db::Conn,
    (actor, request_id): (Actor, Option<&str>),
    batch: &BatchRow,
    why: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    for member in db::batches::members_in(tx, &batch.id, MemberState::Requested, MAX_OPERATIONS as i64).await? {
        let (Some(rerun_id), Some(from)) = (member.request_id.as_deref(), member.request_status) else { continue };
        if from != RerunRequestStatus::Approved {
            continue;
        }
        let waiting =
            db::dispatches::withdraw(tx, rerun_id, now).await? || db::dispatches::get(tx, rerun_id).await?.is_none();
        if !waiting {
            continue;
        }
        let moved = advance_by_id(tx, (rerun_id, member.operation_id, from), RequestEvent::Void, now).await?;
        let entry = member_entry(actor.clone(), AuditAction::RerunRequestCancelled, batch, &member.process_id)
            .before(json!({"rerun_id": rerun_id, "status": from}))
            .after(json!({"rerun_id": rerun_id, "batch_id": batch.id, "status": moved.to}))
            .reason(why);
        record(tx, entry, request_id, now).await?;
    }
    Ok(())
}

/// What the batch was approved with no longer holds (its stages changed): what waits is withdrawn and the batch
/// is cancelled, as the gate itself decides; its maker and owners are told.
pub(super) async fn void_after_approval(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    why: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let actor = Actor::system(SystemActor::Stages);
    withdraw_waiting(tx, (actor.clone(), None), batch, why, now).await?;
    move_batch(tx, batch, BatchEvent::Cancel, now).await?;
    let entry = batch_entry(actor, AuditAction::RerunBatchCancelled, batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": BatchStatus::Cancelled}))
        .reason(why);
    record(tx, entry, None, now).await?;
    notify_batch_owners(tx, state, batch, BatchNews::Cancelled, now).await?;
    notify_creator(tx, state, batch, BatchNews::Cancelled, now).await
}
