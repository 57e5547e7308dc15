//! The steps of an operation beside what the outside systems say: on the operation's page and on a rerun request.
use super::labels::{local_time, step_state_label, verdict_label};
use crate::contract::operations::{ReconciliationView, StepView};
use crate::i18n::td_string;
use leptos::prelude::*;

/// Every step with its completion flag next to what the outside system says (the verdict and its evidence), each
/// by the name its reader knows.
#[component]
pub fn StepsTable(steps: Vec<StepView>, names: super::names::StepNames) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <table class="grid cards" data-testid="steps">
            <caption>{td_string!(l, operation.steps.caption)}</caption>
            <thead>
                <tr>
                    <th scope="col">"#"</th>
                    <th scope="col">{td_string!(l, operation.steps.step)}</th>
                    <th scope="col">{td_string!(l, operation.steps.state)}</th>
                    <th scope="col">{td_string!(l, operation.steps.flag)}</th>
                    <th scope="col">{td_string!(l, operation.steps.verdict)}</th>
                    <th scope="col">{td_string!(l, operation.steps.idempotency_key)}</th>
                    <th scope="col">{td_string!(l, operation.steps.result_id)}</th>
                    <th scope="col">{td_string!(l, operation.steps.attempts)}</th>
                    <th scope="col">{td_string!(l, operation.steps.error)}</th>
                </tr>
            </thead>
            <tbody>
                {steps
                    .into_iter()
                    .map(|step| {
                        view! { <StepRow title=names.of(&step.name) step /> }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn StepRow(step: StepView, title: String) -> impl IntoView {
    let l = super::labels::locale();
    let verdict = step.latest_verdict;
    let name = step.name.clone();
    let superseded = step.reconciliation.as_ref().and_then(|r| r.superseded_at);
    let evidence = step.reconciliation.map(|r| view! { <Evidence reconciliation=r /> });
    view! {
        <tr
            data-step=name
            data-verdict=verdict.map(|v| v.as_str()).unwrap_or("none")
            data-superseded=superseded.is_some().then_some("true")
        >
            // Each cell names its column: on a phone the rows are cards (`table.cards`), the headings hidden.
            <td data-label="#">{step.position}</td>
            <td data-label=td_string!(l, operation.steps.step)>
                <super::names::Coded name=title code=step.name />
            </td>
            <td data-label=td_string!(l, operation.steps.state)>{step_state_label(step.state)}</td>
            <td data-testid="flag" data-label=td_string!(l, operation.steps.flag)>
                {match step.completed_at {
                    Some(at) => format!("✓ {}", local_time(at)),
                    None => td_string!(l, operation.steps.not_completed).into(),
                }}
            </td>
            <td data-testid="verdict" data-label=td_string!(l, operation.steps.verdict)>
                <strong class=format!(
                    "verdict {}{}",
                    verdict.map(|v| v.as_str()).unwrap_or("none"),
                    if superseded.is_some() { " superseded" } else { "" },
                )>{verdict_label(verdict)}</strong>
                {evidence}
            </td>
            <td data-label=td_string!(l, operation.steps.idempotency_key)>
                <code>{step.idempotency_key}</code>
            </td>
            <td data-label=td_string!(
                l, operation.steps.result_id
            )>
                {step.result_id.map_or_else(|| view! { "—" }.into_any(), |id| view! { <code>{id}</code> }.into_any())}
            </td>
            <td data-label=td_string!(l, operation.steps.attempts)>{step.attempts}</td>
            // The error as the integration reported it: its class (a code) and the outside system's message.
            <td data-label=td_string!(
                l, operation.steps.error
            )>
                {step
                    .error
                    .map(|e| {
                        view! {
                            <code>{e.class}</code>
                            ": "
                            <samp>{e.message}</samp>
                        }
                    })}
            </td>
        </tr>
    }
}

/// A step's latest reconciliation: what the outside system said, the values compared, who asked and when.
#[component]
fn Evidence(reconciliation: ReconciliationView) -> impl IntoView {
    let l = super::labels::locale();
    let r = reconciliation;
    let compared = r
        .evidence
        .compared
        .iter()
        .map(|c| {
            let show = |v: &Option<serde_json::Value>| v.as_ref().map_or("—".to_string(), |v| v.to_string());
            let sign = if c.matches { "=" } else { "≠" };
            format!("{}: {} {sign} {}", c.name, show(&c.expected), show(&c.found))
        })
        .collect::<Vec<_>>()
        .join(td_string!(l, operation.list_separator));
    // What was not compared, from each side: the reason a verdict says "content not compared".
    let names = |fields: &[String]| fields.join(td_string!(l, operation.list_separator));
    let left_over = [
        (td_string!(l, operation.steps.not_in_record), names(&r.evidence.content_not_in_record)),
        (td_string!(l, operation.steps.not_in_content), names(&r.evidence.record_not_in_content)),
    ]
    .into_iter()
    .filter(|(_, fields)| !fields.is_empty())
    .map(|(label, fields)| {
        view! {
            <br />
            {label}
            " "
            <samp>{fields}</samp>
        }
    })
    .collect_view();
    view! {
        <div class="evidence">
            <span>{r.evidence.summary}</span>
            {r
                .evidence
                .external_id
                .map(|id| {
                    view! {
                        <br />
                        {td_string!(l, operation.steps.external_id)}
                        " "
                        <code>{id}</code>
                    }
                })}
            // The compared values are the step's and the outside record's data, shown as they are.
            {(!compared.is_empty())
                .then(|| {
                    view! {
                        <br />
                        {td_string!(l, operation.steps.compared)}
                        " "
                        <samp>{compared}</samp>
                    }
                })}
            {left_over}
            <br />
            <small>
                {r.connector} " · " {local_time(r.checked_at)} " · "
                {match r.asked_by_person {
                    Some(name) => view! { <span data-entered>{name}</span> }.into_any(),
                    None => view! { <span>{r.asked_by}</span> }.into_any(),
                }}
            </small>
            {r
                .superseded_at
                .map(|at| {
                    view! {
                        <br />
                        <em class="superseded" data-testid="superseded">
                            {td_string!(l, operation.steps.superseded, at = local_time(at)).to_string()}
                        </em>
                    }
                })}
        </div>
    }
}
