//! Bulk reruns in stages (rules in `domain::canary`). The stages are part of the batch's plan: stored when it is
//! requested, shown to the approvers, and checked again at the approval and at each stage's start (a change of
//! `[workflow.canary]` voids the batch). Only the stage being sent has dispatches in the outbox; the stage check
//! (every 2 s, and at each sweep) looks at that stage — every rerun reported, then, after the settle time, the
//! outside systems asked again about each re-run step — and opens the next one, or stops the batch: paused, the
//! workflows' stop switch tripped (unless configured to pause only), the owners told. Only a manager's decision
//! resumes it.
use super::*;
use domain::canary::{CanaryConfig, OnFailure, Reported, StageFailure, StageMember, StageOutcome, StageVerdict};
use domain::dispatch::DispatchStatus;
use domain::reconciliation::Verdict;
use domain::stop_switch::Scope;

/// The stages a batch of these workflows runs in now (`None`: all at once).
pub(super) fn configured<'w>(state: &AppState, workflows: impl IntoIterator<Item = &'w str>) -> Option<CanaryConfig> {
    CanaryConfig::strictest(workflows.into_iter().map(|w| state.config.workflow(w).and_then(|w| w.canary.as_ref())))
}

/// The stages the batch was requested with.
pub(super) fn planned(batch: &BatchRow) -> Result<Option<CanaryConfig>, AppError> {
    batch
        .stages_json
        .as_deref()
        .map(|json| serde_json::from_str(json).map_err(|e| AppError::internal("stages", e)))
        .transpose()
}

pub(super) fn stored(stages: Option<&CanaryConfig>) -> Result<Option<String>, AppError> {
    stages.map(|s| serde_json::to_string(s).map_err(|e| AppError::internal("stages", e))).transpose()
}

/// Whether the stages the batch was requested with are still the ones configured for its members' workflows.
pub(super) fn still_hold(state: &AppState, batch: &BatchRow, members: &[MemberRow]) -> Result<bool, AppError> {
    Ok(planned(batch)? == configured(state, members.iter().map(|m| m.workflow.as_str())))
}

/// At the approval: each approved member gets its stage by its turn; only the first stage's go to the outbox
/// (spread at the batch's rate), and the first stage starts. Without stages every member goes to the outbox.
pub(super) async fn schedule(
    tx: &mut db::Conn,
    actor: &Actor,
    batch: &BatchRow,
    approved: &[(i64, String)],
    (rate, now): (u32, DateTime<Utc>),
) -> Result<(), AppError> {
    let Some(stages) = planned(batch)? else {
        for (turn, (_, request_id)) in approved.iter().enumerate() {
            db::rerun_requests::insert_dispatch(tx, request_id, batches::send_at(now, turn, rate), now).await?;
        }
        return Ok(());
    };
    let ends = stages.stage_ends(approved.len());
    for (turn, (position, request_id)) in approved.iter().enumerate() {
        let stage = CanaryConfig::stage_of(&ends, turn);
        db::batches::set_member_stage(tx, &batch.id, *position, stage as i64).await?;
        if stage == 0 {
            db::rerun_requests::insert_dispatch(tx, request_id, batches::send_at(now, turn, rate), now).await?;
        }
    }
    if let Some(first) = ends.first() {
        start(tx, actor, batch, (0, *first as i64, ends.len()), now).await?;
    }
    Ok(())
}

/// Records a stage's start with its audit event.
async fn start(
    tx: &mut db::Conn,
    actor: &Actor,
    batch: &BatchRow,
    (stage, size, of): (i64, i64, usize),
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    db::batches::set_stage(tx, &batch.id, stage).await?;
    db::stages::start(tx, &batch.id, stage, size, now).await?;
    let entry = batch_entry(actor.clone(), AuditAction::RerunBatchStageStarted, batch)
        .after(json!({"stage": stage + 1, "of": of, "operations": size}));
    record(tx, entry, None, now).await?;
    Ok(())
}

