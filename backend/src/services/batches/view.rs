//! The batch as its page shows it, and the list of batches.
use super::facts::{member_progress, progress_of};
use super::*;
use contract::batches::{StageView, StagesView};
use domain::canary::{Reported, StageFailure};
use domain::reconciliation::Verdict;

/// What holds a member that was sent and has not succeeded: the error it met, if any was reported.
fn held_by(m: &MemberRow) -> Option<String> {
    let holding = matches!(member_progress(m), Some(Progress::Sent | Progress::Unknown | Progress::Failed));
    m.held_by.clone().filter(|_| holding)
}

/// The moving parts of the batch, read without the members' plans.
pub async fn progress(state: &AppState, caller: &Caller, id: &str) -> Result<BatchProgress, AppError> {
    let mut tx = state.db.begin_read().await?;
    let batch = batch_for(&mut tx, caller, id, false).await?;
    let members = db::batches::members_without_plans(&mut tx, id).await?;
    Ok(BatchProgress {
        status: batch.status,
        selected: members.len(),
        looked_up: looked_up(&members),
        progress: progress_of(&members).into_iter().map(|(p, n)| (p, n as i64)).collect(),
        members: members.iter().map(member_progress).collect(),
        held_by: members.iter().map(held_by).collect(),
        stages: stages_view(state, &mut tx, &batch, &members).await?,
    })
}

/// The batch's stages: while previewed, those its workflows are configured with; then those it was requested
/// with, each stage as it went once approved.
async fn stages_view(
    state: &AppState,
    tx: &mut db::Conn,
    batch: &BatchRow,
    members: &[MemberRow],
) -> Result<Option<StagesView>, AppError> {
    let plan = match batch.status {
        BatchStatus::Previewing | BatchStatus::Preview => super::stages::configured(
            state,
            members.iter().filter(|m| m.state.is_planned()).map(|m| m.workflow.as_str()),
        ),
        _ => super::stages::planned(batch)?,
    };
    let Some(plan) = plan else { return Ok(None) };
    let rows = db::stages::of_batch(tx, &batch.id).await?;
    let ends = plan.stage_ends(members.iter().filter(|m| m.state.is_planned()).count());
    let assigned = members.iter().filter_map(|m| m.stage).max();
    let count = assigned.map_or(ends.len(), |last| last as usize + 1);
    let stages = (0..count)
        .map(|i| stage_view(i, &ends, assigned.is_some(), members, rows.iter().find(|r| r.stage == i as i64)));
    let stages: Vec<StageView> = stages.collect();
    let awaits_decision = super::facts::stopped_at(batch, rows.iter().find(|r| r.stage == batch.stage)).is_some();
    let (mut resume_decisions, mut resume_required) = (Vec::new(), 0);
    if awaits_decision {
        for id in db::stages::resumption_deciders(tx, &batch.id, batch.stage).await? {
            resume_decisions.extend(db::users::by_id(tx, id).await?.map(|u| u.display_name));
        }
        resume_required = state.config.batch_approvals_required(members.iter().map(|m| m.workflow.as_str()));
    }
    Ok(Some(StagesView { plan, stages, awaits_decision, resume_decisions, resume_required }))
}

