//! A rerun request: its computed plan and the five checks, each with what the system found and who confirmed
//! it; then the request for approval. Started from the operation's page.
use super::checklist::{
    Decisions, blocked_label, check_label, confirmation_fields, confirmed_line, maker_part_label, standing_label,
};
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{local_time, locale, status_label};
use super::names::{Coded, StepNames};
use crate::api::reruns::{
    CancelRerunRequest, ConfirmCheck, ConfirmKeyAlone, DecideRerun, MakePlanAgain, RequestApproval, StartRerunRequest,
    load_rerun_request,
};
use crate::contract::operations::StepView;
use crate::contract::reruns::{CheckView, KeyAloneView, RerunRequestView, StartAnswer};
use crate::domain::approval::Standing;
use crate::domain::rerun_plan::{Change, PlannedStep};
use crate::domain::stall::FailureClass;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

/// On a stalled operation's page: start a request, or see why one cannot be made.
#[component]
pub fn StartRerun(process_id: String) -> impl IntoView {
    let l = super::labels::locale();
    let start = ServerAction::<StartRerunRequest>::new();
    follow_created(move || start.value().get());
    let outcome = move || start_outcome(start.value().get());
    view! {
        <details class="card" open>
            <summary>{td_string!(l, rerun.start.title)}</summary>
            <p>{td_string!(l, rerun.start.intro)}</p>
            <ActionForm action=start attr:class="form">
                <input type="hidden" name="process_id" value=process_id />
                <label for="rerun-reason">{td_string!(l, rerun.start.reason)}</label>
                <textarea id="rerun-reason" name="reason" required rows="2"></textarea>
                <button type="submit" disabled=move || start.pending().get()>
                    {td_string!(l, rerun.start.submit)}
                </button>
            </ActionForm>
            {outcome}
        </details>
    }
}