/// Every dispatching batch in stages whose current stage is not its last: its stage checked (run by the sweeper).
pub async fn check_stages(state: &AppState) -> Result<usize, AppError> {
    let batches = {
        let mut read = state.db.begin_read().await?;
        db::batches::in_status(&mut read, BatchStatus::Dispatching).await?
    };
    let mut decided = 0;
    for batch in batches.into_iter().filter(|b| b.stages_json.is_some()) {
        // One batch's trouble (its workflow gone from the configuration, say) holds up no other.
        match check(state, &batch).await {
            Ok(true) => decided += 1,
            Ok(false) => {}
            Err(error) => tracing::error!(batch = %batch.id, %error, "checking a stage failed; it waits"),
        }
    }
    Ok(decided)
}

/// One stage's member as its verdict needs it, with the position to record its verification at.
struct Checked {
    position: i64,
    member: StageMember,
    /// Its operation, to ask the outside systems about once the stage settled (`None`: asked already).
    to_verify: Option<(db::operations::OperationRow, Vec<String>)>,
}

/// Checks the batch's current stage; `true` when it got its verdict.
async fn check(state: &AppState, batch: &BatchRow) -> Result<bool, AppError> {
    let now = state.clock.now();
    let Some(stages) = planned(batch)? else { return Ok(false) };
    // A rerun whose step reported an error is held to the sweeper's rule now: if it stalled, the stage fails at once.
    let Some(mut read) = read_stage(state, batch, now).await? else { return Ok(false) };
    if stall_reported_failures(state, &read.1).await? {
        let Some(again) = read_stage(state, batch, now).await? else { return Ok(false) };
        read = again;
    }
    let (stage, members, mut checked) = read;
    let all_reported = checked.iter().all(|c| c.member.reported != Reported::NotYet);
    let settled = stage.reported_at.is_some_and(|at| now >= at + Duration::seconds(stages.settle_seconds.into()));
    let verified = if settled { verify(state, &mut checked).await? } else { Vec::new() };
    let verdict = domain::canary::stage_verdict(&checked.iter().map(|c| c.member.clone()).collect::<Vec<_>>());
    let newly_reported = all_reported && stage.reported_at.is_none();
    if verdict == StageVerdict::Waiting && verified.is_empty() && !newly_reported {
        return Ok(false); // nothing to write: no write transaction every 2 s while a stage runs
    }
    let mut tx = state.db.begin_write().await?;
    let Some(batch) = db::batches::lock(&mut tx, &batch.id).await? else { return Ok(false) };
    if batch.status != BatchStatus::Dispatching || batch.stage != stage.stage {
        return Ok(false);
    }
    let looks: Vec<_> = verified.iter().map(|(_, _, looked)| looked).collect();
    Looked::record_all(&mut tx, &looks, Actor::system(SystemActor::Stages), None).await?;
    for (position, verdicts, _) in &verified {
        let json = serde_json::to_string(verdicts).map_err(|e| AppError::internal("verified", e))?;
        db::batches::set_verified(&mut tx, &batch.id, *position, &json, now).await?;
    }
    if newly_reported {
        db::stages::reported(&mut tx, &batch.id, stage.stage, now).await?;
    }
    let decided = match verdict {
        StageVerdict::Waiting => false,
        StageVerdict::Passed => {
            passed(&mut tx, state, &batch, &members, now).await?;
            true
        }
        StageVerdict::Failed(failures) => {
            failed(&mut tx, state, &batch, (&stages, &failures), now).await?;
            true
        }
    };
    tx.commit().await?;
    if decided {
        state.dispatch_wake.notify_one();
    }
    Ok(decided)
}

