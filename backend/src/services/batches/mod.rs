//! Bulk reruns (rules in `domain::batches`). The selection is frozen as members when the batch is created;
//! the outside systems are asked about each member a few at a time and each gets its own plan — a dry run
//! that sends nothing. The request then creates an ordinary rerun request per eligible member (`batch_id`
//! set), the five checks are confirmed once for all, the owners approve once, and the dispatcher sends each
//! at the batch's rate. A member whose evidence changes drops out alone. Every change with its audit events
//! in one transaction.
use super::audit::record;
use super::notifications::notify_owners;
use super::reconciliation::{self, Looked};
use super::rerun_requests::{
    self, Draft, Looking, Made, advance, advance_by_id, approval_validity, make_plan, plan_still_holds, prefill,
};
use super::{Caller, decisions};
use crate::db::batches::{BatchRow, MemberRow, MemberUpdate, NewBatch};
use crate::db::rerun_requests::{Confirmation, RequestRow};
use crate::{AppState, db};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use contract::AppError;
use contract::batches::{BatchProgress, BatchSummary, BatchView, CheckSummary, Control, MemberView, Selection, Totals};
use domain::approval::{self, Decision, MakerPart, is_expired};
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::batches::{self, BatchEvent, BatchStatus, MAX_OPERATIONS, MemberEvent, MemberState, Progress, Reason};
use domain::chat::ChatSubject;
use domain::checklist::{self, Check, Prefill};
use domain::conflict::Conflict;
use domain::holds::reason;
use domain::identity::Authentication;
use domain::invalid::{Field, Invalid, Rule, unknown_process_ids};
use domain::notifications::{BatchNews, Notice};
use domain::operations::OperationStatus;
use domain::reasons::SystemReason;
use domain::rerun_plan::RerunPlan;
use domain::rerun_request::{RequestEvent, RerunRequestStatus};
use domain::rights::Act;
use domain::roles::Role;
use domain::stall::FailureClass;
use futures::StreamExt;
use serde_json::json;

mod dispatch;
pub mod facts;
mod preview;
mod stages;
mod view;
mod withdraw;
pub use dispatch::{complete_ended, control, drop_after_approval, respread_after_stop, sent_if_done};
pub use preview::{preview, resume_stale_previews};
pub use stages::check_stages;
pub use view::{list, progress, view};

fn batch_entry(actor: Actor, action: AuditAction, batch: &BatchRow) -> AuditEntry {
    AuditEntry::new(actor, action, ObjectType::RerunBatch, &batch.id).department(Some(&batch.department))
}

fn member_entry(actor: Actor, action: AuditAction, batch: &BatchRow, process_id: &str) -> AuditEntry {
    AuditEntry::new(actor, action, ObjectType::Operation, process_id).department(Some(&batch.department))
}

