//! A bulk rerun's stages on its page: the plan (part of what is approved), then each stage as it goes — sent,
//! reported, proven at the outside systems, failed — with the reruns that failed a stage one click from their
//! evidence, and who decided that a stopped batch goes on.
use super::labels::locale;
use crate::contract::batches::{BatchProgress, StageView, StagesView};
use crate::domain::canary::{CanaryConfig, OnFailure, StageFailure, StageOutcome};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

fn failure_label(failure: StageFailure) -> &'static str {
    let l = locale();
    match failure {
        StageFailure::RerunFailed => td_string!(l, rerun.batch.stages.failure.rerun_failed),
        StageFailure::NoReport => td_string!(l, rerun.batch.stages.failure.no_report),
        StageFailure::ContentMismatch => td_string!(l, rerun.batch.stages.failure.content_mismatch),
        StageFailure::NotFound => td_string!(l, rerun.batch.stages.failure.not_found),
        StageFailure::Unproven => td_string!(l, rerun.batch.stages.failure.unproven),
    }
}

/// A stage's result; the last one (the rest) gets none: nothing waits on it, the batch completes as it ends.
fn outcome_label(stage: &StageView, last: bool) -> &'static str {
    let l = locale();
    match (stage.outcome, stage.started_at) {
        (Some(StageOutcome::Passed), _) => td_string!(l, rerun.batch.stages.passed),
        (Some(StageOutcome::Failed), _) => td_string!(l, rerun.batch.stages.failed_outcome),
        (None, None) => td_string!(l, rerun.batch.stages.not_started),
        (None, Some(_)) if last => td_string!(l, rerun.batch.stages.no_verdict),
        (None, Some(_)) => td_string!(l, rerun.batch.stages.running),
    }
}

/// "3 → 50 % → the rest" from the plan.
fn plan_text(plan: &CanaryConfig) -> String {
    let l = locale();
    let widening = plan.stages.iter().filter(|p| **p < 100).map(|p| format!("{p} %"));
    let stages: Vec<String> = widening.chain([td_string!(l, rerun.batch.stages.rest).to_string()]).collect();
    let mut text = td_string!(
        l,
        rerun.batch.stages.plan,
        size = plan.size,
        percent = plan.percent,
        stages = stages.join(" → "),
        settle = plan.settle_seconds
    )
    .to_string();
    text.push(' ');
    text.push_str(match plan.on_failure {
        OnFailure::Pause => td_string!(l, rerun.batch.stages.on_failure_pause),
        OnFailure::PauseAndStop => td_string!(l, rerun.batch.stages.on_failure_pause_and_stop),
    });
    text
}

/// Follows the batch's live part: the stages move with the dispatch.
#[component]
pub fn Stages(live: RwSignal<BatchProgress>) -> impl IntoView {
    let l = locale();
    let stages = move || live.with(|v| v.stages.clone());
    view! {
        {move || {
            stages()
                .map(|s: StagesView| {
                    let stopped = s.stages.iter().rev().find(|st| st.outcome == Some(StageOutcome::Failed));
                    let stopped_note = s
                        .awaits_decision
                        .then(|| stopped.map(|st| st.number))
                        .flatten()
                        .map(|number| {
                            let (n, of) = (s.resume_decisions.len(), s.resume_required);
                            let who = s.resume_decisions.join("、");
                            let decided = td_string!(
                                l, rerun.batch.stages.resume_decisions, given = n, required = of, names = who
                            )
                                .to_string();
                            view! {
                                <p class="note warning" role="status" data-testid="stages-stopped">
                                    {td_string!(l, rerun.batch.stages.stopped, number = number).to_string()}
                                </p>
                                <p class="hint" data-testid="stages-resume-decisions">
                                    {decided}
                                </p>
                            }
                        });
                    view! {
                        <section class="card batch-part" aria-labelledby="stages-title" data-testid="batch-stages">
                            <h2 id="stages-title">{td_string!(l, rerun.batch.stages.title)}</h2>
                            <p class="hint" data-testid="stages-plan">
                                {plan_text(&s.plan)}
                            </p>
                            {stopped_note}
                            <StageTable stages=s.stages.clone() />
                            {s.stages.into_iter().map(|st| view! { <StageNotes stage=st /> }).collect_view()}
                        </section>
                    }
                })
        }}
    }
}

#[component]
fn StageTable(stages: Vec<StageView>) -> impl IntoView {
    let l = locale();
    let count = stages.len() as u32;
    view! {
        <table class="grid" data-testid="stages-table">
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, rerun.batch.stages.stage)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.operations)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.sent)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.reported)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.verified)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.failed)}</th>
                    <th scope="col">{td_string!(l, rerun.batch.stages.outcome)}</th>
                </tr>
            </thead>
            <tbody>
                {stages
                    .into_iter()
                    .map(|st| {
                        view! {
                            <tr data-stage=st.number>
                                <th scope="row">
                                    {td_string!(l, rerun.batch.stages.number, number = st.number).to_string()}
                                </th>
                                <td data-count="operations">{st.operations}</td>
                                <td data-count="sent">{st.sent}</td>
                                <td data-count="reported">{st.reported}</td>
                                <td data-count="verified">{st.verified}</td>
                                <td data-count="failed">{st.failed}</td>
                                <td data-testid="stage-outcome">{outcome_label(&st, st.number == count)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// A failed stage's reruns, each linked to its operation (where the outside systems' evidence is), and the
/// decision that it goes on.
#[component]
fn StageNotes(stage: StageView) -> impl IntoView {
    let l = locale();
    let failures = (!stage.failures.is_empty()).then(|| {
        view! {
            <p>
                {td_string!(l, rerun.batch.stages.number, number = stage.number).to_string()} " — "
                {td_string!(l, rerun.batch.stages.failures)}
            </p>
            <ul data-testid="stage-failures" data-stage=stage.number>
                {stage
                    .failures
                    .clone()
                    .into_iter()
                    .map(|(process_id, why)| {
                        let (href, member) = (format!("/operations/{process_id}"), process_id.clone());
                        view! {
                            <li data-member=member>
                                <A href=href>{process_id}</A>
                                ": "
                                {failure_label(why)}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
    });
    let resumed = stage.resumed_by.clone().map(|who| {
        let why = stage.resume_reason.clone().unwrap_or_default();
        view! {
            <p data-testid="stage-resumed">
                {td_string!(l, rerun.batch.stages.resumed, who = who, why = why).to_string()}
            </p>
        }
    });
    view! {
        {failures}
        {resumed}
    }
}