/// What a start (or a plan made again) came to, when it did not lead to a new request's page.
fn start_outcome(answer: Option<Result<StartAnswer, crate::contract::AppError>>) -> AnyView {
    let l = super::labels::locale();
    match answer {
        Some(Ok(StartAnswer::Blocked { reasons })) => view! {
            <div class="error" role="alert" data-testid="plan-blocked">
                <p>{td_string!(l, rerun.start.blocked)}</p>
                <ul>
                    {reasons
                        .into_iter()
                        .map(|b| {
                            view! {
                                <li>
                                    <strong>{b.step}</strong>
                                    ": "
                                    {blocked_label(b.why)}
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </div>
        }
        .into_any(),
        Some(Ok(StartAnswer::NothingToRerun { confirmed })) => view! {
            <p class="ok" role="status">
                {td_string!(l, rerun.start.nothing_to_rerun, steps = confirmed.join(td_string!(l, rerun.separator)))
                    .to_string()}
            </p>
        }
        .into_any(),
        Some(Err(e)) => view! {
            <p class="error" role="alert">
                {crate::ui::error_message(&e)}
            </p>
        }
        .into_any(),
        _ => ().into_any(),
    }
}

/// Goes to a request just created.
fn follow_created(answer: impl Fn() -> Option<Result<StartAnswer, crate::contract::AppError>> + Send + Sync + 'static) {
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(StartAnswer::Created { id })) = answer() {
            navigate(&format!("/reruns/{id}"), Default::default());
        }
    });
}

/// A draft whose facts changed since its plan was made: what changed, step by step, before and after, and one
/// press to make the plan again on the facts as they are (never a dead end).
#[component]
fn PlanChanged(id: String, changes: Vec<Change>, names: StepNames, may_make_again: bool) -> impl IntoView {
    let l = super::labels::locale();
    let again = ServerAction::<MakePlanAgain>::new();
    follow_created(move || again.value().get());
    let lines: Vec<String> =
        changes.iter().flat_map(|c| crate::words::plan::plan_change_in(l, c, &|s: &str| names.of(s))).collect();
    view! {
        <div class="error card" role="alert" data-testid="plan-changed">
            <p>
                <strong>{td_string!(l, rerun.changed.title)}</strong>
            </p>
            <ul>{lines.into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}</ul>
            {may_make_again
                .then(|| {
                    view! {
                        <p>{td_string!(l, rerun.changed.again_intro)}</p>
                        <ActionForm action=again attr:class="inline">
                            <input type="hidden" name="id" value=id.clone() />
                            <button type="submit" disabled=move || again.pending().get()>
                                {td_string!(l, rerun.changed.again)}
                            </button>
                        </ActionForm>
                        {move || start_outcome(again.value().get())}
                    }
                })}
        </div>
    }
}

#[component]
pub fn RerunRequestPage() -> impl IntoView {
    let l = super::labels::locale();
    let params = use_params_map();
    let confirm = ServerAction::<ConfirmCheck>::new();
    let key_alone = ServerAction::<ConfirmKeyAlone>::new();
    let submit = ServerAction::<RequestApproval>::new();
    let cancel = ServerAction::<CancelRerunRequest>::new();
    let decide = Decide { approve: ServerAction::new(), reject: ServerAction::new() };
    let request = resource(
        move || {
            let versions = [
                confirm.version().get(),
                key_alone.version().get(),
                submit.version().get(),
                cancel.version().get(),
                decide.approve.version().get(),
                decide.reject.version().get(),
            ];
            (params.get().get("id").unwrap_or_default(), versions)
        },
        |(id, _)| load_rerun_request(id),
    );
    let names = super::names::use_names();
    view! {
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                let names = names.get().await;
                match request.await {
                    Ok(r) => {
                        let names = StepNames::new(names, &r.workflow);
                        view! { <Request r names confirm key_alone submit cancel decide /> }.into_any()
                    }
                    Err(crate::contract::AppError::NotFound) => {
                        view! { <h1>{td_string!(l, rerun.request.not_found)}</h1> }.into_any()
                    }
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The two decisions of the decision page, apart, so that the page can say which one was taken.
#[derive(Clone, Copy)]
struct Decide {
    approve: ServerAction<DecideRerun>,
    reject: ServerAction<DecideRerun>,
}

#[component]
fn Request(
    r: RerunRequestView,
    names: StepNames,
    confirm: ServerAction<ConfirmCheck>,
    key_alone: ServerAction<ConfirmKeyAlone>,
    submit: ServerAction<RequestApproval>,
    cancel: ServerAction<CancelRerunRequest>,
    decide: Decide,
) -> impl IntoView {
    let l = super::labels::locale();
    let all_confirmed = r.checks.len() == 5
        && r.checks.iter().all(|c| c.confirmed_at.is_some())
        && r.on_key_alone.iter().all(|k| k.confirmed_at.is_some());
    let (id, may_confirm) = (r.id.clone(), r.may_confirm);
    let error_of_submit = super::error_of(submit);
    let may_cancel = r.may_cancel;
    let cancel_id = r.id.clone();
    let planned: Vec<(String, String)> =
        r.plan.steps.iter().map(|s| (names.of(&s.name), s.idempotency_key.clone())).collect();
    view! {
        // Named by what it is about; its ID, for searching, under the heading.
        <leptos_meta::Title text=format!("{}{} — Rerun Gate", td_string!(l, rerun.request.title), r.process_id) />
        <h1>{td_string!(l, rerun.request.title)} {r.process_id.clone()} <Help section=GuideSection::Request /></h1>
        <p class="hint">
            <code>{r.id.clone()}</code>
        </p>
        {(!r.plan_changes.is_empty())
            .then(|| {
                let (id, changes, names) = (r.id.clone(), r.plan_changes.clone(), names.clone());
                view! { <PlanChanged id changes names may_make_again=r.may_cancel /> }
            })}
        <Facts r=r.clone() />
        <super::steps_table::StepsTable steps=r.steps.clone() names=names.clone() />
        <Plan steps=r.plan.steps.clone() all=r.steps.clone() names=names.clone() />
        {r
            .on_key_alone
            .iter()
            .cloned()
            .map(|k| {
                let name = names.of(&k.step);
                view! { <KeyAlone k name id=id.clone() may_confirm action=key_alone /> }
            })
            .collect_view()}
        <Checklist checks=r.checks id=id.clone() may_confirm likely=r.likely_cause confirm />
        {(!r.decisions.is_empty())
            .then(|| {
                view! {
                    <Decisions
                        decisions=r.decisions.clone()
                        title=td_string!(l, rerun.request.decisions)
                        testid="decisions"
                    />
                }
            })}
        <DecisionPanel id=r.id.clone() standing=r.standing batch_id=r.batch_id.clone() planned decide />
        {(may_confirm && all_confirmed)
            .then(|| {
                view! {
                    <ActionForm action=submit attr:class="inline">
                        <input type="hidden" name="id" value=id.clone() />
                        <button type="submit" disabled=move || submit.pending().get()>
                            {td_string!(l, rerun.request.request_approval)}
                        </button>
                        <crate::ui::ErrorNote error=error_of_submit />
                    </ActionForm>
                }
            })}
        {may_cancel.then(|| view! { <Withdraw id=cancel_id cancel /> })}
    }
}

/// The request's facts: status, operation, requester, reason, makers and approvals so far.
#[component]
fn Facts(r: RerunRequestView) -> impl IntoView {
    let l = super::labels::locale();
    let makers = r.makers.iter().map(|m| format!("{} ({})", m.name, maker_part_label(m.part))).collect::<Vec<_>>();
    view! {
        <dl class="facts card">
            <dt>{td_string!(l, rerun.request.status)}</dt>
            <dd data-testid="request-status">{status_label(r.status)}</dd>
            <dt>{td_string!(l, rerun.request.operation)}</dt>
            <dd>
                <A href=format!("/operations/{}", r.process_id)>{r.process_id.clone()}</A>
                " · "
                <span title=r.department.clone() data-entered>
                    {r.department_name.clone()}
                </span>
            </dd>
            <dt>{td_string!(l, rerun.request.requester)}</dt>
            <dd>
                <span data-entered>{r.requester.clone()}</span>
                " · "
                {local_time(r.created_at)}
            </dd>
            <dt>{td_string!(l, rerun.request.reason)}</dt>
            <dd data-entered>{r.reason.clone()}</dd>
            <dt>{td_string!(l, rerun.request.makers)}</dt>
            <dd data-testid="makers" data-entered>
                {makers.join(td_string!(l, rerun.separator))}
            </dd>
            {(!r.asked.is_empty())
                .then(|| {
                    view! {
                        <dt>{td_string!(l, rerun.request.asked)}</dt>
                        <dd data-testid="asked" data-entered>
                            {r.asked.join(td_string!(l, rerun.separator))}
                        </dd>
                    }
                })}
            <dt>{td_string!(l, rerun.request.approvals)}</dt>
            <dd data-testid="approvals">
                {td_string!(l, rerun.approvals.count, approvals = r.approvals, required = r.required).to_string()}
                {r
                    .expires_at
                    .map(|at| {
                        view! {
                            " · "
                            {td_string!(l, rerun.request.deadline, at = local_time(at)).to_string()}
                        }
                    })}
            </dd>
        </dl>
    }
}

/// The plan: each step to rerun with its original idempotency key; then each step it leaves out, with what the
/// outside system says of it and what that rests on (a step is never left out silently).
#[component]
fn Plan(steps: Vec<PlannedStep>, all: Vec<StepView>, names: StepNames) -> impl IntoView {
    let l = super::labels::locale();
    let left_out: Vec<StepView> = all.into_iter().filter(|s| !steps.iter().any(|p| p.name == s.name)).collect();
    view! {
        <table class="grid" data-testid="plan">
            <caption>{td_string!(l, rerun.request.plan)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, rerun.request.step)}</th>
                    <th scope="col">{td_string!(l, rerun.request.idempotency_key)}</th>
                </tr>
            </thead>
            <tbody>
                {steps
                    .iter()
                    .map(|s| {
                        view! {
                            <tr>
                                <td>
                                    <Coded name=names.of(&s.name) code=s.name.clone() />
                                </td>
                                <td>
                                    <code>{s.idempotency_key.clone()}</code>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        {(!left_out.is_empty()).then(|| view! { <LeftOut steps=left_out names /> })}
    }
}

/// The steps the plan leaves out: completed, or shown executed by the outside system (their flag then set), each
/// with its verdict and the evidence it rests on.
#[component]
fn LeftOut(steps: Vec<StepView>, names: StepNames) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <table class="grid" data-testid="left-out">
            <caption>{td_string!(l, rerun.request.left_out)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, rerun.request.step)}</th>
                    <th scope="col">{td_string!(l, rerun.request.left_out_verdict)}</th>
                    <th scope="col">{td_string!(l, rerun.request.left_out_flag)}</th>
                </tr>
            </thead>
            <tbody>
                {steps
                    .into_iter()
                    .map(|s| {
                        let flag = match s.completed_at {
                            Some(at) => td_string!(l, rerun.request.flag_set, at = local_time(at)).to_string(),
                            None => td_string!(l, rerun.request.flag_not_set).to_string(),
                        };
                        let evidence = s.reconciliation.map(|r| r.evidence.summary).unwrap_or_default();
                        view! {
                            <tr>
                                <td>
                                    <Coded name=names.of(&s.name) code=s.name />
                                </td>
                                <td>
                                    {super::labels::verdict_label(s.latest_verdict)} <br /> <small>{evidence}</small>
                                </td>
                                <td>{flag}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// A step left out on the key alone: its content beside the outside record, field by field, and a person's
/// confirmation that what ran is what was meant.
#[component]
fn KeyAlone(
    k: KeyAloneView,
    /// The step's name as its reader knows it.
    name: String,
    id: String,
    may_confirm: bool,
    action: ServerAction<ConfirmKeyAlone>,
) -> impl IntoView {
    let l = super::labels::locale();
    let error = super::error_of(action);
    let mut fields: Vec<&String> = k.content.keys().chain(k.record.keys()).collect();
    fields.sort();
    fields.dedup();
    let value = shown_value;
    let rows = fields
        .into_iter()
        .map(|f| {
            view! {
                <tr>
                    <th scope="row">{f.clone()}</th>
                    <td data-entered>{value(k.content.get(f))}</td>
                    <td data-entered>{value(k.record.get(f))}</td>
                </tr>
            }
        })
        .collect_view();
    let record_id = td_string!(
        l,
        rerun.request.key_alone_record_id,
        id = k.external_id.clone().unwrap_or_else(|| "—".into()),
        status = k.status_text.clone().unwrap_or_else(|| "—".into())
    )
    .to_string();
    let (step, field_id) = (k.step.clone(), format!("key-alone-{}", k.step));
    let outcome = match (k.confirmed_at, may_confirm) {
        (Some(at), _) => judged(&k, at),
        (None, true) => view! {
            <ActionForm action attr:class="form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="step" value=step />
                <label for=field_id.clone()>{td_string!(l, rerun.request.key_alone_comment)}</label>
                <textarea id=field_id name="comment" required rows="2"></textarea>
                <button type="submit" disabled=move || action.pending().get()>
                    {td_string!(l, rerun.request.key_alone_confirm)}
                </button>
                <crate::ui::ErrorNote error />
            </ActionForm>
        }
        .into_any(),
        (None, false) => {
            view! { <p class="system bad">{td_string!(l, rerun.request.key_alone_waiting)}</p> }.into_any()
        }
    };
    view! {
        <section class="card" data-testid="key-alone" data-step=k.step.clone()>
            <h2>{td_string!(l, rerun.request.key_alone_title, step = name).to_string()}</h2>
            <p>{td_string!(l, rerun.request.key_alone_intro)}</p>
            <table class="grid">
                <caption>{record_id}</caption>
                <thead>
                    <tr>
                        <th scope="col">{td_string!(l, rerun.request.key_alone_field)}</th>
                        <th scope="col">{td_string!(l, rerun.request.key_alone_content)}</th>
                        <th scope="col">{td_string!(l, rerun.request.key_alone_record)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            {outcome}
        </section>
    }
}

/// Who confirmed a step left out on the key alone on this request, when, and what they compared.
fn judged(k: &KeyAloneView, at: chrono::DateTime<chrono::Utc>) -> AnyView {
    let l = super::labels::locale();
    let by = k.confirmed_by.clone().unwrap_or_default();
    let confirmed = td_string!(l, rerun.request.key_alone_confirmed, at = local_time(at), by = by).to_string();
    view! {
        <p class="ok" data-testid="key-alone-confirmed">
            {confirmed}
        </p>
        <blockquote data-entered>{k.comment.clone().unwrap_or_default()}</blockquote>
    }
    .into_any()
}

/// A field's value as read: a text as it is, anything else as JSON, none as "—".
fn shown_value(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "—".to_string(),
    }
}

/// The five checks, each with what the system found and who confirmed it.
#[component]
fn Checklist(
    checks: Vec<CheckView>,
    id: String,
    may_confirm: bool,
    /// The cause the fifth check offers first.
    likely: Option<FailureClass>,
    confirm: ServerAction<ConfirmCheck>,
) -> impl IntoView {
    let l = super::labels::locale();
    let error = super::error_of(confirm);
    view! {
        <section aria-labelledby="checklist-title">
            <h2 id="checklist-title">{td_string!(l, rerun.request.checklist)}</h2>
            <ol class="checklist" data-testid="checklist">
                {checks
                    .into_iter()
                    .map(|c| view! { <CheckItem c id=id.clone() may_confirm likely confirm /> })
                    .collect_view()}
            </ol>
            <crate::ui::ErrorNote error />
        </section>
    }
}

/// A maker withdraws the request, with a reason, while it is not approved yet.
#[component]
fn Withdraw(id: String, cancel: ServerAction<CancelRerunRequest>) -> impl IntoView {
    let l = super::labels::locale();
    let error = super::error_of(cancel);
    view! {
        <details class="card">
            <summary>{td_string!(l, rerun.request.withdraw_title)}</summary>
            <ActionForm action=cancel attr:class="form">
                <input type="hidden" name="id" value=id />
                <label for="cancel-reason">{td_string!(l, rerun.request.withdraw_reason)}</label>
                <textarea id="cancel-reason" name="reason" required rows="2"></textarea>
                <crate::ui::ErrorNote error />
                <button type="submit" class="secondary">
                    {td_string!(l, rerun.request.withdraw)}
                </button>
            </ActionForm>
        </details>
    }
}

#[component]
fn CheckItem(
    c: CheckView,
    id: String,
    may_confirm: bool,
    likely: Option<FailureClass>,
    confirm: ServerAction<ConfirmCheck>,
) -> impl IntoView {
    let l = super::labels::locale();
    let number = c.number;
    let system = if c.holds { td_string!(l, rerun.check.holds) } else { td_string!(l, rerun.check.fails) };
    let confirmed =
        c.confirmed_at.map(|at| confirmed_line(&c.confirmed_by, at, &c.comment, &c.cause_class, &c.cause_text));
    let form = (may_confirm && c.confirmed_at.is_none() && c.holds).then(move || {
        view! {
            <ActionForm action=confirm attr:class="form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="number" value=number.to_string() />
                {confirmation_fields(number, likely)}
                <button type="submit">{td_string!(l, rerun.check.confirm)}</button>
            </ActionForm>
        }
    });
    let label = check_label(number).map_or(c.label, str::to_string);
    view! {
        <li data-check=number>
            <strong>{label}</strong>
            <p class=if c.holds { "system ok" } else { "system bad" }>{system}</p>
            <p class="evidence">
                {td_string!(l, rerun.check.evidence, evidence = c.evidence).to_string()}
                {c
                    .evidence_quote
                    .map(|q| {
                        view! {
                            ": "
                            <samp>{q}</samp>
                        }
                    })}
            </p>
            {confirmed}
            {form}
        </li>
    }
}

/// Approve, with what will be sent confirmed, or reject with a reason; or why the reader may not decide.
#[component]
fn DecisionPanel(
    id: String,
    standing: Standing,
    batch_id: Option<String>,
    planned: Vec<(String, String)>,
    decide: Decide,
) -> impl IntoView {
    let l = locale();
    let Decide { approve, reject } = decide;
    let done = move || match (approve.value().get(), reject.value().get()) {
        (Some(Ok(())), _) => Some(td_string!(l, rerun.decide.approved)),
        (_, Some(Ok(()))) => Some(td_string!(l, rerun.decide.rejected)),
        _ => None,
    };
    let body = match standing {
        Standing::MayDecide => view! { <DecideForms id planned decide /> }.into_any(),
        Standing::InBatch => view! {
            <p data-testid="standing">
                {td_string!(l, rerun.standing.in_batch)} " "
                {batch_id
                    .map(|b| view! { <A href=format!("/batches/{b}")>{td_string!(l, rerun.standing.open_batch)}</A> })}
            </p>
        }
        .into_any(),
        other => view! {
            <p class="badge warn" data-testid="standing">
                {standing_label(other)}
            </p>
        }
        .into_any(),
    };
    view! {
        <section class="card decision" aria-labelledby="decide-title" data-testid="decide">
            <h2 id="decide-title">{td_string!(l, rerun.decide.title)}</h2>
            {move || {
                done()
                    .map(|text| {
                        view! {
                            <p class="ok" role="status" data-testid="decided">
                                {text}
                            </p>
                        }
                    })
            }}
            {body}
        </section>
    }
}

/// The two forms of an owner who may decide: approve (ticking what will be sent) or reject with a reason.
#[component]
fn DecideForms(id: String, planned: Vec<(String, String)>, decide: Decide) -> impl IntoView {
    let l = locale();
    super::restore_kept_fields();
    let Decide { approve, reject } = decide;
    let (approve_error, reject_error) = (super::error_of(approve), super::error_of(reject));
    let pending = move || approve.pending().get() || reject.pending().get();
    let sent = planned
        .iter()
        .map(|(step, key)| format!("{step} ({key})"))
        .collect::<Vec<_>>()
        .join(td_string!(l, rerun.separator));
    let (approve_id, reject_id) = (id.clone(), id);
    view! {
        <ActionForm action=approve attr:class="form" attr:data-testid="approve-form">
            <input type="hidden" name="id" value=approve_id />
            <input type="hidden" name="approve" value="true" />
            <label for="approve-comment">{td_string!(l, rerun.decide.comment)}</label>
            <textarea id="approve-comment" name="comment" rows="2" data-keep></textarea>
            // Not sent: the browser holds the approval until the approver ticks what will be sent.
            <label class="check">
                <input type="checkbox" id="confirm-sent" required data-testid="confirm-sent" data-keep />
                {td_string!(l, rerun.decide.confirm_sent, steps = sent).to_string()}
            </label>
            <crate::ui::ErrorNote error=approve_error />
            <button type="submit" disabled=pending>
                {td_string!(l, rerun.approvals.approve)}
            </button>
        </ActionForm>
        <ActionForm action=reject attr:class="form" attr:data-testid="reject-form">
            <input type="hidden" name="id" value=reject_id />
            <input type="hidden" name="approve" value="false" />
            <label for="reject-comment">{td_string!(l, rerun.approvals.reject_reason)}</label>
            <textarea id="reject-comment" name="comment" rows="2" required data-keep></textarea>
            <crate::ui::ErrorNote error=reject_error />
            <button type="submit" class="secondary" disabled=pending>
                {td_string!(l, rerun.approvals.reject)}
            </button>
        </ActionForm>
    }
}
