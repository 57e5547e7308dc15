//! Rerun requests: the plan is computed from the flags and verdicts; executed steps get their flag confirmed;
//! the five checks are pre-filled with their evidence and confirmed by people; then the request goes to the
//! department's owners. Each change and its audit event in one transaction.
use super::Caller;
use super::audit::record;
use super::notifications::{Audience, notify};
use crate::db::operations::OperationRow;
use crate::db::rerun_requests::{Confirmation, ItemRow, NewRequest, RequestRow};
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::reruns::{CheckView, KeyAloneView, MakerView, RerunRequestView, StartAnswer};
use domain::approval::{Ballot, MakerPart, may_withdraw, standing};
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::checklist::{self, Check, CheckedStep, Found, Prefill, StepError};
use domain::conflict::Conflict;
use domain::holds::reason;
use domain::invalid::{Field, Invalid, Rule};
use domain::notifications::RerunNews;
use domain::operations::OperationStatus;
use domain::reasons::SystemReason;
use domain::reconciliation::{Evidence, Verdict};
use domain::rerun_plan::{self, PlanOutcome, RerunPlan, StepFacts};
use domain::rerun_request::{RequestEvent, RerunRequestStatus};
use domain::rights::Act;
use domain::stall::FailureClass;
use serde_json::json;
use words::checklist::{check_label_in, found_label_in};

/// The cause of the fifth check, as the form sends it.
pub struct Cause {
    pub class: Option<String>,
    pub text: Option<String>,
}

/// Everything the plan and the checks are computed from, read in one snapshot.
pub(super) struct Snapshot {
    pub operation: OperationRow,
    pub steps: Vec<(domain::steps::Step, StepFacts, Option<String>, Option<Evidence>)>,
}

pub(super) async fn snapshot(
    state: &AppState,
    tx: &mut db::Conn,
    operation: OperationRow,
) -> Result<Snapshot, AppError> {
    let rows = db::operations::steps(tx, operation.id).await?;
    let latest = db::reconciliations::latest_for_operation(tx, operation.id).await?;
    let workflow = state.config.workflow(&operation.workflow);
    let mut steps = Vec::new();
    for row in rows {
        let definition = workflow.and_then(|w| w.steps.iter().find(|d| d.name == row.name));
        let connector = definition.and_then(|d| d.connector.clone());
        let reconciliation = latest.iter().find(|r| r.step_id == row.id);
        let evidence: Option<Evidence> = reconciliation.and_then(|r| serde_json::from_str(&r.evidence_json).ok());
        let facts = StepFacts {
            name: row.name.clone(),
            idempotency_key: row.idempotency_key.clone(),
            content_fingerprint: row.content_fingerprint.clone(),
            completed: row.completed_at.is_some(),
            verdict: row.latest_verdict,
            external_id: reconciliation.and_then(|r| r.external_id.clone()),
            checked_outside: connector.is_some() || definition.is_none_or(|d| d.side_effect),
        };
        steps.push((row, facts, connector, evidence));
    }
    Ok(Snapshot { operation, steps })
}

fn operation_for(caller: &Caller, operation: Option<OperationRow>) -> Result<OperationRow, AppError> {
    let operation = operation.ok_or(AppError::NotFound)?;
    caller.check_act(Act::RequestRerun, &operation.department)?;
    Ok(operation)
}

