//! Drills: the admin chooses faults and a period (demo or drill databases only); each fault stalls a practice
//! operation for staff to work through; the report shows per fault how long the decision took, which action
//! was chosen and whether the decision table recommends it, with a CSV download.
use super::data::resource;
use super::decision_table::action_label;
use super::help::{GuideSection, Help};
use super::labels::{event_label, local_time, locale, slot, with_entered};
use crate::api::drills::{EndDrill, StartDrill, load_drill_report, load_drills};
use crate::contract::drills::DrillView;
use crate::domain::drills::{Fault, ReportLine};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

pub fn fault_label(fault: Fault) -> &'static str {
    let l = locale();
    match fault {
        Fault::CredentialsExpired => td_string!(l, admin.drills.fault.credentials_expired),
        Fault::RateLimited => td_string!(l, admin.drills.fault.rate_limited),
        Fault::AnswerLost => td_string!(l, admin.drills.fault.answer_lost),
        Fault::SlowAiJob => td_string!(l, admin.drills.fault.slow_ai_job),
        Fault::CancelOnlyRequested => td_string!(l, admin.drills.fault.cancel_only_requested),
        Fault::DuplicateWebhook => td_string!(l, admin.drills.fault.duplicate_webhook),
        Fault::StaleWebhook => td_string!(l, admin.drills.fault.stale_webhook),
        Fault::CanaryOtherContent => td_string!(l, admin.drills.fault.canary_other_content),
        Fault::FailsAfterCanary => td_string!(l, admin.drills.fault.fails_after_canary),
        Fault::LookupFindsNothing => td_string!(l, admin.drills.fault.lookup_finds_nothing),
    }
}