/// Asks the outside systems again about each reported rerun not proven yet, a few at a time (as the preview
/// does): what they say of its re-run steps, with the look-up to record.
async fn verify<'s>(
    state: &'s AppState,
    checked: &mut [Checked],
) -> Result<Vec<(i64, Vec<Verdict>, Looked<'s>)>, AppError> {
    let asked: Vec<(usize, db::operations::OperationRow, Vec<String>)> = checked
        .iter_mut()
        .enumerate()
        .filter(|(_, c)| c.member.reported == Reported::Done)
        .filter_map(|(i, c)| c.to_verify.take().map(|(operation, steps)| (i, operation, steps)))
        .collect();
    let concurrency = state.config.bulk_lookup_concurrency.max(1) as usize;
    let looked: Vec<_> = futures::stream::iter(asked)
        .map(|(i, operation, steps)| async move { (i, steps, reconciliation::look(state, &operation).await) })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut verified = Vec::new();
    for (i, steps, looked) in looked {
        let looked = looked?;
        let verdicts: Vec<Verdict> =
            looked.verdicts().into_iter().filter(|v| steps.contains(&v.step)).map(|v| v.verdict).collect();
        checked[i].member.verified = Some(verdicts.clone());
        verified.push((checked[i].position, verdicts, looked));
    }
    Ok(verified)
}

/// The batch's current stage as its check needs it: `None` when there is nothing to check (it has its verdict,
/// or it is the last stage — the rest of the batch, on whose verdict nothing waits: the batch completes as usual).
async fn read_stage(
    state: &AppState,
    batch: &BatchRow,
    now: DateTime<Utc>,
) -> Result<Option<(db::stages::StageRow, Vec<MemberRow>, Vec<Checked>)>, AppError> {
    let mut read = state.db.begin_read().await?;
    let last = db::batches::last_stage(&mut read, &batch.id).await?.unwrap_or(0);
    let Some(stage) = db::stages::get(&mut read, &batch.id, batch.stage).await? else { return Ok(None) };
    if stage.verdict.is_some() || stage.stage >= last {
        return Ok(None);
    }
    let members = db::batches::members_of_stage(&mut read, &batch.id, batch.stage).await?;
    let checked = stage_members(state, &mut read, &members, now).await?;
    Ok(Some((stage, members, checked)))
}

/// Each sent rerun of the stage whose step reported an error since its approval goes through the sweeper's rule
/// now (`stalls::stall_if_due`); `true` when one stalled.
async fn stall_reported_failures(state: &AppState, members: &[MemberRow]) -> Result<bool, AppError> {
    let mut stalled = false;
    for m in members.iter().filter(|m| m.held_by.is_some() && m.operation_status == OperationStatus::Rerunning) {
        stalled |= super::super::stalls::stall_if_due(state, m.operation_id).await?;
    }
    Ok(stalled)
}

/// What was reported of a member's rerun (`None`: not requested, or withdrawn before it was sent). A step's error
/// since the approval, or a dispatch that could not be sent, is a failure.
pub(super) fn reported(m: &MemberRow) -> Option<Reported> {
    let progress = Progress::of(m.request_status?, m.dispatch_status, m.operation_status);
    Reported::of(progress, m.held_by.is_some() || m.dispatch_status == Some(DispatchStatus::Failed))
}

/// The stage's members as its verdict needs them; one withdrawn before it was sent is no part of its proof.
async fn stage_members(
    state: &AppState,
    read: &mut db::Conn,
    members: &[MemberRow],
    now: DateTime<Utc>,
) -> Result<Vec<Checked>, AppError> {
    let mut checked = Vec::new();
    for m in members {
        let Some(reported) = reported(m) else { continue };
        let plan: Option<RerunPlan> = m.plan_json.as_deref().and_then(|p| serde_json::from_str(p).ok());
        let steps: Vec<String> = plan.map(|p| p.steps.into_iter().map(|s| s.name).collect()).unwrap_or_default();
        let deadline = state.config.workflow(&m.workflow).map_or(0, |w| {
            w.steps.iter().filter(|s| steps.contains(&s.name)).map(|s| s.deadline_seconds).max().unwrap_or(0)
        });
        let past_deadline = m.dispatched_at.is_some_and(|at| now > at + Duration::seconds(deadline as i64));
        let verified: Option<Vec<Verdict>> = m.verified_json.as_deref().and_then(|v| serde_json::from_str(v).ok());
        // Asked again while the outside system is still working on a step (within its deadline).
        let to_verify = match &verified {
            Some(verdicts) if !verdicts.contains(&Verdict::InProgress) || past_deadline => None,
            _ => Some((db::operations::by_id(read, m.operation_id).await?.ok_or(AppError::NotFound)?, steps)),
        };
        let member = StageMember { process_id: m.process_id.clone(), reported, verified, past_deadline };
        checked.push(Checked { position: m.position, member, to_verify });
    }
    Ok(checked)
}