/// Staff start a request on a stalled operation: the plan is made and bound (`make_plan`), and a draft with the
/// pre-filled checklist is created — or the reasons it cannot be are given.
pub async fn start(state: &AppState, caller: &Caller, process_id: &str, why: &str) -> Result<StartAnswer, AppError> {
    let why = reason(why).map_err(|m| AppError::invalid(Field::Reason, m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let operation = operation_for(caller, db::operations::by_process_id(&mut tx, process_id).await?)?;
    let answer = start_in(state, &mut tx, caller, operation, &why, now).await?;
    if !matches!(answer, StartAnswer::Blocked { .. }) {
        tx.commit().await?;
    }
    Ok(answer)
}

/// `start`, in the caller's transaction (a blocked start writes nothing).
async fn start_in(
    state: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    operation: OperationRow,
    why: &str,
    now: DateTime<Utc>,
) -> Result<StartAnswer, AppError> {
    if operation.status != OperationStatus::Stalled {
        return Err(AppError::conflict(
            Conflict::NotStalled,
            "a rerun can be requested only for a stalled operation (not on hold, not already requested)",
        ));
    }
    let (snap, bound) = match make_plan(state, tx, caller, operation, Looking::Person, now).await? {
        Made::Blocked(reasons) => return Ok(StartAnswer::Blocked { reasons }),
        Made::ChangedSincePreview => return Err(AppError::internal("plan", "a single request has no preview")),
        Made::NothingToRerun(confirmed) => return Ok(StartAnswer::NothingToRerun { confirmed }),
        Made::Ready { snap, bound } => (snap, bound),
    };
    let checks = prefill(&snap, &bound.plan);
    let draft = Draft {
        snap: &snap,
        plan: &bound.plan,
        confirmed: &bound.confirmed,
        checks: &checks,
        reason: why,
        batch_id: None,
    };
    let id = create(tx, caller, &draft, now)
        .await?
        .ok_or_else(|| AppError::conflict(Conflict::RequestOpen, "this operation already has an open rerun request"))?;
    Ok(StartAnswer::Created { id })
}

/// One of its makers makes the plan of a draft again after the facts changed: the draft is withdrawn, saying
/// what changed, and a new one is started with the same reason on the facts as they are now (its checks to be
/// confirmed again) — in one transaction. When the facts now block a rerun, the draft stays withdrawn and the
/// answer says why.
pub async fn make_again(state: &AppState, caller: &Caller, id: &str) -> Result<StartAnswer, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let request = draft_to_change(&mut tx, caller, id).await?;
    let changes = plan_changes(plan_check(state, &mut tx, &request, &[]).await?);
    withdraw(&mut tx, state, caller, &request, (&SystemReason::PlanMadeAgain.text(), &changes), now).await?;
    let operation = db::operations::by_id(&mut tx, request.operation_id).await?.ok_or(AppError::NotFound)?;
    let answer = start_in(state, &mut tx, caller, operation, &request.reason, now).await?;
    tx.commit().await?;
    Ok(answer)
}

/// What changed of the facts a draft's plan is bound to (a step still waiting for a person's confirmation on the
/// key alone is no change).
pub(super) fn plan_changes(check: rerun_plan::Check) -> Vec<rerun_plan::Change> {
    check.changes.into_iter().filter(|c| !matches!(c, rerun_plan::Change::Unconfirmed { .. })).collect()
}

/// Who will look at the plan's steps before it is submitted.
#[derive(Clone, Copy)]
pub(super) enum Looking<'a> {
    /// A person goes through the request step by step: a step resting on the key alone may wait for them.
    Person,
    /// A bulk rerun's member: nobody confirms a step on the key alone, and the plan must be the one previewed.
    Member { previewed: Option<&'a RerunPlan> },
}

/// What a start made of a stalled operation.
pub(super) enum Made {
    /// Its steps forbid a request.
    Blocked(Vec<rerun_plan::Blocked>),
    /// A bulk rerun's member whose plan is not the one previewed.
    ChangedSincePreview,
    /// Every unfinished step is executed outside: their flags are confirmed and the operation completed.
    NothingToRerun(Vec<String>),
    /// A plan to request, bound to the facts as the start leaves them.
    Ready { snap: Box<Snapshot>, bound: Bound },
}

/// A plan bound to the facts, and the flags its start confirmed on the way.
pub(super) struct Bound {
    pub plan: RerunPlan,
    pub confirmed: Vec<String>,
}

/// The one way a start (single or a bulk rerun's member) makes and binds a plan: computed from the facts, the
/// flags of steps the outside systems show executed confirmed, then bound to the facts as those writes left them
/// — a request's own writes are never "the facts changed" at its submission, approval or send.
pub(super) async fn make_plan(
    state: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    operation: OperationRow,
    looking: Looking<'_>,
    now: DateTime<Utc>,
) -> Result<Made, AppError> {
    let snap = snapshot(state, tx, operation).await?;
    let outcome = plan_for(state, &snap)?;
    let blocked = match looking {
        Looking::Person if !outcome.plan.steps.is_empty() => outcome.blocked.clone(),
        _ => outcome.blocked_unless_a_person_confirms(),
    };
    if !blocked.is_empty() {
        return Ok(Made::Blocked(blocked));
    }
    if let Looking::Member { previewed: Some(previewed) } = looking
        && previewed.verdicts_hash != outcome.plan.verdicts_hash
    {
        return Ok(Made::ChangedSincePreview);
    }
    let (actor, request_id) = (caller.actor(), caller.request_id.as_deref());
    confirm_flags(tx, actor.clone(), request_id, &snap, &outcome.confirm_flags, now).await?;
    if outcome.plan.steps.is_empty() {
        let op = &snap.operation;
        let facts = (op.id, op.process_id.as_str(), op.department.as_str());
        super::operations::complete_if_done(tx, actor, facts, request_id, now).await?;
        return Ok(Made::NothingToRerun(outcome.confirm_flags));
    }
    if outcome.confirm_flags.is_empty() {
        return Ok(Made::Ready { snap: Box::new(snap), bound: Bound { plan: outcome.plan, confirmed: Vec::new() } });
    }
    // Read again after its own writes: the flags just set are facts the plan is bound to, not changes to it.
    let snap = snapshot(state, tx, snap.operation).await?;
    let again = plan_for(state, &snap)?;
    if again.plan.steps != outcome.plan.steps || !again.confirm_flags.is_empty() || !again.blocked.is_empty() {
        return Err(AppError::internal("plan", "the plan moved under its own start's writes"));
    }
    Ok(Made::Ready { snap: Box::new(snap), bound: Bound { plan: again.plan, confirmed: outcome.confirm_flags } })
}

/// The plan for the snapshot, bound to the workflow's definition as configured now (the one the rerun uses).
pub(super) fn plan_for(state: &AppState, snap: &Snapshot) -> Result<PlanOutcome, AppError> {
    let facts: Vec<StepFacts> = snap.steps.iter().map(|(_, f, _, _)| f.clone()).collect();
    let version =
        state.config.workflow(&snap.operation.workflow).map(|w| w.version.clone()).ok_or_else(|| {
            AppError::conflict(Conflict::WorkflowNotConfigured, "the workflow is no longer configured")
        })?;
    Ok(rerun_plan::compute(&facts, &version))
}

/// Sets the completion flags of steps the outside systems show executed, each with its audit event.
async fn confirm_flags(
    tx: &mut db::Conn,
    actor: Actor,
    request_id: Option<&str>,
    snap: &Snapshot,
    names: &[String],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let operation = &snap.operation;
    for name in names {
        let Some((row, _, connector, evidence)) = snap.steps.iter().find(|(r, _, _, _)| &r.name == name) else {
            continue;
        };
        if db::rerun_requests::confirm_step_flag(tx, row.id, now).await? {
            let entry = AuditEntry::new(
                actor.clone(),
                AuditAction::StepFlagConfirmed,
                ObjectType::Operation,
                &operation.process_id,
            )
            .department(Some(&operation.department))
            .before(json!({"step": name, "completed_at": null}))
            .after(json!({"step": name, "completed_at": now, "connector": connector,
                    "external_id": evidence.as_ref().and_then(|e| e.external_id.clone())}))
            .reason(SystemReason::OutsideShowsExecuted.text());
            record(tx, entry, request_id, now).await?;
        }
    }
    Ok(())
}

/// A draft request to be created: the operation's snapshot, its plan and its pre-filled checks.
pub(super) struct Draft<'a> {
    pub snap: &'a Snapshot,
    pub plan: &'a RerunPlan,
    pub confirmed: &'a [String],
    pub checks: &'a [Prefill],
    pub reason: &'a str,
    pub batch_id: Option<&'a str>,
}

