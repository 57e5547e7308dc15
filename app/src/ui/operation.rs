//! One operation: steps with their completion flags next to the reconciliation column, the decision-table
//! row for its event, and its audit timeline.
use super::data::resource;
use super::decision_table::{action_label, decision_texts};
use super::help::{GuideSection, Help};
use super::labels::{event_label, failure_class_label, local_time, operation_status_label};
use super::names::{Coded, StepNames, use_names};
use super::operation_actions::{Actions, AiAttempts, HoldPanel, ManualVerdictForm, ReconcileButton};
use super::steps_table::StepsTable;
use crate::api::board::load_operation;
use crate::contract::board::{OperationDetail, TimelineEntry};
use crate::contract::names::Names;
use crate::contract::operations::OperationView;
use crate::domain::decision_table::row;
use crate::domain::operations::OperationStatus;
use crate::domain::stall::StallEvent;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

#[component]
pub fn OperationPage() -> impl IntoView {
    let params = use_params_map();
    let actions = Actions::new();
    // What an action changed shows at once: the page reloads its data after each one.
    let detail = resource(
        move || (params.get().get("process_id").unwrap_or_default(), actions.version()),
        |(process_id, _)| load_operation(process_id),
    );
    let l = super::labels::locale();
    let names = use_names();
    view! {
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                let names = names.get().await;
                match detail.await {
                    Ok(detail) => view! { <Detail detail actions names /> }.into_any(),
                    Err(crate::contract::AppError::NotFound) => {
                        view! {
                            <h1>{td_string!(l, operation.not_found.title)}</h1>
                            <p>{td_string!(l, operation.not_found.body)}</p>
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
fn Detail(detail: OperationDetail, actions: Actions, names: Names) -> impl IntoView {
    let l = super::labels::locale();
    let mut op = detail.operation;
    // The steps go to their table, the rest of the operation to its facts.
    let steps = std::mem::take(&mut op.steps);
    let process_id = op.process_id.clone();
    let stalled = op.status == OperationStatus::Stalled;
    let workflow = names.workflow(&op.workflow, super::names::english()).to_string();
    let names = StepNames::new(names, &op.workflow);
    let step_names: Vec<(String, String)> = steps.iter().map(|s| (s.name.clone(), names.of(&s.name))).collect();
    let attempts: Vec<_> =
        steps.iter().filter(|s| !s.ai_attempts.is_empty()).map(|s| (s.name.clone(), s.ai_attempts.clone())).collect();
    let (may_act, may_record_verdict) = (detail.may_act, detail.may_record_verdict);
    let done = (op.status == OperationStatus::Completed).then(|| {
        view! {
            <section class="card guidance done" aria-labelledby="guidance-title" data-testid="guidance-done">
                <h2 id="guidance-title">{td_string!(l, operation.guidance.done_title)}</h2>
                <p>{td_string!(l, operation.guidance.done_body)}</p>
            </section>
        }
    });
    let event = op.event.as_deref().and_then(StallEvent::parse).filter(|_| done.is_none());
    let guidance = event.map(|event| view! { <Guidance event /> });
    view! {
        <leptos_meta::Title text=format!("{} {} — Rerun Gate", td_string!(l, operation.title), process_id) />
        <h1>
            {td_string!(l, operation.title)} " " <code>{process_id.clone()}</code>
            <Help section=GuideSection::Reconciliation />
        </h1>
        <Facts op workflow department_name=detail.department_name />
        <StepsTable steps names />
        {attempts
            .into_iter()
            .map(|(step, attempts)| {
                view! { <AiAttempts actions process_id=process_id.clone() step attempts may_act /> }
            })
            .collect_view()}
        {may_act.then(|| view! { <ReconcileButton actions process_id=process_id.clone() /> })}
        <HoldPanel actions process_id=process_id.clone() hold=detail.hold stalled may_act />
        <super::known_patterns::KnownPatterns process_id=process_id.clone() />
        {match detail.open_request {
            Some((id, status)) => {
                view! {
                    <p class="card" data-testid="open-request">
                        {td_string!(l, operation.open_request)}
                        " "
                        <A href=format!("/reruns/{id}")>{id.clone()}</A>
                        " — "
                        {super::labels::status_label(status)}
                    </p>
                }
                    .into_any()
            }
            None if stalled && may_act => {
                view! { <super::rerun_request::StartRerun process_id=process_id.clone() /> }.into_any()
            }
            None => ().into_any(),
        }}
        {may_record_verdict
            .then(|| view! { <ManualVerdictForm actions process_id=process_id.clone() steps=step_names /> })}
        {done}
        {guidance}
        <Timeline process_id timeline=detail.timeline />
    }
}

/// The operation's facts: its status, workflow, department, event, failure class, business key and registration.
#[component]
fn Facts(op: OperationView, workflow: String, department_name: String) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <dl class="facts card">
            <dt>{td_string!(l, operation.status)}</dt>
            <dd data-testid="operation-status">{operation_status_label(op.status)}</dd>
            <dt>{td_string!(l, operation.workflow)}</dt>
            <dd>
                <Coded name=workflow code=op.workflow.clone() />
            </dd>
            <dt>{td_string!(l, operation.department)}</dt>
            <dd title=op.department.clone() data-entered>
                {department_name}
            </dd>
            <dt>{td_string!(l, operation.event)}</dt>
            <dd>{op.event.as_deref().map(event_label).unwrap_or("—")}</dd>
            <dt>{td_string!(l, operation.failure_class)}</dt>
            <dd>{op.failure_class.map(failure_class_label).unwrap_or("—")}</dd>
            <dt>{td_string!(l, operation.business_key)}</dt>
            <dd>
                {op.business_key.clone().unwrap_or_else(|| "—".into())}
                {op
                    .possible_duplicate_of
                    .clone()
                    .map(|other| {
                        view! {
                            " "
                            <span class="badge off">{td_string!(l, operation.possible_duplicate, other = other)}</span>
                        }
                    })}
            </dd>
            <dt>{td_string!(l, operation.registered)}</dt>
            <dd>{local_time(op.created_at)}</dd>
        </dl>
    }
}

/// What to do about the operation's event: the decision table's row in words, and the actions it allows.
#[component]
fn Guidance(event: StallEvent) -> impl IntoView {
    let l = super::labels::locale();
    let texts = decision_texts(l, event);
    let allowed = row(event)
        .allowed
        .iter()
        .map(|a| action_label(l, *a))
        .collect::<Vec<_>>()
        .join(td_string!(l, operation.list_separator));
    view! {
        <section class="card guidance" aria-labelledby="guidance-title" data-testid="guidance">
            <h2 id="guidance-title">{td_string!(l, operation.guidance.title, event = event_label(event.as_str()))}</h2>
            <dl class="facts">
                <dt>{td_string!(l, operation.guidance.other_side)}</dt>
                <dd>{texts.other_side}</dd>
                <dt>{td_string!(l, operation.guidance.next_action)}</dt>
                <dd>{texts.next_action}</dd>
                <dt>{td_string!(l, operation.guidance.compare)}</dt>
                <dd>{texts.compare}</dd>
                <dt>{td_string!(l, operation.guidance.owner_and_cost)}</dt>
                <dd>{texts.owner_and_cost}</dd>
            </dl>
            <p>{td_string!(l, operation.guidance.allowed, actions = allowed)}</p>
        </section>
    }
}

/// Audit events, newest first: an operation's timeline, a bulk rerun's history.
#[component]
pub(super) fn TimelineList(timeline: Vec<TimelineEntry>, testid: &'static str) -> impl IntoView {
    view! {
        <ol class="timeline" data-testid=testid>
            {timeline
                .into_iter()
                .map(|e| {
                    view! {
                        // Each piece in its own element: an empty text (a blank reason) next to another would
                        // vanish from the server's HTML, and hydration would then find the wrong node and panic.
                        <li>
                            <time>{local_time(e.at)}</time>
                            " "
                            <strong title=e.action>{e.action_label}</strong>
                            " — "
                            <super::audit::ActorName actor=e.actor />
                            {e
                                .reason
                                .map(|r| {
                                    view! { <span class="reason">" (" <super::audit::Reason reason=r /> ")"</span> }
                                })}
                        </li>
                    }
                })
                .collect_view()}
        </ol>
    }
}

/// The operation's audit timeline, with its evidence bundle and the way to the audit log.
#[component]
fn Timeline(process_id: String, timeline: Vec<TimelineEntry>) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <section aria-labelledby="timeline-title">
            <h2 id="timeline-title">{td_string!(l, operation.timeline.title)}</h2>
            <TimelineList timeline testid="timeline" />
            <p>
                <a href=format!("/operations/{process_id}/evidence.zip") download data-testid="evidence-bundle">
                    {td_string!(l, operation.timeline.evidence_bundle)}
                </a>
                " "
                <A href=format!("/audit?process_id={process_id}")>{td_string!(l, operation.timeline.in_audit)}</A>
                <span class="hint">" " {td_string!(l, operation.timeline.download_logged)}</span>
            </p>
        </section>
    }
}