/// The stage passed: its verdict recorded and the next stage opened — unless the configured stages changed
/// since the batch was requested, which voids it.
async fn passed(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    members: &[MemberRow],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let actor = Actor::system(SystemActor::Stages);
    db::stages::decided(tx, &batch.id, batch.stage, (StageOutcome::Passed, None), now).await?;
    let entry = batch_entry(actor.clone(), AuditAction::RerunBatchStagePassed, batch)
        .after(json!({"stage": batch.stage + 1, "operations": members.len()}));
    record(tx, entry, None, now).await?;
    open_next(tx, state, &actor, batch, now).await
}

/// Opens the stage after the current one: its members' dispatches go to the outbox from now at the batch's rate.
async fn open_next(
    tx: &mut db::Conn,
    state: &AppState,
    actor: &Actor,
    batch: &BatchRow,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let all = db::batches::members_in(tx, &batch.id, MemberState::Requested, MAX_OPERATIONS as i64).await?;
    if !still_hold(state, batch, &all)? {
        return super::withdraw::void_after_approval(tx, state, batch, &SystemReason::StagesChanged.text(), now).await;
    }
    let next = batch.stage + 1;
    let rate = u32::try_from(batch.rate_per_minute).unwrap_or(1);
    let of = all.iter().filter_map(|m| m.stage).max().map_or(0, |last| last as usize + 1);
    let members: Vec<&MemberRow> = all.iter().filter(|m| m.stage == Some(next)).collect();
    for (turn, member) in members.iter().enumerate() {
        if let (Some(request_id), Some(RerunRequestStatus::Approved)) = (&member.request_id, member.request_status) {
            db::rerun_requests::insert_dispatch(tx, request_id, batches::send_at(now, turn, rate), now).await?;
        }
    }
    start(tx, actor, batch, (next, members.len() as i64, of), now).await
}