/// Staff select stalled operations by filter or by ticks; the selection is frozen and the look-ups start.
pub async fn create(state: &AppState, caller: &Caller, selection: Selection, why: &str) -> Result<String, AppError> {
    let why = reason(why).map_err(|m| AppError::invalid(Field::Reason, m))?;
    caller.require_any(&[Role::Staff, Role::Manager])?;
    let mine = caller.acting_departments(Act::RunBulkRerun);
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let selected = if selection.process_ids.is_empty() {
        let departments: Vec<String> = match &selection.department {
            Some(d) if mine.contains(d) => vec![d.clone()],
            Some(_) => Vec::new(),
            None => mine.clone(),
        };
        let filter = db::batches::Filter {
            departments: &departments,
            workflow: selection.workflow.as_deref(),
            event: selection.event.as_deref(),
            failure_class: selection.failure_class.as_deref(),
            created_from: selection.registered_from,
            created_to: selection.registered_to,
            limit: MAX_OPERATIONS as i64 + 1,
        };
        db::batches::select_stalled(&mut tx, &filter).await?
    } else {
        let found = db::batches::select_by_process_ids(&mut tx, &selection.process_ids).await?;
        let unknown: Vec<&str> = selection
            .process_ids
            .iter()
            .filter(|p| !found.iter().any(|s| &s.process_id == *p && mine.contains(&s.department)))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(AppError::invalid(Field::ProcessIds, unknown_process_ids(&unknown)));
        }
        found
    };
    if selected.is_empty() {
        return Err(AppError::invalid(
            Field::Selection,
            Invalid::new(Rule::NothingSelected, "no stalled operation matches this selection"),
        ));
    }
    if selected.len() > MAX_OPERATIONS {
        let message = format!("a bulk rerun holds at most {MAX_OPERATIONS} operations: narrow the filters");
        return Err(AppError::invalid(Field::Selection, Invalid::new(Rule::TooMany, message)));
    }
    let department = selected[0].department.clone();
    if selected.iter().any(|s| s.department != department) {
        let message = "a bulk rerun is for one department (its owners approve it): choose the department";
        return Err(AppError::invalid(Field::Department, Invalid::new(Rule::OneDepartment, message)));
    }
    let id = format!("rb_{}", uuid::Uuid::now_v7().simple());
    let selection_json = serde_json::to_string(&selection).map_err(|e| AppError::internal("selection", e))?;
    let new = NewBatch {
        id: &id,
        department: &department,
        created_by: caller.user_id(),
        reason: &why,
        selection_json: &selection_json,
        rate_per_minute: i64::from(state.config.bulk_dispatch_per_minute),
    };
    let ids: Vec<i64> = selected.iter().map(|s| s.id).collect();
    db::batches::insert(&mut tx, &new, &ids, now).await?;
    super::makers::took_part_in_batch(&mut tx, caller, &id, MakerPart::Created, now).await?;
    let batch = db::batches::by_id(&mut tx, &id).await?.ok_or(AppError::NotFound)?;
    let process_ids: Vec<&str> = selected.iter().map(|s| s.process_id.as_str()).collect();
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchCreated, &batch)
        .after(json!({"selection": selection, "operations": process_ids.len(), "process_ids": process_ids}))
        .reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    let (state, batch_id) = (state.clone(), id.clone());
    tokio::spawn(async move {
        if let Err(error) = preview(&state, &batch_id).await {
            tracing::error!(batch = %batch_id, %error,
                "bulk preview stopped; another worker takes it over after its lease");
        }
    });
    Ok(id)
}

/// The batch, if the caller may see it.
async fn batch_for(tx: &mut db::Conn, caller: &Caller, id: &str, lock: bool) -> Result<BatchRow, AppError> {
    let batch = if lock { db::batches::lock(tx, id).await? } else { db::batches::by_id(tx, id).await? };
    let batch = batch.ok_or(AppError::NotFound)?;
    if !caller.may_read(&batch.department) {
        return Err(AppError::NotFound);
    }
    Ok(batch)
}

/// The batch, locked, if the caller may act on it (the write rule of `domain::rights`).
async fn batch_to_act(tx: &mut db::Conn, caller: &Caller, id: &str) -> Result<BatchRow, AppError> {
    let batch = db::batches::lock(tx, id).await?.ok_or(AppError::NotFound)?;
    caller.check_act(Act::RunBulkRerun, &batch.department)?;
    Ok(batch)
}

/// The state this event moves the batch to, by the domain's table; a refusal is a conflict.
fn allows(batch: &BatchRow, event: BatchEvent) -> Result<BatchStatus, AppError> {
    batch.status.next(event).map_err(|refused| AppError::conflict(Conflict::BatchState, refused.to_string()))
}

/// Moves the batch from the state it was read in; `false` when someone moved it first.
async fn move_batch(
    tx: &mut db::Conn,
    batch: &BatchRow,
    event: BatchEvent,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let to = allows(batch, event)?;
    Ok(db::batches::set_status(tx, &batch.id, batch.status, to, now).await?)
}