/// Creates the draft request with its checklist and audit event; `None` when the operation has an open one.
pub(super) async fn create(
    tx: &mut db::Conn,
    caller: &Caller,
    d: &Draft<'_>,
    now: DateTime<Utc>,
) -> Result<Option<String>, AppError> {
    let operation = &d.snap.operation;
    let id = format!("rr_{}", uuid::Uuid::now_v7().simple());
    let plan_json = serde_json::to_string(d.plan).map_err(|e| AppError::internal("plan", e))?;
    let new = NewRequest {
        id: &id,
        operation_id: operation.id,
        requested_by: caller.user_id(),
        reason: d.reason,
        plan_json: &plan_json,
        workflow_version: &d.plan.workflow_version,
        verdicts_hash: &d.plan.verdicts_hash,
        batch_id: d.batch_id,
    };
    if !db::rerun_requests::insert(tx, &new, now).await? {
        return Ok(None);
    }
    for check in d.checks {
        db::rerun_requests::insert_item(tx, &id, check.check.number(), check.holds, &check.evidence.to_stored())
            .await?;
    }
    super::makers::took_part(tx, caller, &id, MakerPart::Started, now).await?;
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::RerunRequestCreated, ObjectType::Operation, &operation.process_id)
            .department(Some(&operation.department))
            .after(json!({"rerun_id": id, "plan": d.plan, "confirmed_flags": d.confirmed, "batch_id": d.batch_id}))
            .reason(d.reason);
    record(tx, entry, caller.request_id.as_deref(), now).await?;
    Ok(Some(id))
}

