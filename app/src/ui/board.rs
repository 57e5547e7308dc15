//! The stalled-operations board: counts per event, filters in the URL, keyset pages; staff start a bulk rerun
//! from it (by its filters, or by ticked rows).
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{
    event_label, event_label_in, failure_class_label, failure_class_label_in, local_time_in, reader_zone,
};
use crate::api::batches::CreateBatch;
use crate::api::board::stalled_operations;
use crate::contract::DepartmentDto;
use crate::contract::board::{BoardFilter, BoardPage, BoardRow};
use crate::contract::names::Names;
use crate::domain::operations::OperationStatus;
use crate::domain::stall::{FailureClass, StallEvent};
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;
use leptos_router::components::{A, Form};
use leptos_router::hooks::{use_navigate, use_query_map};

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
    let page = resource(move || filter.get(), stalled_operations);
    let names = super::names::use_names();
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, board.title)} <Help section=GuideSection::Board /></h1>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                let names = names.get().await;
                match page.await {
                    Ok(page) => {
                        let (bulk, filter) = (page.may_start_bulk, filter.get_untracked());
                        view! { <Board bulk page filter names /> }.into_any()
                    }
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Board(page: BoardPage, filter: BoardFilter, bulk: bool, names: Names) -> impl IntoView {
    // Looked up once for the whole board (each lookup walks the owners up to the app).
    let (l, zone) = (super::labels::locale(), reader_zone());
    // The rows ticked for a bulk rerun, in the order they were ticked.
    let ticked = RwSignal::new(Vec::<String>::new());
    let next = page.next.map(|after| href(&BoardFilter { after: Some(after), ..filter.clone() }));
    let departments = page.departments.clone();
    // Newcomers to the demo: where to begin.
    let start_here = page.demo_start.map(|process_id| view! { <StartHere l process_id /> });
    view! {
        {start_here}
        <super::stop_switch::PausedBanner pauses=page.pauses />
        <super::incidents::OverdueBox actions=page.overdue_actions />
        <EventCounts l counts=page.counts filter=filter.clone() />
        <Filters l filter=filter.clone() departments=page.departments workflows=page.workflows names=names.clone() />
        <Rows l zone rows=page.rows bulk departments=departments.clone() names=names.clone() ticked />
        {next
            .map(|link| {
                view! {
                    <p>
                        <A href=link>{td_string!(l, board.next, count = 50)}</A>
                    </p>
                }
            })}
        // After the list: on a phone the operations come first, the form for many of them after.
        {bulk.then(|| view! { <BulkRerun filter ticked departments names /> })}
    }
}

/// The demo's pointer for newcomers: the operation to open first.
#[component]
fn StartHere(l: Locale, process_id: String) -> impl IntoView {
    view! {
        <aside class="card start-here" data-testid="start-here" aria-labelledby="start-here-title">
            <h2 id="start-here-title">{td_string!(l, board.start_here.title)}</h2>
            <p>{td_string!(l, board.start_here.body)}</p>
            <p>
                <A href=format!("/operations/{process_id}")>{td_string!(l, board.start_here.link)}</A>
            </p>
        </aside>
    }
}

/// The stalled operations counted per event: all of them, then a chip per event that filters the board by it.
#[component]
fn EventCounts(l: Locale, counts: Vec<(Option<String>, i64)>, filter: BoardFilter) -> impl IntoView {
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    let chips = counts
        .into_iter()
        .map(|(event, n)| {
            let event = event.unwrap_or_default();
            let link = href(&BoardFilter { event: Some(event.clone()), after: None, ..filter.clone() });
            let current = filter.event.as_deref() == Some(event.as_str());
            view! {
                <li>
                    <A href=link attr:class=if current { "chip current" } else { "chip" }>
                        {event_label_in(l, &event)}
                        " "
                        <strong>{n}</strong>
                    </A>
                </li>
            }
        })
        .collect_view();
    view! {
        <section aria-labelledby="counts-title">
            <h2 id="counts-title" class="sr-only">
                {td_string!(l, board.counts_title)}
            </h2>
            <ul class="chips" data-testid="event-counts">
                <li>
                    <A
                        href=href(
                            &BoardFilter {
                                event: None,
                                after: None,
                                ..filter.clone()
                            },
                        )
                        attr:class="chip"
                    >
                        {td_string!(l, board.all)}
                        " "
                        <strong>{total}</strong>
                    </A>
                </li>
                {chips}
            </ul>
        </section>
    }
}

/// The board's filters (department, workflow, event, age), sent as the board's URL.
#[component]
fn Filters(
    l: Locale,
    filter: BoardFilter,
    departments: Vec<DepartmentDto>,
    workflows: Vec<String>,
    names: Names,
) -> impl IntoView {
    let selected = |value: &Option<String>, option: &str| value.as_deref() == Some(option);
    let departments = departments
        .iter()
        .map(|d| {
            view! {
                <option value=d.code.clone() selected=selected(&filter.department, &d.code) data-entered>
                    {d.name_for(super::labels::locale() == crate::i18n::Locale::en).to_string()}
                </option>
            }
        })
        .collect_view();
    let workflows = workflows
        .iter()
        .map(|code| {
            view! {
                <option value=code.clone() selected=selected(&filter.workflow, code)>
                    {names.workflow(code, l == Locale::en).to_string()}
                </option>
            }
        })
        .collect_view();
    let events = StallEvent::ALL
        .iter()
        .map(|e| {
            view! {
                <option value=e.as_str() selected=selected(&filter.event, e.as_str())>
                    {event_label_in(l, e.as_str())}
                </option>
            }
        })
        .collect_view();
    let ages = [
        (15, td_string!(l, board.age_15_minutes)),
        (60, td_string!(l, board.age_1_hour)),
        (1440, td_string!(l, board.age_1_day)),
    ]
    .into_iter()
    .map(|(m, text)| {
        view! {
            <option value=m.to_string() selected=filter.min_age_minutes == Some(m)>
                {text}
            </option>
        }
    })
    .collect_view();
    view! {
        <Form
            method="GET"
            action="/"
            on_form_data=super::without_button()
            attr:class="filters"
            attr:aria-label=move || td_string!(l, board.filters)
        >
            <Filter l label=td_string!(l, board.department) name="department">
                {departments}
            </Filter>
            <Filter l label=td_string!(l, board.workflow) name="workflow">
                {workflows}
            </Filter>
            <Filter l label=td_string!(l, board.event) name="event">
                {events}
            </Filter>
            <Filter l label=td_string!(l, board.age) name="age">
                {ages}
            </Filter>
            <button type="submit">{td_string!(l, board.apply)}</button>
        </Form>
    }
}

/// One of the board's filters: a labelled list whose first choice is all of them.
#[component]
fn Filter(l: Locale, label: &'static str, name: &'static str, children: Children) -> impl IntoView {
    view! {
        <label>
            {label} <select name=name>
                <option value="">{td_string!(l, board.all)}</option>
                {children()}
            </select>
        </label>
    }
}

/// The board's stalled operations: a table (with a box per row where a bulk rerun may start), or a note that
/// there are none.
#[component]
fn Rows(
    l: Locale,
    zone: chrono_tz::Tz,
    rows: Vec<BoardRow>,
    bulk: bool,
    departments: Vec<DepartmentDto>,
    names: Names,
    ticked: RwSignal<Vec<String>>,
) -> impl IntoView {
    if rows.is_empty() {
        return view! {
            <p class="empty" data-testid="board-empty">
                {td_string!(l, board.empty)}
            </p>
        }
        .into_any();
    }
    view! {
        <table class="grid cards" data-testid="board">
            <caption class="sr-only">{td_string!(l, board.title)}</caption>
            <thead>
                <tr>
                    {bulk
                        .then(|| {
                            view! {
                                <th scope="col">
                                    <span class="sr-only">{td_string!(l, board.bulk.select)}</span>
                                </th>
                            }
                        })} <th scope="col">{td_string!(l, board.process_id)}</th>
                    <th scope="col">{td_string!(l, board.workflow)}</th>
                    <th scope="col">{td_string!(l, board.department)}</th>
                    <th scope="col">{td_string!(l, board.event)}</th>
                    <th scope="col">{td_string!(l, board.failure_class)}</th>
                    <th scope="col">{td_string!(l, board.business_key)}</th>
                    <th scope="col">{td_string!(l, board.registered)}</th>
                </tr>
            </thead>
            // The rows are written as one escaped string (see `rows_html`); a tick bubbles up to here.
            <tbody
                inner_html=rows_html(&rows, bulk, l, zone, &departments, &names)
                on:change=move |ev| tick(&ev, ticked)
            ></tbody>
        </table>
    }
    .into_any()
}

/// The board's rows as HTML. Fifty rows built as views cost the server a third of the page's time (perf, 16
/// clients): each cell a view to build, render and drop. Nothing in a row is reactive but its box, whose ticks the
/// table body hears (`tick`); hydration keeps the server's rows, and the browser writes the same string for the
/// next page. Every value is escaped.
fn rows_html(
    rows: &[BoardRow],
    bulk: bool,
    l: Locale,
    zone: chrono_tz::Tz,
    departments: &[DepartmentDto],
    names: &Names,
) -> String {
    let english = l == Locale::en;
    use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
    use std::fmt::Write; // into the string itself, no string per piece; writing to a `String` cannot fail
    let (drill, on_hold) = (td_string!(l, board.drill), td_string!(l, board.on_hold));
    let possible_duplicate = td_string!(l, board.possible_duplicate);
    // Each cell names its column: on a phone the rows are cards (`table.cards`), the headings hidden.
    let [select, process_id, workflow, department, event_label, class_label, business_key, registered] = [
        td_string!(l, board.bulk.select),
        td_string!(l, board.process_id),
        td_string!(l, board.workflow),
        td_string!(l, board.department),
        td_string!(l, board.event),
        td_string!(l, board.failure_class),
        td_string!(l, board.business_key),
        td_string!(l, board.registered),
    ]
    .map(|label| attr(label).into_owned());
    let mut html = String::with_capacity(rows.len() * 400);
    for row in rows {
        let id = &row.process_id;
        html.push_str("<tr>");
        if bulk {
            let label = td_string!(l, board.bulk.tick, id = id.clone()).to_string();
            let _ = write!(html, r#"<td data-label="{select}"><input type="checkbox" aria-label="{}" "#, attr(&label));
            let _ = write!(html, r#"data-testid="tick" data-process-id="{}"></td>"#, attr(id));
        }
        let _ = write!(html, r#"<td data-label="{process_id}"><a href="/operations/{}">{}</a>"#, attr(id), text(id));
        if row.drill {
            let _ = write!(html, r#" <span class="badge" data-testid="drill">{}</span>"#, text(drill));
        }
        let event = event_label_in(l, row.event.as_deref().unwrap_or(""));
        let name = names.workflow(&row.workflow, english);
        let _ = write!(html, r#"</td><td data-label="{workflow}" data-entered>{}</td>"#, text(name));
        let _ = write!(
            html,
            r#"<td data-label="{department}" data-entered>{}</td>"#,
            text(department_name(departments, &row.department))
        );
        let _ = write!(html, r#"<td data-label="{event_label}"><span class="badge warn">⚠ {}</span>"#, text(event));
        if row.status == OperationStatus::OnHold {
            let _ = write!(html, r#"<span class="badge" data-testid="on-hold">{}</span>"#, text(on_hold));
        }
        let class = row.failure_class.map_or("—", |c| failure_class_label_in(l, c));
        let _ = write!(
            html,
            r#"</td><td data-label="{class_label}">{}</td><td data-label="{business_key}">{}"#,
            text(class),
            text(row.business_key.as_deref().unwrap_or(""))
        );
        if let Some(other) = &row.possible_duplicate_of {
            let title = td_string!(l, board.same_business_key, other = other.clone()).to_string();
            let _ = write!(
                html,
                r#"<span class="badge off" title="{}"> {}</span>"#,
                attr(&title),
                text(possible_duplicate)
            );
        }
        let _ = write!(
            html,
            r#"</td><td data-label="{registered}">{}</td></tr>"#,
            text(&local_time_in(zone, row.created_at))
        );
    }
    html
}

/// A department's name among those the board lists (the code when it is not among them).
fn department_name<'a>(departments: &'a [DepartmentDto], code: &'a str) -> &'a str {
    let english = super::labels::locale() == crate::i18n::Locale::en;
    departments.iter().find(|d| d.code == code).map_or(code, |d| d.name_for(english))
}

/// A row's box ticked or unticked: ticked rows are what a bulk rerun takes (instead of the filters), in the order
/// they were ticked.
fn tick(ev: &leptos::ev::Event, ticked: RwSignal<Vec<String>>) {
    let input = event_target::<leptos::web_sys::HtmlInputElement>(ev);
    let Some(process_id) = input.get_attribute("data-process-id") else { return };
    let on = input.checked();
    ticked.update(|t| {
        t.retain(|p| *p != process_id);
        if on {
            t.push(process_id);
        }
    });
}

/// The rows already ticked in the page, in the table's order.
#[cfg(feature = "hydrate")]
fn ticked_before_hydration() -> Vec<String> {
    use leptos::wasm_bindgen::JsCast;
    let Ok(boxes) = document().query_selector_all("[data-testid=tick]:checked") else { return Vec::new() };
    (0..boxes.length())
        .filter_map(|i| boxes.item(i)?.dyn_into::<leptos::web_sys::Element>().ok()?.get_attribute("data-process-id"))
        .collect()
}

/// Effects run only in the browser.
#[cfg(not(feature = "hydrate"))]
fn ticked_before_hydration() -> Vec<String> {
    Vec::new()
}

/// Staff start a bulk rerun from the board: the board's filters (plus a failure class and a time range), or the
/// ticked rows. The preview (a dry run) opens on the batch's page.
#[component]
fn BulkRerun(
    filter: BoardFilter,
    ticked: RwSignal<Vec<String>>,
    departments: Vec<DepartmentDto>,
    names: Names,
) -> impl IntoView {
    let l = super::labels::locale();
    let create = ServerAction::<CreateBatch>::new();
    // Boxes ticked before the page was interactive count too; until then the form waits (a click would take
    // every stalled operation of the filters instead of the ticked ones).
    let ready = RwSignal::new(false);
    Effect::new(move |_| {
        ticked.set(ticked_before_hydration());
        ready.set(true);
    });
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(id)) = create.value().get() {
            navigate(&format!("/batches/{id}"), Default::default());
        }
    });
    let error = super::error_of(create);
    let mut filters = Vec::new();
    if let Some(d) = &filter.department {
        filters.push(format!("{}: {}", td_string!(l, board.department), department_name(&departments, d)));
    }
    if let Some(w) = &filter.workflow {
        filters.push(format!("{}: {}", td_string!(l, board.workflow), names.workflow(w, l == Locale::en)));
    }
    if let Some(e) = &filter.event {
        filters.push(format!("{}: {}", td_string!(l, board.event), event_label(e)));
    }
    let filters =
        if filters.is_empty() { td_string!(l, board.bulk.everything).to_string() } else { filters.join(" · ") };
    let selected_by = td_string!(l, board.bulk.by_filters, filters = filters).to_string();
    let count = move || ticked.with(Vec::len);
    view! {
        <section class="card bulk" aria-labelledby="bulk-title" data-testid="bulk-rerun">
            <h2 id="bulk-title">{td_string!(l, board.bulk.title)}</h2>
            <p>{td_string!(l, board.bulk.intro)}</p>
            <ActionForm action=create attr:class="form">
                <input type="hidden" name="department" value=filter.department.unwrap_or_default() />
                <input type="hidden" name="workflow" value=filter.workflow.unwrap_or_default() />
                <input type="hidden" name="event" value=filter.event.unwrap_or_default() />
                <input type="hidden" name="process_ids" prop:value=move || ticked.with(|t| t.join(",")) />
                <p class="hint" data-testid="bulk-selection">
                    {move || match count() {
                        0 => selected_by.clone(),
                        n => td_string!(l, board.bulk.ticked, count = n).to_string(),
                    }}
                </p>
                <Narrowing l />
                <label for="bulk-reason">{td_string!(l, board.bulk.reason)}</label>
                <textarea id="bulk-reason" name="reason" rows="2" required></textarea>
                <button type="submit" disabled=move || !ready.get() || create.pending().get()>
                    {move || match count() {
                        0 => td_string!(l, board.bulk.submit_filters).to_string(),
                        n => td_string!(l, board.bulk.submit_ticked, count = n).to_string(),
                    }}
                </button>
                <crate::ui::ErrorNote error />
            </ActionForm>
        </section>
    }
}

/// The bulk rerun's narrowing beyond the board's filters: a failure class and a time of registration.
#[component]
fn Narrowing(l: Locale) -> impl IntoView {
    view! {
        <div class="fields">
            <div>
                <label for="bulk-failure-class">{td_string!(l, board.bulk.failure_class)}</label>
                <select id="bulk-failure-class" name="failure_class">
                    <option value="">{td_string!(l, board.all)}</option>
                    {FailureClass::ALL
                        .into_iter()
                        .map(|k| view! { <option value=k.as_str()>{failure_class_label(k)}</option> })
                        .collect_view()}
                </select>
            </div>
            <div>
                <label for="bulk-from">{td_string!(l, board.bulk.registered_from)}</label>
                <input id="bulk-from" name="registered_from" type="datetime-local" />
            </div>
            <div>
                <label for="bulk-to">{td_string!(l, board.bulk.registered_to)}</label>
                <input id="bulk-to" name="registered_to" type="datetime-local" />
            </div>
        </div>
    }
}
