//! The review page: a period's risk indicators next to the previous period and the thresholds, the trend as
//! charts drawn on the server (images, readable without JavaScript), stalls per event, what changed since the
//! last review, and the owner's sign-off. The choice of review lives in the URL.
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{event_label, indicator_label_in, local_time, locale, slot, with_entered};
use crate::api::reviews::{SignOffReview, load_review};
use crate::contract::DepartmentDto;
use crate::contract::reviews::{ChangeView, IndicatorRow, ReviewQuery, ReviewView};
use crate::domain::indicators::{Indicator, PeriodKind, ReviewChange, Unit};
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;
use leptos_router::components::{A, Form};
use leptos_router::hooks::use_query_map;

#[component]
pub fn ReviewsPage() -> impl IntoView {
    let l = locale();
    let query = use_query_map();
    let sign_off = ServerAction::<SignOffReview>::new();
    let review = resource(
        move || {
            let q = query.get();
            (
                ReviewQuery { department: q.get("department"), period: q.get("period"), day: q.get("day") },
                sign_off.version().get(),
            )
        },
        |(query, _)| load_review(query),
    );
    view! {
        <h1>{td_string!(l, review.title)} <Help section=GuideSection::Reviews /></h1>
        <p class="hint">{td_string!(l, review.intro)}</p>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match review.await {
                    Ok(view) => view! { <Review view sign_off /> }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Review(view: ReviewView, sign_off: ServerAction<SignOffReview>) -> impl IntoView {
    let l = locale();
    let kind = view.period.kind;
    let department = view.department.as_ref().map(|d| d.code.clone()).unwrap_or_default();
    let link = |day: chrono::NaiveDate| {
        let mut url = format!("/reviews?period={}&day={day}", kind.as_str());
        if !department.is_empty() {
            url.push_str(&format!("&department={department}"));
        }
        url
    };
    let (previous, next) = (link(view.previous_day), view.next_day.map(link));
    let kind_word =
        if kind == PeriodKind::Week { td_string!(l, review.period.week) } else { td_string!(l, review.period.month) };
    let heading = td_string!(l, review.period.heading, kind = kind_word, from = view.period.start, to = view.last_day)
        .to_string();
    let (rows, stalls, zone) = (view.rows.clone(), view.stalled_by_event.clone(), view.zone.clone());
    let csv = format!("/reviews.csv?{}", view.query_string);
    let title =
        view.department.as_ref().map(|d| format!("{}{}", td_string!(l, common.dot), d.name_for(l == Locale::en)));
    view! {
        <Filter choices=view.departments.clone() department kind start=view.period.start />
        <section class="review" data-testid="review">
            <h2 data-testid="review-period">{heading} {title}</h2>
            <p class="pager">
                <A href=previous>{td_string!(l, review.period.previous)}</A>
                {next
                    .map(|href| {
                        view! {
                            " "
                            <A href=href>{td_string!(l, review.period.next)}</A>
                        }
                    })}
                {td_string!(l, common.dot)}
                <a href=csv download data-testid="review-csv">
                    {td_string!(l, review.download_csv)}
                </a>
            </p>
            <Indicators rows />
            <h3>{td_string!(l, review.charts.heading)}</h3>
            <div class="charts">
                <Chart name="rates" query=view.query_string.clone() alt=td_string!(l, review.charts.rates) />
                <Chart name="counts" query=view.query_string.clone() alt=td_string!(l, review.charts.counts) />
                <Chart name="latency" query=view.query_string.clone() alt=td_string!(l, review.charts.latency) />
            </div>
            <Stalls counts=stalls />
            <Changes view=view.clone() />
            <details class="definitions">
                <summary>{td_string!(l, review.definitions.heading)}</summary>
                <p>{td_string!(l, review.definitions.text, zone = zone).to_string()}</p>
            </details>
            <SignOff view sign_off />
        </section>
    }
}

/// Which review: the department (or all), a week or a month, and a day inside it.
#[component]
fn Filter(
    choices: Vec<DepartmentDto>,
    department: String,
    kind: PeriodKind,
    start: chrono::NaiveDate,
) -> impl IntoView {
    let l = locale();
    view! {
        <Form
            method="GET"
            action="/reviews"
            attr:class="filters"
            attr:aria-label=move || td_string!(l, review.filter.label)
        >
            <label>
                {td_string!(l, review.filter.department)} <select name="department">
                    <option value="" selected=department.is_empty()>
                        {td_string!(l, review.filter.all_departments)}
                    </option>
                    {choices
                        .into_iter()
                        .map(|d| {
                            view! {
                                <option value=d.code.clone() selected=d.code == department data-entered>
                                    {d.name_for(l == Locale::en).to_string()}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </label>
            <label>
                {td_string!(l, review.filter.period)} <select name="period">
                    <option value="week" selected=kind == PeriodKind::Week>
                        {td_string!(l, review.period.week)}
                    </option>
                    <option value="month" selected=kind == PeriodKind::Month>
                        {td_string!(l, review.period.month)}
                    </option>
                </select>
            </label>
            <label>{td_string!(l, review.filter.day)} <input type="date" name="day" value=start.to_string() /></label>
            <button type="submit">{td_string!(l, review.filter.show)}</button>
        </Form>
    }
}

/// One of the review's charts (an SVG drawn by the server for the same review).
#[component]
fn Chart(name: &'static str, query: String, alt: &'static str) -> impl IntoView {
    view! {
        <figure>
            <img
                src=format!("/reviews/chart.svg?chart={name}&{query}")
                alt=alt
                width="760"
                height="300"
                data-testid=format!("chart-{name}")
            />
            <figcaption>{alt}</figcaption>
        </figure>
    }
}

/// A value in its unit, with at most one decimal (counts without).
fn shown(l: Locale, indicator: Indicator, value: Option<f64>) -> String {
    let Some(value) = value else { return td_string!(l, review.table.none).to_string() };
    match indicator.unit() {
        Unit::Count => format!("{value:.0}"),
        Unit::Percent => format!("{value:.1} {}", td_string!(l, review.unit.percent)),
        Unit::Minutes => format!("{value:.1} {}", td_string!(l, review.unit.minutes)),
    }
}

#[component]
fn Indicators(rows: Vec<IndicatorRow>) -> impl IntoView {
    let l = locale();
    view! {
        <table class="grid indicators" data-testid="indicators">
            <caption>{td_string!(l, review.table.caption)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, review.table.indicator)}</th>
                    <th scope="col">{td_string!(l, review.table.value)}</th>
                    <th scope="col">{td_string!(l, review.table.previous)}</th>
                    <th scope="col">{td_string!(l, review.table.threshold)}</th>
                    <th scope="col">{td_string!(l, review.table.state)}</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|row| {
                        let fraction = row
                            .fraction
                            .map(|(part, whole)| {
                                td_string!(l, review.fraction, part = part, whole = whole).to_string()
                            });
                        let threshold = row
                            .threshold
                            .map(|t| shown(l, row.indicator, Some(t)))
                            .unwrap_or_else(|| td_string!(l, review.table.none).to_string());
                        let state = match (row.crossed_at, row.threshold) {
                            (Some(at), _) => {
                                view! {
                                    <span class="status-crossed">
                                        "⚠ "{td_string!(l, review.table.crossed, at = local_time(at)).to_string()}
                                    </span>
                                }
                                    .into_any()
                            }
                            (None, Some(_)) => {
                                view! { <span class="status-within">"✓ "{td_string!(l, review.table.within)}</span> }
                                    .into_any()
                            }
                            (None, None) => td_string!(l, review.table.none).into_any(),
                        };
                        view! {
                            <tr
                                class:crossed=row.crossed_at.is_some()
                                data-testid=format!("indicator-{}", row.indicator.key())
                            >
                                <th scope="row">{indicator_label_in(l, row.indicator)}</th>
                                <td class="number" data-testid="value">
                                    {shown(l, row.indicator, row.value)}
                                    {fraction.map(|f| view! { <span class="fraction">" ("{f}")"</span> })}
                                </td>
                                <td class="number">{shown(l, row.indicator, row.previous)}</td>
                                <td class="number">{threshold}</td>
                                <td>{state}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn Stalls(counts: Vec<(String, i64)>) -> impl IntoView {
    let l = locale();
    view! {
        <h3>{td_string!(l, review.stalled.heading)}</h3>
        {if counts.is_empty() {
            view! { <p class="empty">{td_string!(l, review.stalled.none)}</p> }.into_any()
        } else {
            view! {
                <table class="grid stalls" data-testid="stalls-per-event">
                    <thead>
                        <tr>
                            <th scope="col">{td_string!(l, review.stalled.event)}</th>
                            <th scope="col">{td_string!(l, review.stalled.count)}</th>
                        </tr>
                    </thead>
                    <tbody>
                        {counts
                            .into_iter()
                            .map(|(event, n)| {
                                view! {
                                    <tr>
                                        <td>{event_label(&event)}</td>
                                        <td class="number">{n}</td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            }
                .into_any()
        }}
    }
}

fn change_kind(l: Locale, kind: ReviewChange) -> &'static str {
    match kind {
        ReviewChange::ThresholdCrossed => td_string!(l, review.changes.kind.threshold_crossed),
        ReviewChange::IncidentFiled => td_string!(l, review.changes.kind.incident_filed),
        ReviewChange::ActionDone => td_string!(l, review.changes.kind.action_done),
        ReviewChange::ActionDropped => td_string!(l, review.changes.kind.action_dropped),
        ReviewChange::ActionOverdue => td_string!(l, review.changes.kind.action_overdue),
    }
}

/// A change's subject: an indicator's name, or an incident's title as it was written.
/// An indicator's name, or what people named (an incident's title, an action).
fn change_subject(l: Locale, change: &ChangeView) -> AnyView {
    match Indicator::parse(&change.subject) {
        Some(indicator) if change.kind == ReviewChange::ThresholdCrossed => {
            view! { {indicator_label_in(l, indicator)} }.into_any()
        }
        _ => view! { <span data-entered>{change.subject.clone()}</span> }.into_any(),
    }
}

#[component]
fn Changes(view: ReviewView) -> impl IntoView {
    let l = locale();
    let since = match &view.last_review {
        Some(last) => {
            let sentence = td_string!(l, review.changes.since_review, by = slot(0), at = local_time(last.signed_at));
            with_entered(&sentence.to_string(), &[&last.signed_by])
        }
        None => td_string!(l, review.changes.since_start).into_any(),
    };
    view! {
        <h3>{td_string!(l, review.changes.heading)}</h3>
        <p class="hint">{since}</p>
        {if view.changes.is_empty() {
            view! {
                <p class="empty" data-testid="changes-none">
                    {td_string!(l, review.changes.none)}
                </p>
            }
                .into_any()
        } else {
            view! {
                <ul class="changes" data-testid="changes">
                    {view
                        .changes
                        .into_iter()
                        .map(|change| {
                            let subject = change_subject(l, &change);
                            let overdue = change.kind == ReviewChange::ActionOverdue;
                            view! {
                                <li class:overdue=overdue data-kind=change.kind.as_str()>
                                    <span class="kind">
                                        {if overdue { "⚠ " } else { "" }}{change_kind(l, change.kind)}
                                    </span>
                                    " "
                                    {match change.link.clone() {
                                        Some(href) => view! { <A href=href>{subject}</A> }.into_any(),
                                        None => subject,
                                    }}
                                    {change
                                        .detail
                                        .map(|d| {
                                            view! { <span class="detail">" — "<span data-entered>{d}</span></span> }
                                        })}
                                    " "
                                    <span class="when">{local_time(change.at)}</span>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            }
                .into_any()
        }}
    }
}

#[component]
fn SignOff(view: ReviewView, sign_off: ServerAction<SignOffReview>) -> impl IntoView {
    let l = locale();
    let body = match (view.signoff.clone(), view.department.clone()) {
        (Some(done), _) => view! {
            <p class="badge on" data-testid="signoff">
                "✓ "
                {with_entered(
                    &td_string!(l, review.signoff.done, by = slot(0), at = local_time(done.signed_at)).to_string(),
                    &[&done.signed_by],
                )}
            </p>
            <blockquote class="comment" data-entered>
                {done.comment}
            </blockquote>
        }
        .into_any(),
        (None, None) => view! { <p class="hint">{td_string!(l, review.signoff.choose_department)}</p> }.into_any(),
        (None, Some(department)) if view.may_sign_off => view! {
            <ActionForm action=sign_off attr:class="form" attr:data-testid="signoff-form">
                <input type="hidden" name="department" value=department.code />
                <input type="hidden" name="period" value=view.period.kind.as_str() />
                <input type="hidden" name="day" value=view.period.start.to_string() />
                <label>
                    {td_string!(l, review.signoff.comment)}
                    <textarea name="comment" rows="3" required maxlength="2000"></textarea>
                </label>
                <button type="submit">{td_string!(l, review.signoff.submit)}</button>
                <crate::ui::ErrorNote error=crate::ui::error_of(sign_off) />
            </ActionForm>
        }
        .into_any(),
        (None, Some(_)) => view! {
            <p class="hint" data-testid="signoff-missing">
                {td_string!(l, review.signoff.not_yet)}
            </p>
        }
        .into_any(),
    };
    view! {
        <h3>{td_string!(l, review.signoff.heading)}</h3>
        {body}
    }
}