/// A single request that staff may still change: of their department, a draft, not part of a bulk rerun.
pub(super) async fn draft_to_change(tx: &mut db::Conn, caller: &Caller, id: &str) -> Result<RequestRow, AppError> {
    let request = request_for(tx, caller, id).await?;
    caller.check_act(Act::RequestRerun, &request.department)?;
    not_in_batch(&request)?;
    if request.status != RerunRequestStatus::Draft {
        return Err(AppError::conflict(Conflict::NotDraft, "a request can be changed only while it is a draft"));
    }
    Ok(request)
}

/// A bulk rerun's member requests are confirmed, submitted, decided and withdrawn with their batch.
pub(super) fn not_in_batch(request: &RequestRow) -> Result<(), AppError> {
    match &request.batch_id {
        Some(batch) => Err(AppError::conflict(
            Conflict::PartOfBatch,
            format!("this request is part of the bulk rerun {batch}: act on the batch"),
        )),
        None => Ok(()),
    }
}

/// What `advance` moved: the request, and the operation with it (a request going back to staff finds its
/// operation stalled already when it was a draft).
pub(super) struct Moved {
    /// The state the table moves it to.
    pub to: RerunRequestStatus,
    pub request: bool,
    pub operation: bool,
}

/// Moves a request by the domain's table (`RerunRequestStatus::next`), and its operation with it
/// (`RequestEvent::operation_move`). A move the table refuses is a conflict; `request: false` means someone
/// moved it first.
pub(super) async fn advance(
    tx: &mut db::Conn,
    request: &RequestRow,
    event: RequestEvent,
    now: DateTime<Utc>,
) -> Result<Moved, AppError> {
    advance_by_id(tx, (&request.id, request.operation_id, request.status), event, now).await
}

/// After a write that may have set an operation's last flag: completes the operation when every step is done, and
/// the rerun that brought it there succeeds (its audit event and the requester's notice). Called by both writes
/// that can come last — the integration's step report and the dispatch's own write — so that either order ends
/// the same way.
pub(super) async fn completed_by_rerun(
    tx: &mut db::Conn,
    state: &AppState,
    actor: Actor,
    (id, process_id, department): (i64, &str, &str),
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    if !super::operations::complete_if_done(tx, actor.clone(), (id, process_id, department), None, now).await? {
        return Ok(false);
    }
    if let Some(request) = db::rerun_requests::open_for_operation(tx, id).await? {
        let moved = advance(tx, &request, RequestEvent::Completed, now).await?;
        if moved.request {
            let entry = AuditEntry::new(actor, AuditAction::RerunRequestSucceeded, ObjectType::Operation, process_id)
                .department(Some(department))
                .before(json!({"rerun_id": request.id, "status": request.status}))
                .after(json!({"rerun_id": request.id, "status": moved.to}));
            record(tx, entry, None, now).await?;
            // A bulk rerun tells its requester once, when the batch completes.
            if request.batch_id.is_none() {
                notify(tx, state, &request, RerunNews::Completed, Audience::Requester, now).await?;
            }
        }
    }
    Ok(true)
}