/// One stage: its operations (planned, or assigned once approved) and how far they went.
fn stage_view(
    i: usize,
    ends: &[usize],
    assigned: bool,
    members: &[MemberRow],
    row: Option<&db::stages::StageRow>,
) -> StageView {
    let failures: Vec<(String, StageFailure)> =
        row.and_then(|r| r.failures_json.as_deref()).and_then(|f| serde_json::from_str(f).ok()).unwrap_or_default();
    let in_stage: Vec<&MemberRow> = members.iter().filter(|m| assigned && m.stage == Some(i as i64)).collect();
    let planned = ends.get(i).copied().unwrap_or(0) - if i == 0 { 0 } else { ends.get(i - 1).copied().unwrap_or(0) };
    let how_many = |f: &dyn Fn(&MemberRow) -> bool| in_stage.iter().filter(|m| f(m)).count();
    let reported = |m: &MemberRow| super::stages::reported(m).is_some_and(|r| r != Reported::NotYet);
    let verified = |m: &MemberRow| {
        let verdicts: Option<Vec<Verdict>> = m.verified_json.as_deref().and_then(|v| serde_json::from_str(v).ok());
        verdicts.is_some_and(|v| v.iter().all(|v| *v == Verdict::Executed))
    };
    let failed = |m: &MemberRow| {
        member_progress(m) == Some(Progress::Failed) || failures.iter().any(|(p, _)| *p == m.process_id)
    };
    StageView {
        number: i as u32 + 1,
        operations: if assigned { in_stage.len() } else { planned },
        sent: how_many(&|m| m.dispatched_at.is_some()),
        reported: how_many(&reported),
        verified: how_many(&verified),
        failed: how_many(&failed),
        started_at: row.map(|r| r.started_at),
        outcome: row.and_then(|r| r.verdict),
        decided_at: row.and_then(|r| r.verdict_at),
        resumed_by: row.and_then(|r| r.resumed_by.clone()),
        resumed_at: row.and_then(|r| r.resumed_at),
        resume_reason: row.and_then(|r| r.resume_reason.clone()),
        failures,
    }
}

fn looked_up(members: &[MemberRow]) -> usize {
    members.iter().filter(|m| m.looked_up_at.is_some()).count()
}

/// The batch as its page shows it: the dry run's totals, the members with their plans or reasons, the
/// checklist summary, the decisions and the live progress.
pub async fn view(state: &AppState, caller: &Caller, id: &str) -> Result<BatchView, AppError> {
    let mut tx = state.db.begin_read().await?;
    let batch = batch_for(&mut tx, caller, id, false).await?;
    let members = db::batches::members(&mut tx, id).await?;
    let checks = db::batches::checks(&mut tx, id).await?;
    let decisions = db::batches::decisions(&mut tx, id).await?;
    let staff = caller.may_act(Act::RunBulkRerun, &batch.department);
    let ballot = super::super::makers::batch_ballot(&mut tx, &batch, &members).await?;
    let waiting = batch.status == BatchStatus::PendingApproval;
    let standing = approval::standing(&caller.person(), &ballot, waiting, false);
    let (totals, views) = member_views(state, &members);
    let count = |s: MemberState| members.iter().filter(|m| m.state == s).count();
    let failing_checks =
        members.iter().filter(|m| reasons(m).iter().any(|r| matches!(r, Reason::CheckFails { .. }))).count();
    let requested = count(MemberState::Requested);
    let in_request = members.iter().filter(|m| m.state == MemberState::Requested);
    let classes = in_request.filter_map(|m| FailureClass::parse(m.failure_class.as_deref()?));
    let likely_cause = FailureClass::likely(classes);
    let stages = stages_view(state, &mut tx, &batch, &members).await?;
    let names = super::super::names::Names::load(&mut tx).await?;
    let history = names.timeline(&mut tx, caller, (ObjectType::RerunBatch, id)).await?;
    // After a failed stage, only a manager's decision resumes the batch (the rules of any decision).
    let may_resume = if stages.as_ref().is_some_and(|s| s.awaits_decision) {
        let mut resumption = super::stages::resumption_ballot(ballot.clone());
        resumption.decided = db::stages::resumption_deciders(&mut tx, &batch.id, batch.stage).await?;
        approval::may_decide(&caller.person(), &resumption).is_ok()
    } else {
        staff && batch.status.next(BatchEvent::Resume).is_ok()
    };
    let status = batch.status;
    let allows = |event: BatchEvent| status.next(event).is_ok();
    Ok(BatchView {
        likely_cause,
        department_name: state.config.department_name(&batch.department, caller.reads_english()),
        id: batch.id,
        department: batch.department,
        creator: batch.creator,
        reason: batch.reason,
        selection: serde_json::from_str(&batch.selection_json).unwrap_or_default(),
        created_at: batch.created_at,
        submitted_at: batch.submitted_at,
        decided_at: batch.decided_at,
        expires_at: batch.expires_at,
        rate_per_minute: batch.rate_per_minute,
        max_rate_per_minute: i64::from(state.config.bulk_dispatch_per_minute),
        selected: members.len(),
        looked_up: looked_up(&members),
        eligible: count(MemberState::Eligible),
        blocked: count(MemberState::Blocked),
        nothing_to_rerun: count(MemberState::Done),
        requested,
        dropped: count(MemberState::Dropped),
        totals,
        checks: check_summaries(&checks, requested, failing_checks),
        decisions: decisions.into_iter().map(super::super::decisions::view).collect(),
        progress: progress_of(&members).into_iter().map(|(p, n)| (p, n as i64)).collect(),
        may_request: staff && allows(BatchEvent::Request),
        may_confirm: staff && allows(BatchEvent::Submit),
        standing,
        may_pause: staff && allows(BatchEvent::Pause),
        may_resume,
        may_cancel: staff && allows(BatchEvent::Cancel),
        stages,
        history,
        status,
        members: views,
    })
}

