//! After the approval: pause, resume and cancel at the batch's rate, and what the dispatcher tells the batch.
use super::*;
use domain::audit::ObjectType;
use domain::audit_action::AuditAction;
use domain::invalid::Field;

/// Pause, resume or cancel, with a reason. A pause keeps the waiting dispatches in the outbox (the dispatcher
/// skips them); a resume spreads them from now at the batch's rate; a cancel withdraws every dispatch not
/// being sent at this moment. Sends already under way finish and are recorded.
pub async fn control(state: &AppState, caller: &Caller, id: &str, control: Control, why: &str) -> Result<(), AppError> {
    let why = reason(why).map_err(|m| AppError::invalid(Field::Reason, m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_to_act(&mut tx, caller, id).await?;
    let (event, action) = match control {
        Control::Pause => (BatchEvent::Pause, AuditAction::RerunBatchPaused),
        Control::Resume => (BatchEvent::Resume, AuditAction::RerunBatchResumed),
        Control::Cancel => (BatchEvent::Cancel, AuditAction::RerunBatchCancelled),
    };
    let to = allows(&batch, event)?;
    if event == BatchEvent::Resume && super::facts::stopped_stage(&mut tx, &batch).await?.is_some() {
        super::stages::resume_after_failure(&mut tx, state, caller, &batch, &why).await?;
        tx.commit().await?;
        state.dispatch_wake.notify_one();
        return Ok(());
    }
    match event {
        BatchEvent::Resume => respread(&mut tx, &batch, now).await?,
        BatchEvent::Cancel if batch.status.is_after_approval() => {
            super::withdraw::withdraw_waiting(
                &mut tx,
                (caller.actor(), caller.request_id.as_deref()),
                &batch,
                &why,
                now,
            )
            .await?
        }
        BatchEvent::Cancel => {
            end_before_dispatch(&mut tx, state, caller.actor(), &batch, event, &why, None, now).await?;
            tx.commit().await?;
            return Ok(());
        }
        _ => {}
    }
    move_batch(&mut tx, &batch, event, now).await?;
    let entry = batch_entry(caller.actor(), action, &batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": to}))
        .reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    if to == BatchStatus::Dispatching {
        state.dispatch_wake.notify_one();
    }
    Ok(())
}

/// Spreads the batch's waiting dispatches from now at its rate, so that they do not all go at once.
async fn respread(tx: &mut db::Conn, batch: &BatchRow, now: DateTime<Utc>) -> Result<(), AppError> {
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
    for batch in db::batches::in_status(&mut tx, BatchStatus::Dispatching).await? {
        respread(&mut tx, &batch, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Called by the dispatcher in its transaction: a dispatching batch with nothing left to send is sent.
pub async fn sent_if_done(tx: &mut db::Conn, state: &AppState, id: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    let Some(batch) = db::batches::lock(tx, id).await? else { return Ok(()) };
    if batch.status != BatchStatus::Dispatching || db::batches::unfinished_dispatches(tx, id).await? > 0 {
        return Ok(());
    }
    move_batch(tx, &batch, BatchEvent::AllSent, now).await?;
    let progress = super::facts::progress_of(&db::batches::members(tx, id).await?);
    let entry = batch_entry(Actor::system(SystemActor::Dispatcher), AuditAction::RerunBatchSent, &batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": BatchStatus::Sent, "progress": progress}));
    record(tx, entry, None, now).await?;
    notify_creator(tx, state, &batch, BatchNews::Dispatched, now).await
}

/// Every sent batch whose members have all ended (succeeded, failed or withdrawn) is completed, with the counts;
/// one still waiting for a report stays sent. Run by the sweeper, which also settles what stalls again.
pub async fn complete_ended(state: &AppState) -> Result<usize, AppError> {
    let now = state.clock.now();
    let sent = {
        let mut read = state.db.begin_read().await?;
        db::batches::in_status(&mut read, BatchStatus::Sent).await?
    };
    let mut completed = 0;
    for batch in sent {
        let mut tx = state.db.begin_write().await?;
        let Some(batch) = db::batches::lock(&mut tx, &batch.id).await? else { continue };
        let members = db::batches::members_without_plans(&mut tx, &batch.id).await?;
        let progress = super::facts::progress_of(&members);
        if batch.status != BatchStatus::Sent || progress.iter().any(|(p, n)| *n > 0 && !p.has_ended()) {
            continue;
        }
        move_batch(&mut tx, &batch, BatchEvent::AllEnded, now).await?;
        let entry = batch_entry(Actor::system(SystemActor::Sweeper), AuditAction::RerunBatchCompleted, &batch)
            .before(json!({"status": batch.status}))
            .after(json!({"status": BatchStatus::Completed, "progress": progress}));
        record(&mut tx, entry, None, now).await?;
        let count = |kind| progress.iter().find(|(p, _)| *p == kind).map_or(0, |(_, n)| *n as u32);
        let news = BatchNews::Ended { succeeded: count(Progress::Succeeded), failed: count(Progress::Failed) };
        notify_creator(&mut tx, state, &batch, news, now).await?;
        tx.commit().await?;
        completed += 1;
    }
    Ok(completed)
}

/// The dispatcher found a member's plan no longer holding right before sending: it drops out of its batch
/// with that reason (its request is already voided), the others go on.
pub async fn drop_after_approval(
    tx: &mut db::Conn,
    batch: &str,
    request: &RequestRow,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let reasons_json =
        serde_json::to_string(&[Reason::EvidenceChanged]).map_err(|e| AppError::internal("reasons", e))?;
    db::batches::drop_by_request(tx, batch, &request.id, &reasons_json).await?;
    let entry = AuditEntry::new(
        Actor::system(SystemActor::Dispatcher),
        AuditAction::RerunBatchOperationDropped,
        ObjectType::Operation,
        &request.process_id,
    )
    .department(Some(&request.department))
    .after(json!({"batch_id": batch, "rerun_id": request.id, "reason": Reason::EvidenceChanged}));
    record(tx, entry, None, now).await?;
    Ok(())
}