/// `advance` for a request known by its ID, its operation and the status it was read in (a batch's member).
pub(super) async fn advance_by_id(
    tx: &mut db::Conn,
    (id, operation_id, from): (&str, i64, RerunRequestStatus),
    event: RequestEvent,
    now: DateTime<Utc>,
) -> Result<Moved, AppError> {
    let to = from.next(event)?;
    if !db::rerun_requests::set_status(tx, id, from, to, now).await? {
        return Ok(Moved { to, request: false, operation: false });
    }
    let operation = match event.operation_move() {
        Some(moved) => super::operations::advance(tx, operation_id, moved, now).await?,
        None => false,
    };
    Ok(Moved { to, request: true, operation })
}

/// The request's plan checked against the facts as they are now (`domain::rerun_plan::check`), the one check of
/// submission, of each approval and of the moment right before each send (then with the look-up just made).
pub(super) async fn plan_check(
    state: &AppState,
    tx: &mut db::Conn,
    request: &RequestRow,
    looked_up: &[(String, Verdict)],
) -> Result<rerun_plan::Check, AppError> {
    Ok(checked_snapshot(state, tx, request, looked_up).await?.0)
}

/// `plan_check`, with the snapshot it was made on (for a caller that goes on from the same facts).
pub(super) async fn checked_snapshot(
    state: &AppState,
    tx: &mut db::Conn,
    request: &RequestRow,
    looked_up: &[(String, Verdict)],
) -> Result<(rerun_plan::Check, Snapshot), AppError> {
    let operation = db::operations::by_id(tx, request.operation_id).await?.ok_or(AppError::NotFound)?;
    let version = state.config.workflow(&operation.workflow).map(|w| w.version.clone());
    let snap = snapshot(state, tx, operation).await?;
    let facts: Vec<StepFacts> = snap.steps.iter().map(|(_, f, _, _)| f.clone()).collect();
    Ok((rerun_plan::check(&request.plan()?, &facts, version.as_deref(), looked_up), snap))
}

impl RequestRow {
    /// The plan the request was made (and is approved) for.
    pub(super) fn plan(&self) -> Result<RerunPlan, AppError> {
        serde_json::from_str(&self.plan_json).map_err(|e| AppError::internal("plan", e))
    }
}

pub(super) async fn plan_still_holds(
    state: &AppState,
    tx: &mut db::Conn,
    request: &RequestRow,
) -> Result<bool, AppError> {
    Ok(plan_check(state, tx, request, &[]).await?.holds())
}

pub(super) fn plan_changed() -> AppError {
    AppError::conflict(
        Conflict::PlanChanged,
        "the steps, what the outside systems say, or the workflow changed since the plan was made",
    )
}

/// A day, or less when an outside system involved keeps its keys for a shorter time.
pub(super) fn approval_validity(state: &AppState, request: &RequestRow, plan: &RerunPlan) -> chrono::Duration {
    let retentions = plan.steps.iter().filter_map(|s| {
        let connector = state.config.connector_of(&request.workflow, &s.name)?;
        Some(state.connectors.get(connector)?.common.retention_days)
    });
    domain::approval::validity(retentions)
}

/// The five checks, filled in from the planned steps and their evidence.
pub(super) fn prefill(snap: &Snapshot, plan: &RerunPlan) -> Vec<Prefill> {
    let planned: Vec<CheckedStep<'_>> = snap
        .steps
        .iter()
        .filter(|(row, _, _, _)| plan.steps.iter().any(|p| p.name == row.name))
        .map(|(row, facts, connector, evidence)| CheckedStep {
            name: &row.name,
            idempotency_key: &row.idempotency_key,
            completed: facts.completed,
            verdict: facts.verdict,
            connector: connector.as_deref().filter(|_| facts.checked_outside),
            basis: evidence.as_ref().map(Evidence::basis),
        })
        .collect();
    let error = snap.steps.iter().find_map(|(row, _, _, _)| {
        let class = row.error_class.clone()?;
        Some(StepError { step: row.name.clone(), class, message: row.error_message.clone() })
    });
    let event = snap.operation.event.as_deref().filter(|_| error.is_none());
    checklist::prefill(&snap.operation.process_id, (error, event), &planned)
}

