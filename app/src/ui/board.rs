//! The stalled-operations board: counts per event, filters in the URL, keyset pages.
use super::labels::{event_label, failure_class_label, local_time};
use crate::api::board::{BoardFilter, BoardPage, stalled_operations};
use crate::domain::stall::StallEvent;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::{A, Form};
use leptos_router::hooks::use_query_map;

fn filter_from_query() -> Memo<BoardFilter> {
    let query = use_query_map();
    Memo::new(move |_| {
        let q = query.get();
        let text = |k: &str| q.get(k).filter(|v| !v.is_empty());
        BoardFilter {
            department: text("department"),
            workflow: text("workflow"),
            event: text("event"),
            min_age_minutes: text("age").and_then(|v| v.parse().ok()),
            after: text("after").and_then(|v| v.parse().ok()),
        }
    })
}

/// The board's URL for a filter (and page).
fn href(filter: &BoardFilter) -> String {
    let mut parts = Vec::new();
    for (key, value) in [
        ("department", filter.department.clone()),
        ("workflow", filter.workflow.clone()),
        ("event", filter.event.clone()),
        ("age", filter.min_age_minutes.map(|m| m.to_string())),
        ("after", filter.after.map(|a| a.to_string())),
    ] {
        if let Some(value) = value {
            parts.push(format!("{key}={value}"));
        }
    }
    if parts.is_empty() { "/".into() } else { format!("/?{}", parts.join("&")) }
}

#[component]
pub fn BoardPage() -> impl IntoView {
    let filter = filter_from_query();
    let page = Resource::new(move || filter.get(), stalled_operations);
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, board.title)}</h1>
        <Suspense fallback=move || view! { <p class="loading">{td_string!(l, common.loading)}</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(page) => view! { <Board page filter=filter.get_untracked() /> }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Board(page: BoardPage, filter: BoardFilter) -> impl IntoView {
    let l = super::labels::locale();
    let total: i64 = page.counts.iter().map(|(_, n)| n).sum();
    let counts = page.counts.into_iter().map(|(event, n)| {
        let event = event.unwrap_or_default();
        let link = href(&BoardFilter { event: Some(event.clone()), after: None, ..filter.clone() });
        let current = filter.event.as_deref() == Some(event.as_str());
        view! {
            <li><A href=link attr:class=if current { "chip current" } else { "chip" }>
                {event_label(&event)} " " <strong>{n}</strong>
            </A></li>
        }
    }).collect_view();
    let next = page.next.map(|after| href(&BoardFilter { after: Some(after), ..filter.clone() }));
    let selected = |value: &Option<String>, option: &str| value.as_deref() == Some(option);
    // Newcomers to the demo: where to begin.
    let start_here = page.demo_start.map(|process_id| view! {
        <aside class="card start-here" data-testid="start-here" aria-labelledby="start-here-title">
            <h2 id="start-here-title">{td_string!(l, board.start_here.title)}</h2>
            <p>{td_string!(l, board.start_here.body)}</p>
            <p><A href=format!("/operations/{process_id}")>{td_string!(l, board.start_here.link)}</A></p>
        </aside>
    });
    view! {
        {start_here}
        <super::incidents::OverdueBox actions=page.overdue_actions />
        <section aria-labelledby="counts-title">
            <h2 id="counts-title" class="sr-only">{td_string!(l, board.counts_title)}</h2>
            <ul class="chips" data-testid="event-counts">
                <li><A href=href(&BoardFilter { event: None, after: None, ..filter.clone() }) attr:class="chip">{td_string!(l, board.all)} " " <strong>{total}</strong></A></li>
                {counts}
            </ul>
        </section>
        <Form method="GET" action="/" attr:class="filters" attr:aria-label=move || td_string!(l, board.filters)>
            <label>{td_string!(l, board.department)}
                <select name="department">
                    <option value="">{td_string!(l, board.all)}</option>
                    {page.departments.iter().map(|d| view! { <option value=d.clone() selected=selected(&filter.department, d)>{d.clone()}</option> }).collect_view()}
                </select>
            </label>
            <label>{td_string!(l, board.workflow)}
                <select name="workflow">
                    <option value="">{td_string!(l, board.all)}</option>
                    {page.workflows.iter().map(|w| view! { <option value=w.clone() selected=selected(&filter.workflow, w)>{w.clone()}</option> }).collect_view()}
                </select>
            </label>
            <label>{td_string!(l, board.event)}
                <select name="event">
                    <option value="">{td_string!(l, board.all)}</option>
                    {StallEvent::ALL.iter().map(|e| view! { <option value=e.as_str() selected=selected(&filter.event, e.as_str())>{event_label(e.as_str())}</option> }).collect_view()}
                </select>
            </label>
            <label>{td_string!(l, board.age)}
                <select name="age">
                    <option value="">{td_string!(l, board.all)}</option>
                    {[(15, td_string!(l, board.age_15_minutes)), (60, td_string!(l, board.age_1_hour)), (1440, td_string!(l, board.age_1_day))].into_iter().map(|(m, text)| view! {
                        <option value=m.to_string() selected=filter.min_age_minutes == Some(m)>{text}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit">{td_string!(l, board.apply)}</button>
        </Form>
        {if page.rows.is_empty() {
            view! { <p class="empty" data-testid="board-empty">{td_string!(l, board.empty)}</p> }.into_any()
        } else {
            view! {
                <table class="grid" data-testid="board">
                    <caption class="sr-only">{td_string!(l, board.title)}</caption>
                    <thead><tr>
                        <th scope="col">{td_string!(l, board.process_id)}</th><th scope="col">{td_string!(l, board.workflow)}</th><th scope="col">{td_string!(l, board.department)}</th>
                        <th scope="col">{td_string!(l, board.event)}</th><th scope="col">{td_string!(l, board.failure_class)}</th><th scope="col">{td_string!(l, board.business_key)}</th>
                        <th scope="col">{td_string!(l, board.registered)}</th>
                    </tr></thead>
                    <tbody>
                        {page.rows.into_iter().map(|row| view! {
                            <tr>
                                <td><A href=format!("/operations/{}", row.process_id)>{row.process_id.clone()}</A></td>
                                <td>{row.workflow}</td>
                                <td>{row.department}</td>
                                <td><span class="badge warn">"⚠ " {event_label(row.event.as_deref().unwrap_or(""))}</span>
                                    {(row.status == "on_hold").then(|| view! { <span class="badge" data-testid="on-hold">{td_string!(l, board.on_hold)}</span> })}</td>
                                <td>{failure_class_label(row.failure_class.as_deref().unwrap_or(""))}</td>
                                <td>
                                    {row.business_key.unwrap_or_default()}
                                    {row.possible_duplicate_of.map(|other| view! { <span class="badge off" title=td_string!(l, board.same_business_key, other = other)>" " {td_string!(l, board.possible_duplicate)}</span> })}
                                </td>
                                <td>{local_time(row.created_at)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
        {next.map(|link| view! { <p><A href=link>{td_string!(l, board.next, count = 50)}</A></p> })}
    }
}