fn reasons(member: &MemberRow) -> Vec<Reason> {
    member.reasons_json.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default()
}

/// Each member with its plan or reasons, and the totals of the planned ones: operations, and calls per system.
fn member_views(state: &AppState, members: &[MemberRow]) -> (Totals, Vec<MemberView>) {
    let mut totals = Totals::default();
    let mut views = Vec::new();
    for m in members {
        let plan: Option<RerunPlan> = m.plan_json.as_deref().and_then(|p| serde_json::from_str(p).ok());
        if m.state.is_planned() {
            totals.operations += 1;
            let workflow = state.config.workflow(&m.workflow);
            for step in plan.iter().flat_map(|p| &p.steps) {
                let connector = workflow
                    .and_then(|w| w.steps.iter().find(|d| d.name == step.name))
                    .and_then(|d| d.connector.clone());
                let system = connector.unwrap_or_else(|| "—".into());
                match totals.calls.iter_mut().find(|(s, _)| *s == system) {
                    Some((_, n)) => *n += 1,
                    None => totals.calls.push((system, 1)),
                }
            }
        }
        views.push(MemberView {
            process_id: m.process_id.clone(),
            workflow: m.workflow.clone(),
            state: m.state,
            steps: plan.map(|p| p.steps.into_iter().map(|s| (s.name, s.idempotency_key)).collect()).unwrap_or_default(),
            reasons: reasons(m),
            rerun_id: m.request_id.clone(),
            progress: member_progress(m),
            held_by: held_by(m),
        });
    }
    totals.calls.sort();
    (totals, views)
}

/// Each check of the checklist: who confirmed it for the batch, and for how many members it passes.
fn check_summaries(checks: &[db::batches::CheckRow], requested: usize, failing: usize) -> Vec<CheckSummary> {
    Check::ALL
        .into_iter()
        .map(|check| {
            let confirmed = checks.iter().find(|c| c.number == check.number());
            CheckSummary {
                number: check.number(),
                passing: requested,
                of: requested + failing,
                confirmed_by: confirmed.map(|c| c.confirmed_by.clone()),
                confirmed_at: confirmed.map(|c| c.confirmed_at),
                comment: confirmed.map(|c| c.comment.clone()),
                cause_class: confirmed.and_then(|c| c.cause_class.as_deref()).and_then(FailureClass::parse),
                cause_text: confirmed.and_then(|c| c.cause_text.clone()),
            }
        })
        .collect()
}

/// The newest bulk reruns the caller may see; those waiting for the caller's decision by the approval rule.
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<BatchSummary>, AppError> {
    let mut tx = state.db.begin_read().await?;
    let visible = caller.readable_departments();
    let rows = db::batches::recent(&mut tx, visible.as_deref(), 100).await?;
    let mut summaries = Vec::with_capacity(rows.len());
    for b in rows {
        let awaits_me = b.status == BatchStatus::PendingApproval && caller.may_act(Act::Decide, &b.department) && {
            let members = db::batches::members_without_plans(&mut tx, &b.id).await?;
            let ballot = super::super::makers::batch_ballot(&mut tx, &b, &members).await?;
            approval::standing(&caller.person(), &ballot, true, false) == approval::Standing::MayDecide
        };
        summaries.push(BatchSummary {
            awaits_me,
            department_name: state.config.department_name(&b.department, caller.reads_english()),
            id: b.id,
            department: b.department,
            creator: b.creator,
            reason: b.reason,
            status: b.status,
            created_at: b.created_at,
        });
    }
    Ok(summaries)
}