async fn request_for(tx: &mut db::Conn, caller: &Caller, id: &str) -> Result<RequestRow, AppError> {
    let request = db::rerun_requests::by_id(tx, id).await?.ok_or(AppError::NotFound)?;
    if !caller.may_read(&request.department) {
        return Err(AppError::NotFound);
    }
    Ok(request)
}

/// The request as its page shows it: the decision page of the owners, with the evidence (every step's flag,
/// verdict and evidence as they are now), the checklist, the makers, the approvals and where the reader stands.
pub async fn view(state: &AppState, caller: &Caller, id: &str) -> Result<RerunRequestView, AppError> {
    let mut tx = state.db.begin_read().await?;
    let request = request_for(&mut tx, caller, id).await?;
    let items = db::rerun_requests::items(&mut tx, id).await?;
    let decisions = db::rerun_requests::decisions(&mut tx, id).await?;
    let ballot = super::makers::request_ballot(&mut tx, &request).await?;
    let mut operation = super::operations::view_in(&mut tx, &request.process_id).await?.ok_or(AppError::NotFound)?;
    let names = super::names::Names::load(&mut tx).await?;
    super::operations::in_readers_words(&mut operation.steps, caller.locale, &names);
    let mut makers: Vec<MakerView> = Vec::new();
    for maker in &ballot.makers {
        let name = db::users::by_id(&mut tx, maker.user_id).await?.map_or_else(String::new, |u| u.display_name);
        let view = MakerView { name, part: maker.part };
        if !makers.contains(&view) {
            makers.push(view);
        }
    }
    let plan = request.plan()?;
    let plan_changes = match request.status {
        RerunRequestStatus::Draft => plan_changes(plan_check(state, &mut tx, &request, &[]).await?),
        _ => Vec::new(),
    };
    let on_key_alone = key_alone_views(&mut tx, &request, &plan, &operation.steps).await?;
    let person = caller.person();
    let may_act = caller.may_act(Act::RequestRerun, &request.department);
    let may_confirm = may_act && request.status.next(RequestEvent::Submit).is_ok();
    let may_cancel = may_withdraw(&person, &ballot) && request.status.next(RequestEvent::Withdraw).is_ok();
    let waiting = request.status == RerunRequestStatus::PendingApproval;
    let asked = if waiting { asked_of(&mut tx, &request.department, &ballot).await? } else { Vec::new() };
    let required = state.config.approvals_required(&request.workflow);
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let department_name = state.config.department_name(&request.department, caller.reads_english());
    Ok(RerunRequestView {
        standing: standing(&person, &ballot, waiting, request.batch_id.is_some()),
        approvals: i64::from(approvals),
        required: i64::from(required),
        expires_at: request.expires_at,
        batch_id: request.batch_id.clone(),
        on_key_alone,
        asked,
        department_name,
        steps: operation.steps,
        makers,
        id: request.id,
        process_id: request.process_id,
        workflow: request.workflow,
        likely_cause: operation.failure_class,
        department: request.department,
        status: request.status,
        requester: request.requester,
        reason: request.reason,
        created_at: request.created_at,
        submitted_at: request.submitted_at,
        plan,
        plan_changes,
        checks: items.into_iter().map(|i| check_view(caller.locale, i)).collect(),
        may_confirm,
        may_cancel,
        decisions: decisions.into_iter().map(super::decisions::view).collect(),
    })
}

/// One of the five checks as the page shows it, in the reader's words.
fn check_view(l: words::i18n::Locale, i: ItemRow) -> CheckView {
    let found = Found::from_stored(&i.evidence);
    CheckView {
        number: i.number,
        label: Check::from_number(i.number).map_or("", |c| check_label_in(l, c)).to_string(),
        holds: i.holds,
        evidence: found_label_in(l, &found),
        evidence_quote: found.quote().map(str::to_string),
        confirmed_by: i.confirmed_by,
        confirmed_at: i.confirmed_at,
        comment: i.comment,
        cause_class: i.cause_class.as_deref().and_then(FailureClass::parse),
        cause_text: i.cause_text,
    }
}