/// Staff request the previewed plans at a rate (at most the configured one): each eligible member gets a draft
/// rerun request with its pre-filled checks; a member whose checks fail or whose evidence changed drops out.
pub async fn request(
    state: &AppState,
    caller: &Caller,
    id: &str,
    rate_per_minute: Option<u32>,
) -> Result<(), AppError> {
    let rate = batches::rate(rate_per_minute, state.config.bulk_dispatch_per_minute)
        .map_err(|m| AppError::invalid(Field::RatePerMinute, m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_to_act(&mut tx, caller, id).await?;
    allows(&batch, BatchEvent::Request)?;
    let members = db::batches::members(&mut tx, id).await?;
    let (mut requested, mut dropped, mut workflows) = (0, 0, Vec::new());
    for member in members.iter().filter(|m| m.state.next(MemberEvent::Request).is_ok()) {
        match admit(state, &mut tx, caller, &batch, member, now).await? {
            Admission::Requested(request_id) => {
                requested += 1;
                workflows.push(member.workflow.as_str());
                let update = MemberUpdate {
                    state: member.state.next(MemberEvent::Request).map_err(|r| AppError::internal("member", r))?,
                    plan_json: None,
                    reasons_json: None,
                    request_id: Some(&request_id),
                    looked_up_at: None,
                };
                db::batches::set_member(&mut tx, id, member.position, &update).await?;
            }
            Admission::Done => {}
            Admission::Dropped(reason) => {
                dropped += 1;
                drop_member(&mut tx, caller.actor(), caller.request_id.as_deref(), &batch, member, &reason, now)
                    .await?;
            }
        }
    }
    if requested == 0 {
        return Err(AppError::conflict(
            Conflict::NothingToRequest,
            "no operation of this selection can be rerun now: see the reasons listed",
        ));
    }
    db::batches::set_rate_and_expiry(&mut tx, id, Some(i64::from(rate)), None).await?;
    let planned = stages::configured(state, workflows);
    db::batches::set_stages(&mut tx, id, stages::stored(planned.as_ref())?.as_deref()).await?;
    move_batch(&mut tx, &batch, BatchEvent::Request, now).await?;
    super::makers::took_part_in_batch(&mut tx, caller, id, MakerPart::Requested, now).await?;
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchRequested, &batch)
        .before(json!({"status": batch.status}))
        .after(
            json!({"status": BatchStatus::Draft, "requested": requested, "dropped": dropped, "rate_per_minute": rate,
                "stages": planned}),
        );
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

enum Admission {
    Requested(String),
    /// Nothing left to rerun: its flags are confirmed and it completed.
    Done,
    Dropped(Reason),
}

/// One previewed member at the request: its plan computed again (only what was previewed is requested), its
/// five checks pre-filled; a draft request when all hold.
async fn admit(
    state: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    batch: &BatchRow,
    member: &MemberRow,
    now: DateTime<Utc>,
) -> Result<Admission, AppError> {
    let operation = db::operations::by_id(tx, member.operation_id).await?.ok_or(AppError::NotFound)?;
    if operation.status != OperationStatus::Stalled {
        return Ok(Admission::Dropped(Reason::NotStalled { status: operation.status.to_string() }));
    }
    let previewed: Option<RerunPlan> = member.plan_json.as_deref().and_then(|p| serde_json::from_str(p).ok());
    let looking = Looking::Member { previewed: previewed.as_ref() };
    let (snap, bound) = match make_plan(state, tx, caller, operation, looking, now).await {
        Ok(Made::Ready { snap, bound }) => (snap, bound),
        Ok(Made::NothingToRerun(_)) => return Ok(Admission::Done),
        Ok(Made::Blocked(_) | Made::ChangedSincePreview) | Err(AppError::Conflict { .. }) => {
            return Ok(Admission::Dropped(Reason::EvidenceChanged));
        }
        Err(other) => return Err(other),
    };
    let checks = prefill(&snap, &bound.plan);
    if let Some(failing) = checks.iter().find(|c| !c.holds) {
        return Ok(Admission::Dropped(Reason::CheckFails {
            number: failing.check.number(),
            evidence: failing.evidence.clone(),
        }));
    }
    let draft = Draft {
        snap: &snap,
        plan: &bound.plan,
        confirmed: &bound.confirmed,
        checks: &checks,
        reason: &batch.reason,
        batch_id: Some(&batch.id),
    };
    Ok(match rerun_requests::create(tx, caller, &draft, now).await? {
        Some(request_id) => Admission::Requested(request_id),
        None => Admission::Dropped(Reason::NotStalled { status: "request_open".into() }),
    })
}

/// Takes a member out of the batch with its reason (and withdraws its request, if it has one).
async fn drop_member(
    tx: &mut db::Conn,
    actor: Actor,
    request_id: Option<&str>,
    batch: &BatchRow,
    member: &MemberRow,
    why: &Reason,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let reasons_json = serde_json::to_string(&[why]).map_err(|e| AppError::internal("reasons", e))?;
    let dropped = member.state.next(MemberEvent::Drop).map_err(|r| AppError::internal("member", r))?;
    let update = MemberUpdate {
        state: dropped,
        plan_json: None,
        reasons_json: Some(&reasons_json),
        request_id: None,
        looked_up_at: None,
    };
    db::batches::set_member(tx, &batch.id, member.position, &update).await?;
    // Its request as it stands in this transaction (the batch's submission may have just moved it).
    if let Some(rerun_id) = &member.request_id {
        let request = db::rerun_requests::by_id(tx, rerun_id).await?.ok_or(AppError::NotFound)?;
        advance(tx, &request, RequestEvent::Void, now).await?;
    }
    let entry = member_entry(actor, AuditAction::RerunBatchOperationDropped, batch, &member.process_id)
        .after(json!({"batch_id": batch.id, "rerun_id": member.request_id, "reason": why}));
    record(tx, entry, request_id, now).await?;
    Ok(())
}

/// One of the five checks, confirmed once for the whole batch (and copied into each member's checklist).
pub async fn confirm(
    state: &AppState,
    caller: &Caller,
    id: &str,
    number: i64,
    comment: &str,
    cause: rerun_requests::Cause,
) -> Result<(), AppError> {
    let check = Check::from_number(number).ok_or_else(|| {
        AppError::invalid(Field::Number, Invalid::new(Rule::OutOfRange, "a check is numbered 1 to 5"))
    })?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_to_act(&mut tx, caller, id).await?;
    allows(&batch, BatchEvent::Submit)?; // the checks are confirmed while it is a draft
    let class = FailureClass::from_form(cause.class.as_deref()).map_err(|m| AppError::invalid(Field::CauseClass, m))?;
    let text = cause.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
    // Every requested member passed all five checks when it was requested (the others dropped out).
    let prefill = Prefill { check, holds: true, evidence: checklist::Found::Text(String::new()) };
    checklist::confirmation(&prefill, comment, class.zip(text))
        .map_err(|(field, message)| AppError::invalid(field, message))?;
    let (class, text) =
        if check == Check::CauseAnalysed { (class.map(FailureClass::as_str), text) } else { (None, None) };
    let confirmation =
        Confirmation { user_id: caller.user_id(), comment: comment.trim(), cause_class: class, cause_text: text };
    db::batches::confirm_check(&mut tx, id, number, &confirmation, now).await?;
    super::makers::took_part_in_batch(&mut tx, caller, id, MakerPart::ConfirmedCheck, now).await?;
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchCheckConfirmed, &batch)
        .after(json!({"check": number, "comment": comment.trim(), "cause_class": class, "cause_text": text}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// All five checks confirmed: every member whose plan still holds goes to the owners; the others drop out.
pub async fn submit(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_to_act(&mut tx, caller, id).await?;
    allows(&batch, BatchEvent::Submit)?;
    if db::batches::checks(&mut tx, id).await?.len() != Check::ALL.len() {
        return Err(AppError::invalid(
            Field::Checklist,
            Invalid::new(Rule::ChecksUnconfirmed, "confirm all five checks first"),
        ));
    }
    let (mut submitted, mut expires_at) = (0, None::<DateTime<Utc>>);
    for member in db::batches::members_in(&mut tx, id, MemberState::Requested, MAX_OPERATIONS as i64).await? {
        let request = member_request(&mut tx, &member).await?;
        if !plan_still_holds(state, &mut tx, &request).await?
            || !advance(&mut tx, &request, RequestEvent::Submit, now).await?.operation
        {
            drop_member(
                &mut tx,
                caller.actor(),
                caller.request_id.as_deref(),
                &batch,
                &member,
                &Reason::EvidenceChanged,
                now,
            )
            .await?;
            continue;
        }
        super::makers::verdicts_rested_on(&mut tx, &request, now).await?;
        let plan = request.plan()?;
        let expiry = now + approval_validity(state, &request, &plan);
        expires_at = Some(expires_at.map_or(expiry, |e| e.min(expiry)));
        db::rerun_requests::set_expiry(&mut tx, &request.id, expiry).await?;
        let entry = member_entry(caller.actor(), AuditAction::RerunRequestSubmitted, &batch, &member.process_id)
            .before(json!({"status": request.status, "operation_status": OperationStatus::Stalled}))
            .after(json!({
                "rerun_id": request.id,
                "batch_id": id,
                "status": RerunRequestStatus::PendingApproval,
                "operation_status": OperationStatus::RerunPending,
            }));
        record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
        submitted += 1;
    }
    let event = if submitted == 0 { BatchEvent::NothingLeft } else { BatchEvent::Submit };
    let to = allows(&batch, event)?;
    db::batches::set_rate_and_expiry(&mut tx, id, None, expires_at).await?;
    move_batch(&mut tx, &batch, event, now).await?;
    super::makers::took_part_in_batch(&mut tx, caller, id, MakerPart::Submitted, now).await?;
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchSubmitted, &batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": to, "operations": submitted, "expires_at": expires_at}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    if submitted > 0 {
        notify_batch_owners(&mut tx, state, &batch, BatchNews::ApprovalAsked { requests: submitted as u32 }, now)
            .await?;
        super::chat::batch_submitted(&mut tx, state, &batch, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// How many owners must approve a bulk rerun of these requested members (the most any of their workflows asks).
async fn member_request(tx: &mut db::Conn, member: &MemberRow) -> Result<RequestRow, AppError> {
    let id = member.request_id.as_deref().ok_or(AppError::NotFound)?;
    db::rerun_requests::by_id(tx, id).await?.ok_or(AppError::NotFound)
}

/// An owner decides once for the whole batch. On the last approval needed, each member whose plan still holds
/// is approved and put in the outbox at its turn; a member whose evidence changed drops out alone.
pub async fn decide(state: &AppState, caller: &Caller, id: &str, approve: bool, comment: &str) -> Result<(), AppError> {
    let decision = if approve { Decision::Approve } else { Decision::Reject };
    let decisions::Given { comment, authenticated } = decisions::given(state, caller, decision, comment)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let batch = batch_for(&mut tx, caller, id, true).await?;
    let members = db::batches::members_in(&mut tx, id, MemberState::Requested, MAX_OPERATIONS as i64).await?;
    let ballot = super::makers::batch_ballot(&mut tx, &batch, &members).await?;
    decisions::allowed(&mut tx, caller, &ballot, id).await?;
    allows(&batch, BatchEvent::Approve)?;
    if let Some(problem) = ended_before_decision(&mut tx, state, (caller, approve), (&batch, &members), now).await? {
        tx.commit().await?;
        return Err(problem);
    }
    if !db::batches::insert_decision(&mut tx, id, caller.user_id(), decision, comment.as_deref(), now).await? {
        return Err(AppError::conflict(Conflict::AlreadyDecided, "you decided on this bulk rerun already"));
    }
    if !approve {
        end_before_dispatch(
            &mut tx,
            state,
            caller.actor(),
            &batch,
            BatchEvent::Reject,
            comment.as_deref().unwrap_or_default(),
            Some(authenticated),
            now,
        )
        .await?;
        tx.commit().await?;
        return Ok(());
    }
    let required = state.config.batch_approvals_required(members.iter().map(|m| m.workflow.as_str()));
    let decided = db::batches::decisions(&mut tx, id).await?;
    let (approvals, enough) = decisions::tally(&decided, &ballot, required);
    if !enough {
        let entry = batch_entry(caller.actor(), AuditAction::RerunBatchApprovalRecorded, &batch)
            .after(json!({"approvals": approvals, "required": required, "makers": ballot.makers}))
            .authenticated(authenticated);
        record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
        super::chat::changed(&mut tx, &ChatSubject::Batch(batch.id.clone()), now).await?;
        tx.commit().await?;
        return Ok(());
    }
    let rate = u32::try_from(batch.rate_per_minute).unwrap_or(1);
    let approved = Approved { decided: &decided, approvals, rate };
    let turn = approve_members(&mut tx, state, caller, &batch, &members, &approved, now).await?;
    let event = if turn == 0 { BatchEvent::NothingLeft } else { BatchEvent::Approve };
    let to = allows(&batch, event)?;
    move_batch(&mut tx, &batch, event, now).await?;
    let entry = batch_entry(caller.actor(), AuditAction::RerunBatchApproved, &batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": to, "approvals": approvals, "operations": turn, "rate_per_minute": rate,
            "makers": ballot.makers}))
        .authenticated(authenticated);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    notify_creator(&mut tx, state, &batch, BatchNews::Approved, now).await?;
    tx.commit().await?;
    state.dispatch_wake.notify_one();
    Ok(())
}

/// What ends the batch before a decision counts, and what the decider hears: its validity ran out, or (for an
/// approval) the stages it was requested with are no longer the ones configured.
async fn ended_before_decision(
    tx: &mut db::Conn,
    state: &AppState,
    (caller, approve): (&Caller, bool),
    (batch, members): (&BatchRow, &[MemberRow]),
    now: DateTime<Utc>,
) -> Result<Option<AppError>, AppError> {
    let (actor, event, why, problem) = if is_expired(batch.expires_at, now) {
        let problem = AppError::conflict(Conflict::Expired, "the bulk rerun expired before it was approved");
        (caller.actor(), BatchEvent::Expire, SystemReason::ValidityRanOut, problem)
    } else if approve && !stages::still_hold(state, batch, members)? {
        let problem =
            AppError::conflict(Conflict::PlanChanged, "the bulk rerun's stages changed after it was requested");
        (Actor::system(SystemActor::Stages), BatchEvent::Cancel, SystemReason::StagesChanged, problem)
    } else {
        return Ok(None);
    };
    end_before_dispatch(tx, state, actor, batch, event, &why.text(), None, now).await?;
    Ok(Some(problem))
}

/// The approvals that approved a batch, and the rate its members are sent at.
struct Approved<'a> {
    decided: &'a [db::rerun_requests::DecisionRow],
    approvals: u32,
    rate: u32,
}

/// Each member whose plan still holds is approved and put in the outbox at its turn; a member whose evidence
/// changed drops out alone. The number of members sent.
async fn approve_members(
    tx: &mut db::Conn,
    state: &AppState,
    caller: &Caller,
    batch: &BatchRow,
    members: &[MemberRow],
    approved: &Approved<'_>,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let mut sendable: Vec<(i64, String)> = Vec::new();
    for member in members {
        let request = member_request(tx, member).await?;
        if !plan_still_holds(state, tx, &request).await? {
            let request_id = caller.request_id.as_deref();
            drop_member(tx, caller.actor(), request_id, batch, member, &Reason::EvidenceChanged, now).await?;
            continue;
        }
        // Each member carries every approval that counted, as a request approved alone does.
        for d in approved.decided.iter().filter(|d| d.decision == Decision::Approve) {
            let comment = d.comment.as_deref();
            db::rerun_requests::insert_decision(
                tx,
                &request.id,
                d.approver_id,
                Decision::Approve,
                comment,
                d.decided_at,
            )
            .await?;
        }
        let moved = advance(tx, &request, RequestEvent::Approve, now).await?;
        sendable.push((member.position, request.id.clone()));
        let entry = member_entry(caller.actor(), AuditAction::RerunRequestApproved, batch, &member.process_id)
            .before(json!({"rerun_id": request.id, "status": request.status}))
            .after(json!({"rerun_id": request.id, "batch_id": batch.id, "status": moved.to,
                "approvals": approved.approvals}));
        record(tx, entry, caller.request_id.as_deref(), now).await?;
    }
    stages::schedule(tx, &caller.actor(), batch, &sendable, (approved.rate, now)).await?;
    Ok(sendable.len())
}

/// Tells the department's owners (app, e-mail, team chat) about the batch, linking to its page.
async fn notify_batch_owners(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    news: BatchNews,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let (notice, link) = (Notice::batch(&batch.id, &batch.reason, news), format!("/batches/{}", batch.id));
    notify_owners(tx, state, (batch.department.as_str(), news.kind()), &notice, &link, now).await?;
    Ok(())
}

async fn notify_creator(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    news: BatchNews,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let (notice, link) = (Notice::batch(&batch.id, &batch.reason, news), format!("/batches/{}", batch.id));
    let to = (batch.department.as_str(), news.kind());
    super::notifications::notify_user(tx, state, batch.created_by, to, &notice, &link, now).await?;
    super::chat::changed(tx, &ChatSubject::Batch(batch.id.clone()), now).await?;
    Ok(())
}

/// Rejected, expired or cancelled before any dispatch: every member's request ends and its operation is
/// stalled again.
#[allow(clippy::too_many_arguments)]
async fn end_before_dispatch(
    tx: &mut db::Conn,
    state: &AppState,
    actor: Actor,
    batch: &BatchRow,
    event: BatchEvent,
    why: &str,
    decided: Option<&Authentication>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let to = allows(batch, event)?;
    // The members' requests end as the batch does: rejected, expired or withdrawn.
    let member_event = event.member_event().ok_or_else(|| AppError::internal("batch end", format!("{event:?}")))?;
    for member in db::batches::members_in(tx, &batch.id, MemberState::Requested, MAX_OPERATIONS as i64).await? {
        let (Some(rerun_id), Some(from)) = (&member.request_id, member.request_status) else { continue };
        let moved = advance_by_id(tx, (rerun_id, member.operation_id, from), member_event, now).await?;
        if moved.request {
            let entry = member_entry(actor.clone(), member_action(member_event), batch, &member.process_id)
                .before(json!({"rerun_id": rerun_id, "status": from}))
                .after(json!({"rerun_id": rerun_id, "batch_id": batch.id, "status": moved.to}))
                .reason(why);
            record(tx, entry, None, now).await?;
        }
    }
    move_batch(tx, batch, event, now).await?;
    let entry = batch_entry(actor, batch_action(event), batch)
        .before(json!({"status": batch.status}))
        .after(json!({"status": to}))
        .reason(why);
    let entry = match decided {
        Some(authentication) => entry.authenticated(authentication),
        None => entry,
    };
    record(tx, entry, None, now).await?;
    let news = match event {
        BatchEvent::Reject => BatchNews::Rejected,
        BatchEvent::Expire => BatchNews::Expired,
        _ => BatchNews::Cancelled,
    };
    notify_creator(tx, state, batch, news, now).await
}

fn member_action(event: RequestEvent) -> AuditAction {
    match event {
        RequestEvent::Reject => AuditAction::RerunRequestRejected,
        RequestEvent::Expire => AuditAction::RerunRequestExpired,
        _ => AuditAction::RerunRequestCancelled,
    }
}

fn batch_action(event: BatchEvent) -> AuditAction {
    match event {
        BatchEvent::Reject => AuditAction::RerunBatchRejected,
        BatchEvent::Expire => AuditAction::RerunBatchExpired,
        _ => AuditAction::RerunBatchCancelled,
    }
}

/// Approved batches whose validity ran out before anyone decided (run by the sweeper).
pub async fn expire_overdue(state: &AppState) -> Result<usize, AppError> {
    let now = state.clock.now();
    let overdue = {
        let mut tx = state.db.begin_read().await?;
        db::batches::overdue(&mut tx, now).await?
    };
    let mut expired = 0;
    for id in overdue {
        let mut tx = state.db.begin_write().await?;
        let Some(batch) = db::batches::lock(&mut tx, &id).await? else { continue };
        if batch.status == BatchStatus::PendingApproval {
            end_before_dispatch(
                &mut tx,
                state,
                Actor::system(SystemActor::Sweeper),
                &batch,
                BatchEvent::Expire,
                &SystemReason::NoDecisionInTime.text(),
                None,
                now,
            )
            .await?;
            expired += 1;
        }
        tx.commit().await?;
    }
    Ok(expired)
}
