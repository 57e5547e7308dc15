//! The stop switch: every workflow and outside system (connector) with its state; its owners (and admins) pause
//! dispatches to it with a reason, and resume them with a reason. The board shows a banner while any is paused.
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{local_time, slot, with_entered};
use crate::api::stop_switch::{PauseDispatches, ResumeDispatches, stop_switch_overview};
use crate::contract::stop_switch::{PauseView, SwitchView};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

fn scope_label(scope: &str) -> &'static str {
    let l = super::labels::locale();
    match scope {
        "workflow" => td_string!(l, board.stop_switch.workflow),
        _ => td_string!(l, board.stop_switch.connector),
    }
}

/// On the board: what is stopped, by whom and why, with a link to the switch.
#[component]
pub fn PausedBanner(pauses: Vec<PauseView>) -> impl IntoView {
    let l = super::labels::locale();
    (!pauses.is_empty()).then(|| {
        view! {
            <aside class="card overdue-box" role="status" data-testid="paused-banner">
                <h2>"⏸ " {td_string!(l, board.stop_switch.banner_title)}</h2>
                <ul>
                    {pauses
                        .into_iter()
                        .map(|p| {
                            view! {
                                <li>
                                    {with_entered(
                                        &td_string!(
                                            l, board.stop_switch.banner_item, scope = scope_label(&p.scope),
                                            name = p.title, by = slot(0), at = local_time(p.paused_at), reason = slot(1)
                                        )
                                            .to_string(),
                                        &[&p.paused_by, &p.reason],
                                    )}
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
                <p>
                    <A href="/stop-switch">{td_string!(l, board.stop_switch.open)}</A>
                </p>
            </aside>
        }
    })
}

#[component]
pub fn StopSwitchPage() -> impl IntoView {
    let l = super::labels::locale();
    let pause = ServerAction::<PauseDispatches>::new();
    let resume = ServerAction::<ResumeDispatches>::new();
    let switches = resource(move || (pause.version().get(), resume.version().get()), |_| stop_switch_overview());
    let (pause_error, resume_error) = (super::error_of(pause), super::error_of(resume));
    view! {
        <h1>{td_string!(l, board.stop_switch.title)} <Help section=GuideSection::StopSwitch /></h1>
        <p class="lead">{td_string!(l, board.stop_switch.intro)}</p>
        <crate::ui::ErrorNote error=pause_error />
        <crate::ui::ErrorNote error=resume_error />
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match switches.await {
                    Ok(list) => {
                        view! {
                            <ul class="inbox" data-testid="switches">
                                {list.into_iter().map(|s| view! { <Switch s pause resume /> }).collect_view()}
                            </ul>
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
fn Switch(
    s: SwitchView,
    pause: ServerAction<PauseDispatches>,
    resume: ServerAction<ResumeDispatches>,
) -> impl IntoView {
    let l = super::labels::locale();
    let scope = s.scope.as_str();
    let field = format!("switch-{scope}-{}", s.name);
    let state = match &s.pause {
        Some(p) => view! {
            <p class="badge warn">
                "⏸ "
                {with_entered(
                    &td_string!(
                        l, board.stop_switch.paused, by = slot(0), at = local_time(p.paused_at), reason = slot(1)
                    )
                        .to_string(),
                    &[&p.paused_by, &p.reason],
                )}
            </p>
        }
        .into_any(),
        None => view! { <p class="badge on">"▶ " {td_string!(l, board.stop_switch.running)}</p> }.into_any(),
    };
    let form = s.may_switch.then(|| {
        let (name, paused) = (s.name.clone(), s.pause.is_some());
        let hidden = move || {
            view! {
                <input type="hidden" name="scope" value=scope />
                <input type="hidden" name="name" value=name.clone() />
            }
        };
        let label = if paused {
            td_string!(l, board.stop_switch.resume_reason)
        } else {
            td_string!(l, board.stop_switch.pause_reason)
        };
        let fields = view! {
            {hidden()}
            <label for=field.clone()>{label}</label>
            <textarea id=field.clone() name="reason" rows="2" required></textarea>
        };
        if paused {
            view! {
                <ActionForm action=resume attr:class="form">
                    {fields}
                    <button type="submit">{td_string!(l, board.stop_switch.resume)}</button>
                </ActionForm>
            }
            .into_any()
        } else {
            view! {
                <ActionForm action=pause attr:class="form">
                    {fields}
                    <button type="submit">{td_string!(l, board.stop_switch.pause)}</button>
                </ActionForm>
            }
            .into_any()
        }
    });
    view! {
        <li class="card" data-switch=format!("{scope}:{}", s.name)>
            <h2>{scope_label(scope)} " · " <super::names::Coded name=s.title.clone() code=s.name.clone() /></h2>
            <p>
                {td_string!(
                    l, board.stop_switch.departments, departments = s.departments.join(td_string!(l, common.list))
                )
                    .to_string()}
            </p>
            {state}
            {form}
        </li>
    }
}