/// Whom a request waiting for approval was asked of: the department's managers who are not its makers and have
/// not decided yet, by name.
async fn asked_of(tx: &mut db::Conn, department: &str, ballot: &Ballot) -> Result<Vec<String>, AppError> {
    let mut asked = Vec::new();
    for owner in db::notifications::owners_of(tx, department).await? {
        let maker_or_decided = ballot.makers.iter().any(|m| m.user_id == owner) || ballot.decided.contains(&owner);
        if let (false, Some(user)) = (maker_or_decided, db::users::by_id(tx, owner).await?) {
            asked.push(user.display_name);
        }
    }
    Ok(asked)
}

/// The steps the plan leaves out on the key alone: each one's content beside the record the outside system holds.
async fn key_alone_views(
    tx: &mut db::Conn,
    request: &RequestRow,
    plan: &RerunPlan,
    steps: &[contract::operations::StepView],
) -> Result<Vec<KeyAloneView>, AppError> {
    if plan.on_key_alone.is_empty() {
        return Ok(Vec::new());
    }
    let rows = db::operations::steps(tx, request.operation_id).await?;
    let views = plan.on_key_alone.iter().filter_map(|name| {
        let row = rows.iter().find(|r| &r.name == name)?;
        let evidence =
            steps.iter().find(|s| &s.name == name).and_then(|s| s.reconciliation.as_ref()).map(|r| &r.evidence);
        let content: serde_json::Map<_, _> =
            row.content_json.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
        let judged = plan.judged.iter().find(|j| &j.step == name);
        Some(KeyAloneView {
            step: name.clone(),
            content: domain::reconciliation::redacted(&content),
            record: evidence.map(|e| e.uncompared_record.clone()).unwrap_or_default(),
            external_id: evidence.and_then(|e| e.external_id.clone()),
            status_text: evidence.and_then(|e| e.status_text.clone()),
            confirmed_at: judged.map(|j| j.at),
            confirmed_by: judged.map(|j| j.by_name.clone()),
            comment: judged.map(|j| j.comment.clone()),
        })
    });
    Ok(views.collect())
}

