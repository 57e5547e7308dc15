//! What people can do on an operation's page: ask the outside systems again, put it on hold or release it,
//! and (managers) record a verdict found out by hand. Every form says why it failed, next to itself.
use super::error_of;
use super::labels::{local_time, verdict_label};
use crate::api::board::{AdoptAiAttempt, PlaceHold, ReconcileNow, RecordManualVerdict, ReleaseHold};
use crate::contract::board::HoldView;
use crate::contract::operations::AiAttemptView;
use crate::domain::ai::{AiStatus, format_yen};
use crate::domain::reconciliation::Verdict;
use crate::i18n::td_string;
use crate::words::ai_status_label_in;
use leptos::prelude::*;

/// The page's actions; the page reloads its data after each one.
#[derive(Clone, Copy)]
pub struct Actions {
    pub reconcile: ServerAction<ReconcileNow>,
    pub hold: ServerAction<PlaceHold>,
    pub release: ServerAction<ReleaseHold>,
    pub verdict: ServerAction<RecordManualVerdict>,
    pub adopt: ServerAction<AdoptAiAttempt>,
}

impl Actions {
    pub fn new() -> Self {
        Actions {
            reconcile: ServerAction::new(),
            hold: ServerAction::new(),
            release: ServerAction::new(),
            verdict: ServerAction::new(),
            adopt: ServerAction::new(),
        }
    }

    /// Changes whenever any action finished.
    pub fn version(&self) -> [usize; 5] {
        [
            self.reconcile.version().get(),
            self.hold.version().get(),
            self.release.version().get(),
            self.verdict.version().get(),
            self.adopt.version().get(),
        ]
    }
}

#[component]
pub fn ReconcileButton(actions: Actions, process_id: String) -> impl IntoView {
    let action = actions.reconcile;
    let l = super::labels::locale();
    view! {
        <ActionForm action attr:class="inline">
            <input type="hidden" name="process_id" value=process_id />
            <button type="submit" disabled=move || action.pending().get()>
                {td_string!(l, operation.reconcile)}
            </button>
            <crate::ui::ErrorNote error=error_of(action) />
        </ActionForm>
    }
}

/// The hold: who placed it and why, and the form to place or release one.
#[component]
pub fn HoldPanel(
    actions: Actions,
    process_id: String,
    hold: Option<HoldView>,
    stalled: bool,
    may_act: bool,
) -> impl IntoView {
    let (hold_action, release) = (actions.hold, actions.release);
    let l = super::labels::locale();
    match hold {
        Some(h) => view! {
            <section class="card hold" aria-labelledby="hold-title" data-testid="hold">
                <h2 id="hold-title">{td_string!(l, operation.hold.title)}</h2>
                <p>
                    <span data-entered>{h.placed_by}</span>
                    " · "
                    {local_time(h.placed_at)}
                </p>
                <p>{td_string!(l, operation.hold.reason)} " " <span data-entered>{h.reason}</span></p>
                {may_act
                    .then(|| {
                        view! {
                            <ActionForm action=release attr:class="form">
                                <input type="hidden" name="process_id" value=process_id />
                                <label for="release-reason">{td_string!(l, operation.hold.release_reason)}</label>
                                <textarea id="release-reason" name="reason" required rows="2"></textarea>
                                <crate::ui::ErrorNote error=error_of(release) />
                                <button type="submit" disabled=move || release.pending().get()>
                                    {td_string!(l, operation.hold.release)}
                                </button>
                            </ActionForm>
                        }
                    })}
            </section>
        }
        .into_any(),
        None if stalled && may_act => view! {
            <details class="card">
                <summary>{td_string!(l, operation.hold.summary)}</summary>
                <ActionForm action=hold_action attr:class="form">
                    <input type="hidden" name="process_id" value=process_id />
                    <label for="hold-reason">{td_string!(l, operation.hold.hold_reason)}</label>
                    <textarea id="hold-reason" name="reason" required rows="2"></textarea>
                    <crate::ui::ErrorNote error=error_of(hold_action) />
                    <button type="submit" disabled=move || hold_action.pending().get()>
                        {td_string!(l, operation.hold.place)}
                    </button>
                </ActionForm>
            </details>
        }
        .into_any(),
        None => ().into_any(),
    }
}