/// The stage failed: the batch pauses before its next stage, the failing members' workflows are stopped (unless
/// configured to pause only), and the department's owners are told, with the failing operations on the page.
async fn failed(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    (stages, failures): (&CanaryConfig, &[(String, StageFailure)]),
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let actor = Actor::system(SystemActor::Stages);
    let failures_json = serde_json::to_string(failures).map_err(|e| AppError::internal("failures", e))?;
    db::stages::decided(tx, &batch.id, batch.stage, (StageOutcome::Failed, Some(&failures_json)), now).await?;
    move_batch(tx, batch, BatchEvent::Pause, now).await?;
    let why = SystemReason::StageFailed { stage: batch.stage as u32 + 1 }.text();
    let failing: Vec<serde_json::Value> =
        failures.iter().map(|(process_id, why)| json!({"process_id": process_id, "failure": why})).collect();
    let entry = batch_entry(actor.clone(), AuditAction::RerunBatchStageFailed, batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": BatchStatus::Paused, "stage": batch.stage + 1, "failures": failing}))
        .reason(&why);
    record(tx, entry, None, now).await?;
    if stages.on_failure == OnFailure::PauseAndStop {
        let members = db::batches::members_of_stage(tx, &batch.id, batch.stage).await?;
        let mut workflows: Vec<&str> = members
            .iter()
            .filter(|m| failures.iter().any(|(p, _)| *p == m.process_id))
            .map(|m| m.workflow.as_str())
            .collect();
        workflows.sort_unstable();
        workflows.dedup();
        for workflow in workflows {
            trip(tx, state, &actor, workflow, &why, now).await?;
        }
    }
    let news = BatchNews::StageFailed { stage: batch.stage as u32 + 1, failed: failures.len() as u32 };
    notify_batch_owners(tx, state, batch, news, now).await?;
    super::super::chat::changed(tx, &ChatSubject::Batch(batch.id.clone()), now).await?;
    Ok(())
}

/// Trips a workflow's stop switch for the departments it concerns, with its audit event; one already paused
/// stays as it is.
async fn trip(
    tx: &mut db::Conn,
    state: &AppState,
    actor: &Actor,
    workflow: &str,
    why: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let concerned = domain::stop_switch::departments(&state.config, Scope::Workflow, workflow);
    let set_for = serde_json::to_string(&concerned).map_err(|e| AppError::internal("pause", e))?;
    let scope = (Scope::Workflow.as_str(), workflow);
    let by = db::stop_switch::Pauser::System(SystemActor::Stages.as_str());
    if !db::stop_switch::pause(tx, scope, by, why, &set_for, now).await? {
        return Ok(());
    }
    let department = (concerned.len() == 1).then(|| concerned[0].as_str());
    let entry = AuditEntry::new(actor.clone(), AuditAction::DispatchPaused, Scope::Workflow.object_type(), workflow)
        .department(department)
        .before(json!({"paused": false}))
        .after(json!({"paused": true, "departments": concerned}))
        .reason(why);
    record(tx, entry, None, now).await?;
    Ok(())
}

/// Who may decide that a stopped batch goes on: the ballot of its approval, where having approved it does not
/// stand in the way (a manager who approved it made none of it).
pub(super) fn resumption_ballot(mut ballot: domain::approval::Ballot) -> domain::approval::Ballot {
    ballot.decided.clear();
    ballot
}

/// A manager decides that a batch stopped by a failed stage goes on, with the rules of any decision: a fresh
/// sign-in, an owner of the department, not one of the batch's makers. It goes on once as many managers as its
/// approval needed have decided so, each once (those whose access ended since count no more); until then each
/// decision is recorded with why, and the batch stays stopped. Then the next stage opens.
pub(super) async fn resume_after_failure(
    tx: &mut db::Conn,
    state: &AppState,
    caller: &Caller,
    batch: &BatchRow,
    why: &str,
) -> Result<(), AppError> {
    let authenticated = caller.fresh_sign_in(state)?;
    let members = db::batches::members_in(tx, &batch.id, MemberState::Requested, MAX_OPERATIONS as i64).await?;
    let mut ballot = resumption_ballot(super::super::makers::batch_ballot(tx, batch, &members).await?);
    ballot.decided = db::stages::resumption_deciders(tx, &batch.id, batch.stage).await?;
    decisions::allowed(tx, caller, &ballot, &batch.id).await?;
    let now = state.clock.now();
    if !db::stages::decide_resumption(tx, &batch.id, batch.stage, (caller.user_id(), why), now).await? {
        return Err(AppError::conflict(Conflict::AlreadyDecided, "you decided this bulk rerun goes on already"));
    }
    let mut deciders = decisions::still_deciding(tx, &ballot.department, &ballot.decided).await?;
    deciders.push(caller.user_id());
    let required = state.config.batch_approvals_required(members.iter().map(|m| m.workflow.as_str()));
    let decided = domain::approval::counted(&deciders, &ballot);
    if !domain::approval::is_approved(decided, required) {
        let entry = batch_entry(caller.actor(), AuditAction::RerunBatchStageResumeRecorded, batch)
            .after(json!({"stage": batch.stage + 1, "decisions": decided, "required": required}))
            .authenticated(authenticated)
            .reason(why);
        record(tx, entry, caller.request_id.as_deref(), now).await?;
        return Ok(());
    }
    db::stages::resumed(tx, &batch.id, batch.stage, (caller.user_id(), why), now).await?;
    move_batch(tx, batch, BatchEvent::Resume, now).await?;
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchStageResumed, batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": BatchStatus::Dispatching, "stage": batch.stage + 1}))
        .authenticated(authenticated)
        .reason(why);
    record(tx, entry, caller.request_id.as_deref(), now).await?;
    let resumed = db::batches::lock(tx, &batch.id).await?.ok_or(AppError::NotFound)?;
    open_next(tx, state, &caller.actor(), &resumed, now).await
}
