//! After the approval: pause, resume and cancel at the batch's rate, and what the dispatcher tells the batch.
use super::*;

/// Pause, resume or cancel, with a reason. A pause keeps the waiting dispatches in the outbox (the dispatcher
/// skips them); a resume spreads them from now at the batch's rate; a cancel withdraws every dispatch not
/// being sent at this moment. Sends already under way finish and are recorded.
pub async fn control(state: &AppState, caller: &Caller, id: &str, control: Control, why: &str) -> Result<(), AppError> {
    let why = reason(why).map_err(|m| AppError::invalid("reason", m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_to_act(&mut tx, caller, id).await?;
    let status = BatchStatus::parse(&batch.status).ok_or_else(|| internal("batch status", &batch.status))?;
    let (action, to) = match (control, status) {
        (Control::Pause, BatchStatus::Dispatching) => ("rerun_batch.paused", "paused"),
        (Control::Resume, BatchStatus::Paused) => {
            respread(&mut tx, &batch, now).await?;
            ("rerun_batch.resumed", "dispatching")
        }
        (Control::Cancel, BatchStatus::Dispatching | BatchStatus::Paused) => {
            withdraw_waiting(&mut tx, caller, &batch, &why, now).await?;
            ("rerun_batch.cancelled", "cancelled")
        }
        (Control::Cancel, BatchStatus::Previewing | BatchStatus::Preview | BatchStatus::Draft | BatchStatus::PendingApproval) => {
            end_before_dispatch(&mut tx, state, caller.actor(), &batch, "cancelled", &why, now).await?;
            tx.commit().await?;
            return Ok(());
        }
        _ => return Err(conflict("batch-state", format!("the bulk rerun is {}: this control does not apply", batch.status))),
    };
    db::batches::set_status(&mut tx, id, &batch.status, to, now).await?;
    let entry = batch_entry(caller.actor(), action, &batch).before(json!({"status": batch.status})).after(json!({"status": to})).reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    if to == "dispatching" {
        state.dispatch_wake.notify_one();
    }
    Ok(())
}

/// Spreads the batch's waiting dispatches from now at its rate, so that they do not all go at once.
async fn respread(tx: &mut db::Tx, batch: &BatchRow, now: DateTime<Utc>) -> Result<(), AppError> {
    let rate = u32::try_from(batch.rate_per_minute).unwrap_or(1);
    for (turn, rerun_id) in db::batches::waiting_dispatches(tx, &batch.id, now).await?.iter().enumerate() {
        db::dispatches::reschedule(tx, rerun_id, batches::send_at(now, turn, rate)).await?;
    }
    Ok(())
}

/// After the stop switch resumes dispatches, every dispatching batch's held reruns are spread out again.
pub async fn respread_after_stop(state: &AppState) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    for batch in db::batches::in_status(&mut tx, "dispatching").await? {
        respread(&mut tx, &batch, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Withdraws each approved member whose dispatch is still waiting (not the ones being sent now).
async fn withdraw_waiting(tx: &mut db::Tx, caller: &Caller, batch: &BatchRow, why: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    for member in db::batches::members_in(tx, &batch.id, "requested", MAX_OPERATIONS as i64).await? {
        let Some(rerun_id) = member.request_id.as_deref() else { continue };
        if member.request_status.as_deref() != Some("approved") || !db::dispatches::withdraw(tx, rerun_id, now).await? {
            continue;
        }
        db::rerun_requests::set_status(tx, rerun_id, "approved", "cancelled", now).await?;
        db::operations::set_status_from(tx, member.operation_id, "rerun_pending", "stalled", now).await?;
        let entry = member_entry(caller.actor(), "rerun_request.cancelled", batch, &member.process_id)
            .before(json!({"rerun_id": rerun_id, "status": "approved"}))
            .after(json!({"rerun_id": rerun_id, "batch_id": batch.id, "status": "cancelled"}))
            .reason(why);
        record(tx, entry, caller.request_id.as_deref(), now).await?;
    }
    Ok(())
}

/// Called by the dispatcher in its transaction: a dispatching batch with nothing left to send is completed.
pub async fn complete_if_done(tx: &mut db::Tx, state: &AppState, id: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    let Some(batch) = db::batches::lock(tx, id).await? else { return Ok(()) };
    if batch.status != "dispatching" || db::batches::unfinished_dispatches(tx, id).await? > 0 {
        return Ok(());
    }
    db::batches::set_status(tx, id, "dispatching", "completed", now).await?;
    let progress = super::view::progress_of(&db::batches::members(tx, id).await?);
    let entry = batch_entry(Actor::system("dispatcher"), "rerun_batch.completed", &batch)
        .before(json!({"status": "dispatching"}))
        .after(json!({"status": "completed", "progress": progress}));
    record(tx, entry, None, now).await?;
    notify_creator(tx, state, &batch, "completed", "一括再実行の送信が終わりました", now).await
}

/// The dispatcher found a member's plan no longer holding right before sending: it drops out of its batch
/// with that reason (its request is already voided), the others go on.
pub async fn drop_after_approval(tx: &mut db::Tx, batch: &str, request: &RequestRow, now: DateTime<Utc>) -> Result<(), AppError> {
    let reasons_json = serde_json::to_string(&[Reason::EvidenceChanged]).map_err(|e| internal("reasons", e))?;
    db::batches::drop_by_request(tx, batch, &request.id, &reasons_json).await?;
    let entry = AuditEntry::new(Actor::system("dispatcher"), "rerun_batch.operation_dropped", "operation", &request.process_id)
        .department(Some(&request.department))
        .after(json!({"batch_id": batch, "rerun_id": request.id, "reason": Reason::EvidenceChanged}));
    record(tx, entry, None, now).await?;
    Ok(())
}