/// A manager records what was found out by hand, with the evidence in words.
#[component]
/// `steps`: each step's code and name.
pub fn ManualVerdictForm(actions: Actions, process_id: String, steps: Vec<(String, String)>) -> impl IntoView {
    let action = actions.verdict;
    let choices = [Verdict::NotExecuted, Verdict::Executed, Verdict::ExecutedMismatch, Verdict::Unknown];
    let l = super::labels::locale();
    view! {
        <details class="card">
            <summary>{td_string!(l, operation.manual_verdict.summary)}</summary>
            <ActionForm action attr:class="form">
                <input type="hidden" name="process_id" value=process_id />
                <label for="manual-step">{td_string!(l, operation.manual_verdict.step)}</label>
                <select id="manual-step" name="step">
                    {steps.into_iter().map(|(code, name)| view! { <option value=code>{name}</option> }).collect_view()}
                </select>
                <label for="manual-verdict">{td_string!(l, operation.manual_verdict.verdict)}</label>
                <select id="manual-verdict" name="verdict">
                    {choices
                        .into_iter()
                        .map(|v| view! { <option value=v.as_str()>{verdict_label(Some(v))}</option> })
                        .collect_view()}
                </select>
                <label for="manual-evidence">{td_string!(l, operation.manual_verdict.evidence)}</label>
                <textarea id="manual-evidence" name="evidence" required rows="3"></textarea>
                <crate::ui::ErrorNote error=error_of(action) />
                <button type="submit" disabled=move || action.pending().get()>
                    {td_string!(l, operation.manual_verdict.submit)}
                </button>
            </ActionForm>
        </details>
    }
}

/// An AI step's generations: status, cancel requested versus confirmed, usage and cost; one is adopted.
/// Every generation's cost counts (a cancel is not free); only the adopted one counts as the result.
#[component]
pub fn AiAttempts(
    actions: Actions,
    process_id: String,
    step: String,
    attempts: Vec<AiAttemptView>,
    may_act: bool,
) -> impl IntoView {
    let action = actions.adopt;
    let l = super::labels::locale();
    let total: i64 = attempts.iter().filter_map(|a| a.cost_micro_yen).sum();
    let when = |at: Option<chrono::DateTime<chrono::Utc>>| at.map(local_time).unwrap_or_else(|| "—".into());
    let rows = attempts
        .into_iter()
        .map(|a| {
            let (process_id, step, result_id) = (process_id.clone(), step.clone(), a.result_id.clone());
            let adopt =
                (may_act && !a.adopted && a.background_status.is_some_and(AiStatus::may_be_adopted)).then(move || {
                    view! {
                        <ActionForm action>
                            <input type="hidden" name="process_id" value=process_id />
                            <input type="hidden" name="step" value=step />
                            <input type="hidden" name="result_id" value=result_id />
                            <button type="submit" class="link">
                                {td_string!(l, operation.ai.adopt)}
                            </button>
                        </ActionForm>
                    }
                });
            view! {
                <tr data-result-id=a.result_id.clone()>
                    <td>
                        <code>{a.result_id.clone()}</code>
                    </td>
                    <td>{a.background_status.map_or("—", |s| ai_status_label_in(l, s))}</td>
                    <td>{when(a.cancel_requested_at)}</td>
                    <td>{when(a.cancel_confirmed_at)}</td>
                    <td>
                        {a
                            .usage
                            .map(|u| format!("{} / {}", u.input_tokens, u.output_tokens))
                            .unwrap_or_else(|| "—".into())}
                    </td>
                    <td>{a.cost_micro_yen.map(format_yen).unwrap_or_else(|| "—".into())}</td>
                    <td data-testid="adopted">
                        {if a.adopted { td_string!(l, operation.ai.adopted_mark) } else { "" }}{adopt}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="grid" data-testid=format!("ai-attempts-{step}")>
            <caption>{td_string!(l, operation.ai.caption, step = step.clone(), total = format_yen(total))}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, operation.ai.result_id)}</th>
                    <th scope="col">{td_string!(l, operation.ai.status)}</th>
                    <th scope="col">{td_string!(l, operation.ai.cancel_requested)}</th>
                    <th scope="col">{td_string!(l, operation.ai.cancel_confirmed)}</th>
                    <th scope="col">{td_string!(l, operation.ai.tokens)}</th>
                    <th scope="col">{td_string!(l, operation.ai.cost)}</th>
                    <th scope="col">{td_string!(l, operation.ai.adopted)}</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <crate::ui::ErrorNote error=error_of(action) />
    }
}