/// Staff confirm one check with a comment; the fifth needs the cause class and text.
pub async fn confirm(
    state: &AppState,
    caller: &Caller,
    id: &str,
    number: i64,
    comment: &str,
    cause: Cause,
) -> Result<(), AppError> {
    let check = Check::from_number(number).ok_or_else(|| {
        AppError::invalid(Field::Number, Invalid::new(Rule::OutOfRange, "a check is numbered 1 to 5"))
    })?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let request = draft_to_change(&mut tx, caller, id).await?;
    let items = db::rerun_requests::items(&mut tx, id).await?;
    let item = items.iter().find(|i| i.number == number).ok_or(AppError::NotFound)?;
    let class = FailureClass::from_form(cause.class.as_deref()).map_err(|m| AppError::invalid(Field::CauseClass, m))?;
    let text = cause.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let prefill = Prefill { check, holds: item.holds, evidence: Found::from_stored(&item.evidence) };
    checklist::confirmation(&prefill, comment, class.zip(text))
        .map_err(|(field, message)| AppError::invalid(field, message))?;
    let (class, text) =
        if check == Check::CauseAnalysed { (class.map(FailureClass::as_str), text) } else { (None, None) };
    let confirmation =
        Confirmation { user_id: caller.user_id(), comment: comment.trim(), cause_class: class, cause_text: text };
    db::rerun_requests::confirm_item(&mut tx, id, number, &confirmation, now).await?;
    super::makers::took_part(&mut tx, caller, id, MakerPart::ConfirmedCheck, now).await?;
    let entry = AuditEntry::new(
        caller.actor(),
        AuditAction::RerunRequestCheckConfirmed,
        ObjectType::Operation,
        &request.process_id,
    )
    .department(Some(&request.department))
    .after(
        json!({"rerun_id": id, "check": number, "comment": comment.trim(), "cause_class": class, "cause_text": text}),
    );
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// All five checks confirmed and the plan still what it was: the request waits for the owners' approval.
pub async fn submit(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let request = request_for(&mut tx, caller, id).await?;
    caller.check_act(Act::RequestRerun, &request.department)?;
    not_in_batch(&request)?;
    let items = db::rerun_requests::items(&mut tx, id).await?;
    if items.len() != Check::ALL.len() || items.iter().any(|i| i.confirmed_at.is_none()) {
        return Err(AppError::invalid(
            Field::Checklist,
            Invalid::new(Rule::ChecksUnconfirmed, "confirm all five checks first"),
        ));
    }
    let check = plan_check(state, &mut tx, &request, &[]).await?;
    let unconfirmed = check.unconfirmed();
    if !unconfirmed.is_empty() {
        let why = format!("confirm first that what ran is what was meant: {}", unconfirmed.join(", "));
        return Err(AppError::invalid(Field::Steps, Invalid::new(Rule::KeyAloneUnconfirmed, why)));
    }
    if !check.holds() {
        return Err(plan_changed());
    }
    db::rerun_requests::set_expiry(&mut tx, id, now + approval_validity(state, &request, &request.plan()?)).await?;
    let moved = advance(&mut tx, &request, RequestEvent::Submit, now).await?;
    if !moved.request || !moved.operation {
        return Err(AppError::conflict(Conflict::NotDraft, "the request or the operation changed meanwhile"));
    }
    super::makers::took_part(&mut tx, caller, id, MakerPart::Submitted, now).await?;
    super::makers::verdicts_rested_on(&mut tx, &request, now).await?;
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::RerunRequestSubmitted, ObjectType::Operation, &request.process_id)
            .department(Some(&request.department))
            .before(json!({"status": request.status, "operation_status": OperationStatus::Stalled}))
            .after(json!({
                "rerun_id": id,
                "status": RerunRequestStatus::PendingApproval,
                "operation_status": OperationStatus::RerunPending,
            }));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    notify(&mut tx, state, &request, RerunNews::ApprovalAsked, Audience::Owners, now).await?;
    tx.commit().await?;
    Ok(())
}

/// One of its makers withdraws a request that is not approved yet; the operation is stalled again and a new
/// request can be made.
pub async fn cancel(state: &AppState, caller: &Caller, id: &str, why: &str) -> Result<(), AppError> {
    let why = reason(why).map_err(|m| AppError::invalid(Field::Reason, m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let request = db::rerun_requests::lock(&mut tx, id).await?.ok_or(AppError::NotFound)?;
    caller.check_act(Act::RequestRerun, &request.department)?;
    not_in_batch(&request)?;
    withdraw(&mut tx, state, caller, &request, (&why, &[]), now).await?;
    tx.commit().await?;
    Ok(())
}

/// One of its makers withdraws a request not approved yet, with its audit event (saying what changed, when a plan
/// is made again) and, when the owners were asked already, their notice.
async fn withdraw(
    tx: &mut db::Conn,
    state: &AppState,
    caller: &Caller,
    request: &RequestRow,
    (why, changes): (&str, &[rerun_plan::Change]),
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    if !may_withdraw(&caller.person(), &super::makers::request_ballot(tx, request).await?) {
        let id = &request.id;
        tracing::warn!(user = %caller.user().username, id, "withdrawal refused: only the request's makers withdraw it");
        return Err(AppError::Forbidden);
    }
    if !advance(tx, request, RequestEvent::Withdraw, now).await?.request {
        return Err(AppError::conflict(Conflict::NotCancellable, "the request changed meanwhile"));
    }
    let mut after = json!({"rerun_id": request.id, "status": RerunRequestStatus::Cancelled});
    if !changes.is_empty() {
        after["changes"] = json!(changes);
    }
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::RerunRequestCancelled, ObjectType::Operation, &request.process_id)
            .department(Some(&request.department))
            .before(json!({"rerun_id": request.id, "status": request.status}))
            .after(after)
            .reason(why);
    record(tx, entry, caller.request_id.as_deref(), now).await?;
    if request.status == RerunRequestStatus::PendingApproval {
        notify(tx, state, request, RerunNews::Withdrawn, Audience::Owners, now).await?;
    }
    Ok(())
}
