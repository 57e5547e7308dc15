//! The reader's lists: what waits for their decision, single and bulk together, oldest deadline first; what they
//! took part in preparing; what they decided. Each item says where the reader stands by the one approval rule
//! (`domain::approval::standing`), as its decision page does.
use super::Caller;
use crate::db::batches::BatchRow;
use crate::db::rerun_requests::RequestRow;
use crate::{AppState, db};
use contract::AppError;
use contract::reruns::{Inbox, InboxItem, Stage, Subject};
use domain::approval::{Decision, standing};
use domain::batches::{BatchStatus, MemberState};
use domain::rerun_request::RerunRequestStatus;
use domain::rights::Act;
use domain::roles::Role;

/// How many of the reader's own requests and decisions the lists show (the newest).
const RECENT: i64 = 30;

pub async fn inbox(state: &AppState, caller: &Caller) -> Result<Inbox, AppError> {
    caller.require_any(&[Role::Manager, Role::Staff])?;
    let mut tx = state.db.begin_read().await?;
    let mut inbox = Inbox::default();
    let deciding = caller.acting_departments(Act::Decide);
    inbox.decides = !deciding.is_empty();
    for request in db::rerun_requests::pending_in(&mut tx, &deciding).await? {
        inbox.waiting.push(request_item(state, &mut tx, caller, request, None).await?);
    }
    for batch in db::batches::pending_in(&mut tx, &deciding).await? {
        inbox.waiting.push(batch_item(state, &mut tx, caller, batch, None).await?);
    }
    // Oldest deadline first: what runs out soonest is decided first.
    inbox.waiting.sort_by_key(|i| (i.expires_at.is_none(), i.expires_at, i.submitted_at));
    for request in db::rerun_requests::made_by(&mut tx, caller.user_id(), RECENT).await? {
        inbox.requested.push(request_item(state, &mut tx, caller, request, None).await?);
    }
    for batch in db::batches::made_by(&mut tx, caller.user_id(), RECENT).await? {
        inbox.requested.push(batch_item(state, &mut tx, caller, batch, None).await?);
    }
    // The open ones first, by deadline; then the rest, newest first.
    inbox.requested.sort_by_key(|i| (!is_open(i.stage), i.expires_at, std::cmp::Reverse(i.submitted_at)));
    for (request, decision) in db::rerun_requests::decided_by(&mut tx, caller.user_id(), RECENT).await? {
        inbox.decided.push(request_item(state, &mut tx, caller, request, Some(decision)).await?);
    }
    for (batch, decision) in db::batches::decided_by(&mut tx, caller.user_id(), RECENT).await? {
        inbox.decided.push(batch_item(state, &mut tx, caller, batch, Some(decision)).await?);
    }
    inbox.decided.sort_by_key(|i| std::cmp::Reverse(i.submitted_at));
    Ok(inbox)
}

fn is_open(stage: Stage) -> bool {
    match stage {
        Stage::Request(status) => status.is_open(),
        Stage::Batch(status) => status.is_open(),
    }
}

async fn request_item(
    state: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    r: RequestRow,
    my_decision: Option<Decision>,
) -> Result<InboxItem, AppError> {
    let plan = r.plan()?;
    let ballot = super::makers::request_ballot(tx, &r).await?;
    let decisions = db::rerun_requests::decisions(tx, &r.id).await?;
    let required = state.config.approvals_required(&r.workflow);
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let waiting = r.status == RerunRequestStatus::PendingApproval;
    let english = caller.reads_english();
    let steps =
        plan.steps.into_iter().map(|s| (state.config.step_name(&r.workflow, &s.name, english), s.idempotency_key));
    Ok(InboxItem {
        subject: Subject::Request,
        standing: standing(&caller.person(), &ballot, waiting, r.batch_id.is_some()),
        department: state.config.department_name(&r.department, caller.reads_english()),
        steps: steps.collect(),
        workflows: vec![state.config.workflow_name(&r.workflow, english)],
        operations: 1,
        approvals: i64::from(approvals),
        required: i64::from(required),
        stage: Stage::Request(r.status),
        process_id: Some(r.process_id),
        id: r.id,
        requester: r.requester,
        reason: r.reason,
        submitted_at: r.submitted_at.or(Some(r.created_at)),
        expires_at: r.expires_at,
        my_decision,
    })
}

async fn batch_item(
    state: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    b: BatchRow,
    my_decision: Option<Decision>,
) -> Result<InboxItem, AppError> {
    let members = db::batches::members_without_plans(tx, &b.id).await?;
    let requested: Vec<_> = members.iter().filter(|m| m.state == MemberState::Requested).collect();
    let ballot = super::makers::batch_ballot(tx, &b, &members).await?;
    let decisions = db::batches::decisions(tx, &b.id).await?;
    let required = state.config.batch_approvals_required(requested.iter().map(|m| m.workflow.as_str()));
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let mut workflows: Vec<&str> = requested.iter().map(|m| m.workflow.as_str()).collect();
    workflows.sort();
    workflows.dedup();
    let workflows = workflows.into_iter().map(|w| state.config.workflow_name(w, caller.reads_english())).collect();
    Ok(InboxItem {
        subject: Subject::Batch,
        standing: standing(&caller.person(), &ballot, b.status == BatchStatus::PendingApproval, false),
        department: state.config.department_name(&b.department, caller.reads_english()),
        process_id: None,
        workflows,
        operations: requested.len() as i64,
        steps: Vec::new(),
        approvals: i64::from(approvals),
        required: i64::from(required),
        stage: Stage::Batch(b.status),
        id: b.id,
        requester: b.creator,
        reason: b.reason,
        submitted_at: b.submitted_at.or(Some(b.created_at)),
        expires_at: b.expires_at,
        my_decision,
    })
}
