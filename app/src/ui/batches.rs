//! Bulk reruns: the list, and one batch's page — its dry run (totals, plans, the operations left out and why),
//! the request at a rate, the five checks confirmed once for all, the owners' decision, and the live progress
//! with pause, resume and cancel. Started from the board (`board::BulkRerun`).
use super::checklist::{Decisions, blocked_label, check_label, confirmation_fields, confirmed_line};
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{batch_status_label, local_time, locale, operation_status_label};
use crate::api::batches::{
    ConfirmBatchCheck, ControlBatch, DecideBatch, RequestBatch, SubmitBatch, follow_batch, list_batches, load_batch,
};
use crate::contract::AppError;
use crate::contract::batches::{BatchProgress, BatchSummary, BatchView, CheckSummary, MemberView};
use crate::contract::names::Names;
use crate::domain::approval::Standing;
use crate::domain::batches::{BatchStatus, MemberState, Progress, Reason};
use crate::domain::operations::OperationStatus;
use crate::domain::stall::FailureClass;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

/// More plans than this are folded away (the totals say what matters).
const FOLD_AFTER: usize = 20;

fn member_label(state: MemberState) -> &'static str {
    let l = locale();
    match state {
        MemberState::Waiting => td_string!(l, rerun.batch.member.waiting),
        MemberState::Eligible => td_string!(l, rerun.batch.member.eligible),
        MemberState::Done => td_string!(l, rerun.batch.member.done),
        MemberState::Blocked => td_string!(l, rerun.batch.member.blocked),
        MemberState::Requested => td_string!(l, rerun.batch.member.requested),
        MemberState::Dropped => td_string!(l, rerun.batch.member.dropped),
    }
}

fn progress_label(progress: Progress) -> &'static str {
    let l = locale();
    match progress {
        Progress::AwaitingApproval => td_string!(l, rerun.batch.progress.awaiting_approval),
        Progress::Waiting => td_string!(l, rerun.batch.progress.waiting),
        Progress::Sent => td_string!(l, rerun.batch.progress.sent),
        Progress::Succeeded => td_string!(l, rerun.batch.progress.succeeded),
        Progress::Failed => td_string!(l, rerun.batch.progress.failed),
        Progress::Unknown => td_string!(l, rerun.batch.progress.unknown),
        Progress::Withdrawn => td_string!(l, rerun.batch.progress.withdrawn),
    }
}

fn progress_key(progress: Progress) -> &'static str {
    match progress {
        Progress::AwaitingApproval => "awaiting-approval",
        Progress::Waiting => "waiting",
        Progress::Sent => "sent",
        Progress::Succeeded => "succeeded",
        Progress::Failed => "failed",
        Progress::Unknown => "unknown",
        Progress::Withdrawn => "withdrawn",
    }
}

/// Why an operation is not (or no longer) rerun, in words.
fn reason_text(reason: &Reason) -> String {
    let l = locale();
    match reason {
        Reason::NotStalled { status } => td_string!(
            l,
            rerun.batch.reason.not_stalled,
            status = OperationStatus::parse(status)
                .map_or_else(|| status.clone(), |s| operation_status_label(s).to_string())
        )
        .to_string(),
        Reason::Blocked { step, why } => {
            td_string!(l, rerun.batch.reason.blocked, step = step, why = blocked_label(*why)).to_string()
        }
        Reason::LookupError { message } => {
            td_string!(l, rerun.batch.reason.lookup_error, message = message).to_string()
        }
        Reason::CheckFails { number, evidence } => {
            let check = check_label(*number).unwrap_or("?");
            let evidence = crate::words::checklist::found_label_in(l, evidence);
            td_string!(l, rerun.batch.reason.check_fails, number = number, check = check, evidence = evidence)
                .to_string()
        }
        Reason::EvidenceChanged => td_string!(l, rerun.batch.reason.evidence_changed).to_string(),
        Reason::NothingToRerun { confirmed } => {
            td_string!(l, rerun.batch.reason.nothing_to_rerun, steps = confirmed.join(td_string!(l, rerun.separator)))
                .to_string()
        }
    }
}