#[component]
pub fn DrillsPage() -> impl IntoView {
    let l = locale();
    let start = ServerAction::<StartDrill>::new();
    let end = ServerAction::<EndDrill>::new();
    let overview = resource(move || end.version().get(), |_| load_drills());
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(id)) = start.value().get() {
            navigate(&format!("/admin/drills/{id}"), Default::default());
        }
    });
    let (start_error, end_error) = (super::error_of(start), super::error_of(end));
    view! {
        <h1>{td_string!(l, admin.drills.title)} <Help section=GuideSection::Drills /></h1>
        <p class="lead">{td_string!(l, admin.drills.intro)}</p>
        <crate::ui::ErrorNote error=start_error />
        <crate::ui::ErrorNote error=end_error />
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match overview.await {
                    Ok(o) => {
                        view! {
                            {(!o.database_marked)
                                .then(|| {
                                    view! {
                                        <p class="error" role="status" data-testid="not-a-drill-database">
                                            {td_string!(l, admin.drills.not_marked)}
                                        </p>
                                    }
                                })}
                            {(o.database_marked && o.may_start).then(|| view! { <StartForm start /> })}
                            <DrillList drills=o.drills end may_end=o.may_start />
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
fn StartForm(start: ServerAction<StartDrill>) -> impl IntoView {
    let l = locale();
    let chosen = RwSignal::new(Vec::<Fault>::new());
    let joined = move || chosen.get().iter().map(|f| f.as_str()).collect::<Vec<_>>().join(",");
    view! {
        <section class="card" aria-labelledby="drill-start-title">
            <h2 id="drill-start-title">{td_string!(l, admin.drills.start_title)}</h2>
            <ActionForm action=start attr:class="form">
                <fieldset>
                    <legend>{td_string!(l, admin.drills.faults)}</legend>
                    {Fault::ALL
                        .into_iter()
                        .map(|fault| {
                            let (id, for_id) = (
                                format!("fault-{}", fault.as_str()),
                                format!("fault-{}", fault.as_str()),
                            );
                            view! {
                                <label for=for_id class="check">
                                    <input
                                        type="checkbox"
                                        id=id
                                        on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            chosen
                                                .update(|list| {
                                                    list.retain(|f| *f != fault);
                                                    if on {
                                                        list.push(fault)
                                                    }
                                                });
                                        }
                                    />
                                    " "
                                    {fault_label(fault)}
                                    " → "
                                    {event_label(fault.event().as_str())}
                                </label>
                            }
                        })
                        .collect_view()}
                </fieldset>
                <input type="hidden" name="faults" prop:value=joined />
                <label for="drill-minutes">{td_string!(l, admin.drills.minutes)}</label>
                <input id="drill-minutes" name="minutes" type="number" min="5" max="480" value="30" required />
                <label for="drill-note">{td_string!(l, admin.drills.note)}</label>
                <textarea id="drill-note" name="note" rows="2" required></textarea>
                <button type="submit" disabled=move || start.pending().get() || chosen.get().is_empty()>
                    {td_string!(l, admin.drills.start)}
                </button>
            </ActionForm>
        </section>
    }
}

#[component]
fn DrillList(drills: Vec<DrillView>, end: ServerAction<EndDrill>, may_end: bool) -> impl IntoView {
    let l = locale();
    if drills.is_empty() {
        return view! { <p class="empty">{td_string!(l, admin.drills.none)}</p> }.into_any();
    }
    view! {
        <table class="grid" data-testid="drills">
            <caption>{td_string!(l, admin.drills.list_title)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, admin.drills.started)}</th>
                    <th scope="col">{td_string!(l, admin.drills.faults)}</th>
                    <th scope="col">{td_string!(l, admin.drills.until)}</th>
                    <th scope="col">{td_string!(l, admin.drills.note)}</th>
                    <th scope="col"></th>
                </tr>
            </thead>
            <tbody>
                {drills
                    .into_iter()
                    .map(|d| {
                        let faults = d
                            .faults
                            .iter()
                            .map(|f| fault_label(*f))
                            .collect::<Vec<_>>()
                            .join(td_string!(l, common.list));
                        let id = d.id.clone();
                        view! {
                            <tr data-drill=d.id.clone()>
                                <td>
                                    <A href=format!("/admin/drills/{}", d.id)>{local_time(d.started_at)}</A>
                                    " · "
                                    <span data-entered>{d.started_by.clone()}</span>
                                </td>
                                <td>{faults}</td>
                                <td>
                                    {local_time(d.ends_at)}
                                    {d
                                        .active
                                        .then(|| {
                                            view! {
                                                " "
                                                <span class="badge warn">{td_string!(l, admin.drills.active)}</span>
                                            }
                                        })}
                                </td>
                                <td data-entered>{d.note.clone()}</td>
                                <td>
                                    {(d.active && may_end)
                                        .then(|| {
                                            view! {
                                                <ActionForm action=end attr:class="inline">
                                                    <input type="hidden" name="id" value=id.clone() />
                                                    <button type="submit" class="secondary">
                                                        {td_string!(l, admin.drills.end)}
                                                    </button>
                                                </ActionForm>
                                            }
                                        })}
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
pub fn DrillReportPage() -> impl IntoView {
    let l = locale();
    let params = use_params_map();
    let report = resource(move || params.get().get("id").unwrap_or_default(), load_drill_report);
    view! {
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match report.await {
                    Ok(r) => {
                        view! {
                            <h1>{td_string!(l, admin.drills.report_title)} <Help section=GuideSection::Drills /></h1>
                            <p>
                                {local_time(r.drill.started_at)} " – " {local_time(r.drill.ends_at)} " · "
                                <span data-entered>{r.drill.started_by.clone()}</span> " · "
                                <span data-entered>{r.drill.note.clone()}</span>
                            </p>
                            <p>
                                <a href=format!("/drills/{}/report.csv", r.drill.id) download>
                                    {td_string!(l, admin.drills.csv)}
                                </a>
                            </p>
                            <table class="grid" data-testid="drill-report">
                                <caption class="sr-only">{td_string!(l, admin.drills.report_title)}</caption>
                                <thead>
                                    <tr>
                                        <th scope="col">{td_string!(l, admin.drills.fault_column)}</th>
                                        <th scope="col">{td_string!(l, admin.drills.operation)}</th>
                                        <th scope="col">{td_string!(l, admin.drills.event)}</th>
                                        <th scope="col">{td_string!(l, admin.drills.decision)}</th>
                                        <th scope="col">{td_string!(l, admin.drills.seconds)}</th>
                                        <th scope="col">{td_string!(l, admin.drills.matches)}</th>
                                    </tr>
                                </thead>
                                <tbody>{r.lines.into_iter().map(|line| view! { <Line line /> }).collect_view()}</tbody>
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
fn Line(line: ReportLine) -> impl IntoView {
    let l = locale();
    let seconds = line.seconds_to_decide();
    let matches = match line.matches() {
        Some(true) => td_string!(l, admin.drills.matches_yes),
        Some(false) => td_string!(l, admin.drills.matches_no),
        None => "—",
    };
    let event = match line.event {
        Some(e) if e == line.expected_event => event_label(e.as_str()).to_string(),
        Some(e) => format!("{} ({})", event_label(e.as_str()), td_string!(l, admin.drills.unexpected)),
        None => td_string!(l, admin.drills.not_stalled).to_string(),
    };
    view! {
        <tr data-fault=line.fault.as_str()>
            <td>{fault_label(line.fault)}</td>
            <td>
                <A href=format!("/operations/{}", line.process_id)>{line.process_id.clone()}</A>
            </td>
            <td>{event}</td>
            <td>
                {match line.decision {
                    Some(d) => {
                        let by = line.decided_by.clone().unwrap_or_default();
                        with_entered(
                            &td_string!(l, admin.drills.decided, action = action_label(l, d), by = slot(0)).to_string(),
                            &[&by],
                        )
                    }
                    None => view! { {td_string!(l, admin.drills.undecided)} }.into_any(),
                }}
            </td>
            <td>{seconds.map(|s| s.to_string()).unwrap_or_else(|| "—".into())}</td>
            <td>{matches}</td>
        </tr>
    }
}
