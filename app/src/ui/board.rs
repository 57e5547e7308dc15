//! The stalled-operations board: counts per event, filters in the URL, keyset pages.
use super::labels::{event_label, failure_class_label, jst};
use crate::api::board::{BoardFilter, BoardPage, stalled_operations};
use crate::domain::stall::StallEvent;
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
    view! {
        <h1>"停止中のオペレーション"</h1>
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(page) => view! { <Board page filter=filter.get_untracked() /> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Board(page: BoardPage, filter: BoardFilter) -> impl IntoView {
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
    view! {
        <section aria-labelledby="counts-title">
            <h2 id="counts-title" class="sr-only">"イベント別の件数"</h2>
            <ul class="chips" data-testid="event-counts">
                <li><A href=href(&BoardFilter { event: None, after: None, ..filter.clone() }) attr:class="chip">"すべて " <strong>{total}</strong></A></li>
                {counts}
            </ul>
        </section>
        <Form method="GET" action="/" attr:class="filters" attr:aria-label="絞り込み">
            <label>"部門"
                <select name="department">
                    <option value="">"すべて"</option>
                    {page.departments.iter().map(|d| view! { <option value=d.clone() selected=selected(&filter.department, d)>{d.clone()}</option> }).collect_view()}
                </select>
            </label>
            <label>"ワークフロー"
                <select name="workflow">
                    <option value="">"すべて"</option>
                    {page.workflows.iter().map(|w| view! { <option value=w.clone() selected=selected(&filter.workflow, w)>{w.clone()}</option> }).collect_view()}
                </select>
            </label>
            <label>"イベント"
                <select name="event">
                    <option value="">"すべて"</option>
                    {StallEvent::ALL.iter().map(|e| view! { <option value=e.as_str() selected=selected(&filter.event, e.as_str())>{event_label(e.as_str())}</option> }).collect_view()}
                </select>
            </label>
            <label>"経過"
                <select name="age">
                    <option value="">"すべて"</option>
                    {[(15, "15 分以上"), (60, "1 時間以上"), (1440, "1 日以上")].into_iter().map(|(m, text)| view! {
                        <option value=m.to_string() selected=filter.min_age_minutes == Some(m)>{text}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit">"絞り込む"</button>
        </Form>
        {if page.rows.is_empty() {
            view! { <p class="empty" data-testid="board-empty">"条件に合う停止中のオペレーションはありません。"</p> }.into_any()
        } else {
            view! {
                <table class="grid" data-testid="board">
                    <caption class="sr-only">"停止中のオペレーション"</caption>
                    <thead><tr>
                        <th scope="col">"プロセス ID"</th><th scope="col">"ワークフロー"</th><th scope="col">"部門"</th>
                        <th scope="col">"イベント"</th><th scope="col">"障害の種類"</th><th scope="col">"業務キー"</th>
                        <th scope="col">"登録 (JST)"</th>
                    </tr></thead>
                    <tbody>
                        {page.rows.into_iter().map(|row| view! {
                            <tr>
                                <td><A href=format!("/operations/{}", row.process_id)>{row.process_id.clone()}</A></td>
                                <td>{row.workflow}</td>
                                <td>{row.department}</td>
                                <td><span class="badge warn">"⚠ " {event_label(row.event.as_deref().unwrap_or(""))}</span>
                                    {(row.status == "on_hold").then(|| view! { <span class="badge" data-testid="on-hold">"⏸ 保留中"</span> })}</td>
                                <td>{failure_class_label(row.failure_class.as_deref().unwrap_or(""))}</td>
                                <td>
                                    {row.business_key.unwrap_or_default()}
                                    {row.possible_duplicate_of.map(|other| view! { <span class="badge off" title=format!("同じ業務キー: {other}")>" 重複の可能性"</span> })}
                                </td>
                                <td>{jst(row.created_at)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
        {next.map(|link| view! { <p><A href=link>"次の 50 件 →"</A></p> })}
    }
}