/// Whether the page follows the batch by itself: during the look-ups, the wait for the owners and the dispatch,
/// and while a sent rerun has not finished yet.
fn follows(b: &BatchProgress) -> bool {
    use BatchStatus as S;
    matches!(b.status, S::Previewing | S::PendingApproval | S::Dispatching | S::Paused | S::Sent)
        || b.progress.iter().any(|(p, n)| matches!(p, Progress::Sent | Progress::Unknown) && *n > 0)
}

#[component]
pub fn BatchesPage() -> impl IntoView {
    let l = locale();
    let batches = resource(|| (), |_| list_batches());
    view! {
        <h1>{td_string!(l, rerun.batch.list_title)} <Help section=GuideSection::Batches /></h1>
        <p class="lead">{td_string!(l, rerun.batch.list_intro)}</p>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match batches.await {
                    Ok(list) if list.is_empty() => {
                        view! {
                            <p class="empty" data-testid="batches-empty">
                                {td_string!(l, rerun.batch.list_empty)}
                            </p>
                        }
                            .into_any()
                    }
                    Ok(list) => {
                        view! {
                            <table class="grid" data-testid="batches">
                                <caption class="sr-only">{td_string!(l, rerun.batch.list_title)}</caption>
                                <thead>
                                    <tr>
                                        <th scope="col">{td_string!(l, rerun.batch.field.reason)}</th>
                                        <th scope="col">{td_string!(l, rerun.batch.field.status)}</th>
                                        <th scope="col">{td_string!(l, rerun.batch.field.department)}</th>
                                        <th scope="col">{td_string!(l, rerun.batch.field.creator)}</th>
                                        <th scope="col">{td_string!(l, rerun.batch.field.created)}</th>
                                    </tr>
                                </thead>
                                <tbody>{list.into_iter().map(|b| view! { <SummaryRow b /> }).collect_view()}</tbody>
                            </table>
                        }
                            .into_any()
                    }
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn SummaryRow(b: BatchSummary) -> impl IntoView {
    let l = locale();
    view! {
        <tr data-batch=b.id.clone()>
            <td>
                <A href=format!("/batches/{}", b.id)>
                    <span data-entered>{b.reason.clone()}</span>
                </A>
            </td>
            <td>
                {batch_status_label(b.status)}
                {b
                    .awaits_me
                    .then(|| {
                        view! {
                            " "
                            <span class="badge warn" data-testid="awaits-me">
                                {td_string!(l, rerun.batch.awaits_me)}
                            </span>
                        }
                    })}
            </td>
            <td title=b.department.clone() data-entered>
                {b.department_name.clone()}
            </td>
            <td data-entered>{b.creator.clone()}</td>
            <td>{local_time(b.created_at)}</td>
        </tr>
    }
}

/// The page's actions; each one's completion reloads the batch.
#[derive(Clone, Copy)]
struct Actions {
    request: ServerAction<RequestBatch>,
    confirm: ServerAction<ConfirmBatchCheck>,
    submit: ServerAction<SubmitBatch>,
    decide: ServerAction<DecideBatch>,
    control: ServerAction<ControlBatch>,
}

#[component]
pub fn BatchPage() -> impl IntoView {
    let l = locale();
    let params = use_params_map();
    let actions = Actions {
        request: ServerAction::new(),
        confirm: ServerAction::new(),
        submit: ServerAction::new(),
        decide: ServerAction::new(),
        control: ServerAction::new(),
    };
    // Bumped when the page, following the batch, sees its status change.
    let reload = RwSignal::new(0usize);
    let batch = resource(
        move || {
            let a = actions;
            let versions = [
                a.request.version().get(),
                a.confirm.version().get(),
                a.submit.version().get(),
                a.decide.version().get(),
                a.control.version().get(),
                reload.get(),
            ];
            (params.get().get("id").unwrap_or_default(), versions)
        },
        |(id, _)| load_batch(id),
    );
    let names = super::names::use_names();
    view! {
        <Transition fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                let names = names.get().await;
                match batch.await {
                    Ok(b) => {
                        let b = named(b, &names);
                        view! { <Batch b actions reload /> }.into_any()
                    }
                    Err(AppError::NotFound) => view! { <h1>{td_string!(l, rerun.batch.not_found)}</h1> }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The members' workflows and steps by the names their reader knows.
fn named(mut b: BatchView, names: &Names) -> BatchView {
    let english = super::names::english();
    for m in &mut b.members {
        for (step, _) in &mut m.steps {
            *step = names.step(&m.workflow, step, english).to_string();
        }
        m.workflow = names.workflow(&m.workflow, english).to_string();
    }
    b
}

#[component]
fn Batch(b: BatchView, actions: Actions, reload: RwSignal<usize>) -> impl IntoView {
    let l = locale();
    // The live parts (look-ups, progress) follow the batch every 2 s; a change of status reloads the page.
    let live = RwSignal::new(BatchProgress::from(&b));
    if live.with_untracked(follows) {
        following(b.id.clone(), b.status, live, reload);
    }
    let id = b.id.clone();
    let previewing = b.status == BatchStatus::Previewing;
    let requested = !matches!(b.status, BatchStatus::Previewing | BatchStatus::Preview);
    let all_confirmed = b.checks.len() == 5 && b.checks.iter().all(|c| c.confirmed_at.is_some());
    let may_confirm = b.may_confirm;
    let (planned, others): (Vec<_>, Vec<_>) = b
        .members
        .iter()
        .cloned()
        .enumerate()
        .filter(|(_, m)| m.state != MemberState::Waiting)
        .partition(|(_, m)| m.state.is_planned());
    let (submit_id, decide_id, control_id) = (id.clone(), id.clone(), id.clone());
    let (checks, likely) = (b.checks.clone(), b.likely_cause);
    view! {
        // Named by its reason (what it is about); its ID, for searching, under the heading.
        <leptos_meta::Title text=format!("{}{} — Rerun Gate", td_string!(l, rerun.batch.title), b.reason) />
        <h1>
            {td_string!(l, rerun.batch.title)} <span data-entered>{b.reason.clone()}</span>
            <Help section=GuideSection::Batches />
        </h1>
        <p class="hint">
            <code>{b.id.clone()}</code>
        </p>
        <Facts b=b.clone() />
        {previewing.then(|| view! { <LookUps live /> })}
        {(!previewing).then(|| view! { <Totals b=b.clone() /> })}
        {(!planned.is_empty()).then(|| view! { <Planned members=planned live /> })}
        {(!others.is_empty()).then(|| view! { <Others members=others /> })}
        <super::batch_stages::Stages live />
        {b
            .may_request
            .then(|| view! { <RequestForm id=id.clone() max=b.max_rate_per_minute action=actions.request /> })}
        {requested.then(|| view! { <Checklist checks id=id.clone() may_confirm likely confirm=actions.confirm /> })}
        {(may_confirm && all_confirmed).then(|| view! { <SubmitForm id=submit_id action=actions.submit /> })}
        <Decided action=actions.decide />
        <OwnersDecision
            id=decide_id
            standing=b.standing
            operations=b.totals.operations
            calls=b.totals.calls.clone()
            action=actions.decide
        />
        {requested.then(|| view! { <ProgressPanel live /> })}
        {(b.may_pause || b.may_resume || b.may_cancel)
            .then(|| {
                view! {
                    <Controls
                        id=control_id
                        pause=b.may_pause
                        resume=b.may_resume
                        cancel=b.may_cancel
                        action=actions.control
                    />
                }
            })}
        {(!b.decisions.is_empty())
            .then(|| {
                view! {
                    <Decisions
                        decisions=b.decisions.clone()
                        title=td_string!(l, rerun.batch.decisions)
                        testid="batch-decisions"
                    />
                }
            })}
        <details class="card" data-testid="batch-history-part">
            <summary>{td_string!(l, rerun.batch.history)}</summary>
            <super::operation::TimelineList timeline=b.history.clone() testid="batch-history" />
        </details>
    }
}

/// Follows a moving batch every 2 s: the live parts take what changed; a change of status reloads the page.
fn following(id: String, status: BatchStatus, live: RwSignal<BatchProgress>, reload: RwSignal<usize>) {
    Effect::new(move |_| {
        let (id, status) = (id.clone(), status);
        let every = std::time::Duration::from_secs(2);
        let handle = set_interval_with_handle(
            move || {
                if !live.try_with_untracked(follows).unwrap_or(false) {
                    return;
                }
                let (id, status) = (id.clone(), status);
                leptos::task::spawn_local(async move {
                    if let Ok(now) = follow_batch(id).await {
                        if now.status == status {
                            live.try_set(now);
                        } else {
                            reload.try_update(|n| *n += 1);
                        }
                    }
                });
            },
            every,
        )
        .ok();
        on_cleanup(move || {
            if let Some(handle) = handle {
                handle.clear();
            }
        });
    });
}

/// The batch's facts: status, reason, department, creator, rate and deadline.
#[component]
fn Facts(b: BatchView) -> impl IntoView {
    let l = locale();
    view! {
        <dl class="facts card">
            <dt>{td_string!(l, rerun.batch.field.status)}</dt>
            <dd data-testid="batch-status">{batch_status_label(b.status)}</dd>
            <dt>{td_string!(l, rerun.batch.field.reason)}</dt>
            <dd data-entered>{b.reason.clone()}</dd>
            <dt>{td_string!(l, rerun.batch.field.department)}</dt>
            <dd title=b.department.clone() data-entered>
                {b.department_name.clone()}
            </dd>
            <dt>{td_string!(l, rerun.batch.field.creator)}</dt>
            <dd>
                <span data-entered>{b.creator.clone()}</span>
                " · "
                {local_time(b.created_at)}
            </dd>
            <dt>{td_string!(l, rerun.batch.field.rate)}</dt>
            <dd>{td_string!(l, rerun.batch.rate_value, rate = b.rate_per_minute).to_string()}</dd>
            {b
                .expires_at
                .map(|at| {
                    view! {
                        <dt>{td_string!(l, rerun.batch.field.expires)}</dt>
                        <dd>{local_time(at)}</dd>
                    }
                })}
        </dl>
    }
}

/// The five checks, confirmed once for the whole batch.
#[component]
fn Checklist(
    checks: Vec<CheckSummary>,
    id: String,
    may_confirm: bool,
    /// The cause the fifth check offers first.
    likely: Option<FailureClass>,
    confirm: ServerAction<ConfirmBatchCheck>,
) -> impl IntoView {
    let l = locale();
    let error = super::error_of(confirm);
    view! {
        <section aria-labelledby="checklist-title">
            <h2 id="checklist-title">{td_string!(l, rerun.batch.checklist)}</h2>
            <ol class="checklist" data-testid="batch-checklist">
                {checks
                    .into_iter()
                    .map(|c| view! { <CheckItem c id=id.clone() may_confirm likely confirm /> })
                    .collect_view()}
            </ol>
            <crate::ui::ErrorNote error />
        </section>
    }
}

/// Once the five checks are confirmed: the request for the owners' approval.
#[component]
fn SubmitForm(id: String, action: ServerAction<SubmitBatch>) -> impl IntoView {
    let l = locale();
    let error = super::error_of(action);
    view! {
        <ActionForm action attr:class="inline">
            <input type="hidden" name="id" value=id />
            <button type="submit" disabled=move || action.pending().get()>
                {td_string!(l, rerun.batch.submit)}
            </button>
            <crate::ui::ErrorNote error />
        </ActionForm>
    }
}

/// After a decision: what was recorded.
#[component]
fn Decided(action: ServerAction<DecideBatch>) -> impl IntoView {
    let l = locale();
    // The page reloads after a decision: it says what was recorded (the list below shows the decision).
    move || {
        matches!(action.value().get(), Some(Ok(()))).then(|| {
            view! {
                <p class="ok" role="status" data-testid="decided">
                    {td_string!(l, rerun.batch.decide.recorded)}
                </p>
            }
        })
    }
}

/// The owners' decision: the form to decide, or why the reader may not.
#[component]
fn OwnersDecision(
    id: String,
    standing: Standing,
    operations: usize,
    calls: Vec<(String, usize)>,
    action: ServerAction<DecideBatch>,
) -> impl IntoView {
    let l = locale();
    match standing {
        Standing::MayDecide => {
            let calls = calls.iter().map(|(system, n)| format!("{system} × {n}")).collect::<Vec<_>>();
            let sent = td_string!(
                l,
                rerun.batch.decide.sent,
                operations = operations,
                calls = calls.join(td_string!(l, rerun.separator))
            )
            .to_string();
            view! { <Decide id sent action /> }.into_any()
        }
        Standing::Maker(_) | Standing::NotOwner | Standing::Decided => view! {
            <p class="badge warn" data-testid="standing">
                {super::checklist::standing_label(standing)}
            </p>
        }
        .into_any(),
        Standing::NotWaiting | Standing::InBatch => ().into_any(),
    }
}

/// While the outside systems are asked: n of N looked up.
#[component]
fn LookUps(live: RwSignal<BatchProgress>) -> impl IntoView {
    let l = locale();
    view! {
        <section class="card batch-part" aria-labelledby="lookup-title" data-testid="batch-lookup">
            <h2 id="lookup-title">{td_string!(l, rerun.batch.lookup.title)}</h2>
            <progress
                aria-labelledby="lookup-title"
                max=move || live.with(|v| v.selected.max(1))
                value=move || live.with(|v| v.looked_up)
            ></progress>
            <p role="status">
                {move || {
                    live.with(|v| {
                        td_string!(l, rerun.batch.lookup.progress, done = v.looked_up, total = v.selected).to_string()
                    })
                }}
            </p>
            <p class="hint">{td_string!(l, rerun.batch.lookup.hint)}</p>
        </section>
    }
}

#[component]
fn Totals(b: BatchView) -> impl IntoView {
    let l = locale();
    let count = |n: usize| td_string!(l, rerun.batch.count, count = n).to_string();
    let calls = if b.totals.calls.is_empty() {
        view! { <span>{td_string!(l, rerun.batch.totals.no_calls)}</span> }.into_any()
    } else {
        view! {
            <ul class="plain" data-testid="total-calls">
                {b
                    .totals
                    .calls
                    .iter()
                    .map(|(system, n)| {
                        view! {
                            <li>
                                {td_string!(l, rerun.batch.totals.calls_value, system = system, count = n).to_string()}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <section class="card batch-part" aria-labelledby="totals-title" data-testid="batch-totals">
            <h2 id="totals-title">{td_string!(l, rerun.batch.totals.title)}</h2>
            {(b.status == BatchStatus::Preview)
                .then(|| view! { <p class="hint">{td_string!(l, rerun.batch.totals.nothing_sent)}</p> })}
            <dl class="facts">
                <dt>{td_string!(l, rerun.batch.totals.operations)}</dt>
                <dd data-testid="total-operations">{count(b.totals.operations)}</dd>
                <dt>{td_string!(l, rerun.batch.totals.calls)}</dt>
                <dd>{calls}</dd>
                <dt>{td_string!(l, rerun.batch.totals.selected)}</dt>
                <dd>{count(b.selected)}</dd>
                <dt>{td_string!(l, rerun.batch.totals.eligible)}</dt>
                <dd data-testid="total-eligible">{count(b.eligible + b.requested)}</dd>
                <dt>{td_string!(l, rerun.batch.totals.blocked)}</dt>
                <dd data-testid="total-blocked">{count(b.blocked)}</dd>
                <dt>{td_string!(l, rerun.batch.totals.done)}</dt>
                <dd data-testid="total-done">{count(b.nothing_to_rerun)}</dd>
                <dt>{td_string!(l, rerun.batch.totals.dropped)}</dt>
                <dd data-testid="total-dropped">{count(b.dropped)}</dd>
            </dl>
        </section>
    }
}

/// The operations to rerun with their plans (and, once sent, where each stands).
#[component]
fn Planned(members: Vec<(usize, MemberView)>, live: RwSignal<BatchProgress>) -> impl IntoView {
    let l = locale();
    let open = members.len() <= FOLD_AFTER;
    let summary = td_string!(l, rerun.batch.members.planned, count = members.len()).to_string();
    view! {
        <details class="card" open=open data-testid="batch-planned">
            <summary>{summary}</summary>
            <table class="grid">
                <thead>
                    <tr>
                        <th scope="col">{td_string!(l, rerun.batch.members.process_id)}</th>
                        <th scope="col">{td_string!(l, rerun.batch.members.workflow)}</th>
                        <th scope="col">{td_string!(l, rerun.batch.members.state)}</th>
                        <th scope="col">{td_string!(l, rerun.batch.members.steps)}</th>
                    </tr>
                </thead>
                <tbody>
                    {members
                        .into_iter()
                        .map(|(index, m)| {
                            let state = m.state;
                            let shown = move || {
                                live.with(|v| v.members.get(index).copied().flatten())
                                    .map_or_else(|| member_label(state), progress_label)
                            };
                            let held = move || live.with(|v| v.held_by.get(index).cloned().flatten());
                            let pid = m.process_id.clone();
                            view! {
                                <tr data-member=pid.clone()>
                                    <td>
                                        <A href=format!("/operations/{pid}")>{m.process_id}</A>
                                    </td>
                                    <td>{m.workflow.clone()}</td>
                                    <td>
                                        {shown}
                                        {move || {
                                            held()
                                                .map(|e| {
                                                    view! {
                                                        <br />
                                                        <small class="error" data-testid="held-by">
                                                            {e}
                                                        </small>
                                                    }
                                                })
                                        }}
                                    </td>
                                    <td>
                                        <ul class="plain">
                                            {m
                                                .steps
                                                .iter()
                                                .map(|(step, key)| {
                                                    view! { <li>{step.clone()} " " <code>{key.clone()}</code></li> }
                                                })
                                                .collect_view()}
                                        </ul>
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </details>
    }
}

/// Blocked, dropped and nothing-to-rerun operations, each with its reasons in words.
#[component]
fn Others(members: Vec<(usize, MemberView)>) -> impl IntoView {
    let l = locale();
    view! {
        <table class="grid" data-testid="batch-blocked">
            <caption>{td_string!(l, rerun.batch.members.others)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, rerun.batch.members.process_id)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.members.workflow)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.members.state)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.members.reasons)}</th>
                </tr>
            </thead>
            <tbody>
                {members
                    .into_iter()
                    .map(|(_, m)| {
                        let pid = m.process_id.clone();
                        view! {
                            <tr data-member=pid.clone()>
                                <td>
                                    <A href=format!("/operations/{pid}")>{m.process_id}</A>
                                </td>
                                <td>{m.workflow}</td>
                                <td>{member_label(m.state)}</td>
                                <td>
                                    <ul class="plain">
                                        {m.reasons.iter().map(|r| view! { <li>{reason_text(r)}</li> }).collect_view()}
                                    </ul>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn RequestForm(id: String, max: i64, action: ServerAction<RequestBatch>) -> impl IntoView {
    let l = locale();
    let error = super::error_of(action);
    view! {
        <section class="card batch-part" aria-labelledby="request-title">
            <h2 id="request-title">{td_string!(l, rerun.batch.request.title)}</h2>
            <p>{td_string!(l, rerun.batch.request.intro)}</p>
            <ActionForm action attr:class="form">
                <input type="hidden" name="id" value=id />
                <label for="batch-rate">{td_string!(l, rerun.batch.request.rate, max = max).to_string()}</label>
                <input
                    id="batch-rate"
                    name="rate_per_minute"
                    type="number"
                    min="1"
                    max=max.to_string()
                    inputmode="numeric"
                />
                <button type="submit" disabled=move || action.pending().get()>
                    {td_string!(l, rerun.batch.request.submit)}
                </button>
                <crate::ui::ErrorNote error />
            </ActionForm>
        </section>
    }
}

/// One of the five checks for the whole batch: how many pass it, who confirmed it, or the form to confirm it.
#[component]
fn CheckItem(
    c: CheckSummary,
    id: String,
    may_confirm: bool,
    likely: Option<FailureClass>,
    confirm: ServerAction<ConfirmBatchCheck>,
) -> impl IntoView {
    let l = locale();
    let number = c.number;
    let confirmed =
        c.confirmed_at.map(|at| confirmed_line(&c.confirmed_by, at, &c.comment, &c.cause_class, &c.cause_text));
    let form = (may_confirm && c.confirmed_at.is_none()).then(move || {
        view! {
            <ActionForm action=confirm attr:class="form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="number" value=number.to_string() />
                {confirmation_fields(number, likely)}
                <button type="submit" disabled=move || confirm.pending().get()>
                    {td_string!(l, rerun.check.confirm)}
                </button>
            </ActionForm>
        }
    });
    let all_pass = c.passing == c.of;
    view! {
        <li data-check=number data-testid=format!("check-{number}")>
            <strong>{check_label(number).unwrap_or("?")}</strong>
            <p class=if all_pass { "system ok" } else { "system bad" } data-testid="passing">
                {td_string!(l, rerun.batch.passing, passing = c.passing, of = c.of).to_string()}
            </p>
            {confirmed}
            {form}
        </li>
    }
}

/// An owner approves (a comment is optional) or rejects (with a reason) once for the whole batch.
#[component]
fn Decide(id: String, sent: String, action: ServerAction<DecideBatch>) -> impl IntoView {
    let l = locale();
    super::restore_kept_fields();
    let error = super::error_of(action);
    let reject_id = id.clone();
    view! {
        <section class="card batch-part decision" aria-labelledby="decide-title" data-testid="batch-decide">
            <h2 id="decide-title">{td_string!(l, rerun.batch.decide.title)}</h2>
            <ActionForm action attr:class="form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="approve" value="true" />
                <label for="approve-comment">{td_string!(l, rerun.batch.decide.comment)}</label>
                <textarea id="approve-comment" name="comment" rows="2" data-keep></textarea>
                // Not sent: the browser holds the approval until the approver ticks what will be sent.
                <label class="check">
                    <input type="checkbox" id="confirm-sent" required data-testid="confirm-sent" data-keep />
                    {sent}
                </label>
                <button type="submit" disabled=move || action.pending().get()>
                    {td_string!(l, rerun.batch.decide.approve)}
                </button>
            </ActionForm>
            <ActionForm action attr:class="form">
                <input type="hidden" name="id" value=reject_id />
                <input type="hidden" name="approve" value="false" />
                <label for="reject-comment">{td_string!(l, rerun.batch.decide.reject_reason)}</label>
                <textarea id="reject-comment" name="comment" rows="2" required data-keep></textarea>
                <button type="submit" class="secondary" disabled=move || action.pending().get()>
                    {td_string!(l, rerun.batch.decide.reject)}
                </button>
            </ActionForm>
            <crate::ui::ErrorNote error />
        </section>
    }
}

/// Where the requested operations stand: a count per state and a bar of the finished ones.
#[component]
fn ProgressPanel(live: RwSignal<BatchProgress>) -> impl IntoView {
    let l = locale();
    let count = move |p: Progress| live.with(|v| v.progress.iter().find(|(q, _)| *q == p).map_or(0, |(_, n)| *n));
    let total = move || live.with(|v| v.progress.iter().map(|(_, n)| n).sum::<i64>());
    let finished = move || Progress::ALL.into_iter().filter(|p| p.has_ended()).map(count).sum::<i64>();
    view! {
        <section class="card batch-part" aria-labelledby="progress-title" data-testid="batch-progress">
            <h2 id="progress-title">{td_string!(l, rerun.batch.progress.title)}</h2>
            <progress
                aria-label=td_string!(l, rerun.batch.progress.bar)
                max=move || total().max(1)
                value=finished
            ></progress>
            <p data-testid="progress-finished">
                {move || td_string!(l, rerun.batch.progress.finished, done = finished(), total = total()).to_string()}
            </p>
            <ul class="plain progress-counts">
                {Progress::ALL
                    .into_iter()
                    .map(|p| {
                        view! {
                            <li data-progress=progress_key(
                                p,
                            )>{progress_label(p)} ": " <strong>{move || count(p)}</strong></li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}

/// Pause, resume or cancel, with a reason (the pressed button says which).
#[component]
fn Controls(id: String, pause: bool, resume: bool, cancel: bool, action: ServerAction<ControlBatch>) -> impl IntoView {
    let l = locale();
    let error = super::error_of(action);
    view! {
        <section class="card batch-part" aria-labelledby="control-title" data-testid="batch-controls">
            <h2 id="control-title">{td_string!(l, rerun.batch.control.title)}</h2>
            <p class="hint">{td_string!(l, rerun.batch.control.hint)}</p>
            <ActionForm action attr:class="form">
                <input type="hidden" name="id" value=id />
                <label for="control-reason">{td_string!(l, rerun.batch.control.reason)}</label>
                <textarea id="control-reason" name="reason" rows="2" required></textarea>
                <div class="buttons">
                    {pause
                        .then(|| {
                            view! {
                                <button type="submit" name="control" value="pause">
                                    {td_string!(l, rerun.batch.control.pause)}
                                </button>
                            }
                        })}
                    {resume
                        .then(|| {
                            view! {
                                <button type="submit" name="control" value="resume">
                                    {td_string!(l, rerun.batch.control.resume)}
                                </button>
                            }
                        })}
                    {cancel
                        .then(|| {
                            view! {
                                <button type="submit" class="secondary" name="control" value="cancel">
                                    {td_string!(l, rerun.batch.control.cancel)}
                                </button>
                            }
                        })}
                </div>
            </ActionForm>
            <crate::ui::ErrorNote error />
        </section>
    }
}
