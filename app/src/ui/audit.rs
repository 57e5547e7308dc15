//! The audit trail page: filters in the URL, newest first in keyset pages, before/after as a readable diff,
//! whether the chain is intact, and (for auditors) the exports.
use super::audit_values::{plain_words, value_words};
use super::data::resource;
use super::download::DownloadWithProgress;
use super::help::{GuideSection, Help};
use super::labels::local_time;
use crate::api::audit::audit_page;
use crate::contract::audit::ReasonView;
use crate::contract::audit::{ActorView, AuditChoices, AuditPageView, AuditRow, ChainView, Choice, FieldChange};
use crate::domain::audit_export::AuditFilterForm;
use crate::domain::signer_alarm::SignerAlarm;
use crate::i18n::td_string;
use crate::words::audit::signer_alarm_in;
use leptos::prelude::*;
use leptos_router::components::{A, Form};
use leptos_router::hooks::use_query_map;

const FIELDS: [&str; 8] = ["from", "to", "department", "actor", "action", "object_type", "object_id", "process_id"];

fn form_of(get: impl Fn(&str) -> String) -> AuditFilterForm {
    AuditFilterForm {
        from: get("from"),
        to: get("to"),
        department: get("department"),
        actor: get("actor"),
        action: get("action"),
        object_type: get("object_type"),
        object_id: get("object_id"),
        process_id: get("process_id"),
    }
}

fn field(form: &AuditFilterForm, name: &str) -> String {
    match name {
        "from" => form.from.clone(),
        "to" => form.to.clone(),
        "department" => form.department.clone(),
        "actor" => form.actor.clone(),
        "action" => form.action.clone(),
        "object_type" => form.object_type.clone(),
        "object_id" => form.object_id.clone(),
        _ => form.process_id.clone(),
    }
}

/// `key=value&…` of the filled-in filters, percent-encoded.
fn query_of(form: &AuditFilterForm) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    FIELDS
        .iter()
        .filter_map(|&name| Some(field(form, name)).filter(|v| !v.is_empty()).map(|v| format!("{name}={}", encode(&v))))
        .collect::<Vec<_>>()
        .join("&")
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let l = super::labels::locale();
    let query = use_query_map();
    let args = Memo::new(move |_| {
        let q = query.get();
        let routine = q.get("routine").is_some_and(|v| v == "true");
        (form_of(|k| q.get(k).unwrap_or_default()), q.get("before").and_then(|v| v.parse::<i64>().ok()), routine)
    });
    let page = resource(move || args.get(), |(form, before, routine)| audit_page(form, before, routine));
    view! {
        <h1>{td_string!(l, common.nav.audit)} <Help section=GuideSection::Audit /></h1>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(view) => view! { <Trail view form=args.get_untracked().0 /> }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The audit signer's alarm, with the numbers (on the audit page and the admin's system page).
#[component]
pub fn SignerAlarmNotice(alarm: SignerAlarm) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <div class="card alarm" role="alert" data-testid="signer-alarm">
            <h2>{td_string!(l, audit.signer_alarm.title)}</h2>
            <p>{signer_alarm_in(l, &alarm)}</p>
            <p>{td_string!(l, audit.signer_alarm.what_now)}</p>
        </div>
    }
}

#[component]
fn Trail(view: AuditPageView, form: AuditFilterForm) -> impl IntoView {
    let l = super::labels::locale();
    let chain = match view.chain {
        ChainView::Intact { seq, checked_at } => view! {
            <p class="badge on" data-testid="chain-status">
                {td_string!(l, audit.chain_intact, seq = seq, at = local_time(checked_at)).to_string()}
            </p>
        }
        .into_any(),
        ChainView::Broken { seq, problem } => view! {
            <p class="badge off" role="alert" data-testid="chain-status">
                {td_string!(l, audit.chain_broken, seq = seq, problem = problem).to_string()}
            </p>
        }
        .into_any(),
        ChainView::Unchecked => view! {
            <p class="badge" data-testid="chain-status">
                {td_string!(l, audit.chain_unchecked)}
            </p>
        }
        .into_any(),
    };
    let filters = query_of(&form);
    // The page's own choice, kept when paging; exports always hold every event.
    let shown = if view.routine_shown { "routine=true" } else { "" };
    let next = view.next.map(|before| {
        let before = format!("before={before}");
        let parts = [filters.as_str(), before.as_str(), shown].into_iter().filter(|p| !p.is_empty());
        format!("/audit?{}", parts.collect::<Vec<_>>().join("&"))
    });
    let export = |format: &str| {
        if filters.is_empty() {
            format!("/audit/export?format={format}")
        } else {
            format!("/audit/export?format={format}&{filters}")
        }
    };
    view! {
        {view.signer_alarm.map(|alarm| view! { <SignerAlarmNotice alarm /> })}
        {chain}
        <Filters form=form.clone() routine_shown=view.routine_shown choices=view.choices />
        {(!view.routine_shown)
            .then(|| {
                view! {
                    <p class="hint" data-testid="routine-folded">
                        {td_string!(l, audit.routine_folded)}
                    </p>
                }
            })}
        {view
            .may_export
            .then(|| {
                view! {
                    <p class="exports" data-testid="exports">
                        {td_string!(l, audit.export_lead)}
                        <DownloadWithProgress href=export("csv") label="CSV" />
                        {td_string!(l, common.dot)}
                        <DownloadWithProgress href=export("jsonl") label=td_string!(l, audit.export_jsonl) />
                        <span class="hint">{td_string!(l, audit.export_hint)}</span>
                    </p>
                }
            })}
        <Events rows=view.rows may_prove=view.may_prove />
        {next
            .map(|link| {
                view! {
                    <p>
                        <A href=link>{td_string!(l, audit.older)}</A>
                    </p>
                }
            })}
    }
}

/// Which events: a period, who, what, on which object or operation; routine events folded unless asked for.
#[component]
fn Filters(form: AuditFilterForm, routine_shown: bool, choices: AuditChoices) -> impl IntoView {
    let l = super::labels::locale();
    let AuditChoices { actions, object_types, departments, people } = choices;
    view! {
        <Form
            method="GET"
            action="/audit"
            on_form_data=super::without_button()
            attr:class="filters"
            attr:aria-label=move || td_string!(l, audit.filters)
        >
            {entry("from", td_string!(l, audit.field.from), "date", &form)}
            {entry("to", td_string!(l, audit.field.to), "date", &form)}
            {choose("department", td_string!(l, audit.field.department), departments, true, &form)}
            {choose("actor", td_string!(l, audit.field.actor), people, true, &form)}
            {choose("action", td_string!(l, audit.field.action), actions, false, &form)}
            {choose("object_type", td_string!(l, audit.field.object_type), object_types, false, &form)}
            {entry("object_id", td_string!(l, audit.field.object_id), "text", &form)}
            {entry("process_id", td_string!(l, audit.field.process_id), "text", &form)}
            <label class="check">
                <input type="checkbox" name="routine" value="true" checked=routine_shown data-testid="show-routine" />
                {td_string!(l, audit.show_routine)}
            </label>
            <button type="submit">{td_string!(l, audit.filter)}</button>
        </Form>
    }
}

/// The events found, newest first, or a word that there are none.
#[component]
fn Events(rows: Vec<AuditRow>, may_prove: bool) -> impl IntoView {
    let l = super::labels::locale();
    if rows.is_empty() {
        return view! {
            <p class="empty" data-testid="audit-empty">
                {td_string!(l, audit.empty)}
            </p>
        }
        .into_any();
    }
    view! {
        <table class="grid cards" data-testid="audit-events">
            <caption class="sr-only">{td_string!(l, audit.caption)}</caption>
            <thead>
                <tr>
                    <th scope="col">"#"</th>
                    <th scope="col">{td_string!(l, audit.column.at)}</th>
                    <th scope="col">{td_string!(l, audit.field.actor)}</th>
                    <th scope="col">{td_string!(l, audit.field.action)}</th>
                    <th scope="col">{td_string!(l, audit.column.object)}</th>
                    <th scope="col">{td_string!(l, audit.field.department)}</th>
                    <th scope="col">{td_string!(l, audit.column.changes)}</th>
                </tr>
            </thead>
            <tbody>{rows.into_iter().map(|row| view! { <EventRow row may_prove /> }).collect_view()}</tbody>
        </table>
    }
    .into_any()
}

/// A filter chosen from a list (the catalogue's, the departments, the people).
/// `given`: the choices are names people gave (departments, people), not the app's words.
fn choose(
    name: &'static str,
    label: &'static str,
    choices: Vec<Choice>,
    given: bool,
    form: &AuditFilterForm,
) -> impl IntoView {
    let l = super::labels::locale();
    let current = field(form, name);
    // Beside its label rather than in it: the control's name is the label alone, not the label and every choice.
    let id = format!("audit-{name}");
    view! {
        <div class="filter">
            <label for=id.clone()>{label}</label>
            <select id=id name=name>
                <option value="">{td_string!(l, audit.any)}</option>
                {choices
                    .into_iter()
                    .map(|c| {
                        let chosen = c.value == current;
                        view! {
                            <option value=c.value selected=chosen data-entered=given.then_some("")>
                                {c.label}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
        </div>
    }
}

/// A filter typed in (a date from the picker, an ID).
fn entry(name: &'static str, label: &'static str, kind: &'static str, form: &AuditFilterForm) -> impl IntoView {
    view! { <label>{label} <input name=name type=kind value=field(form, name) /></label> }
}

/// Who acted: a person's name is marked as a name people gave (it stays as given in every language).
#[component]
pub fn ActorName(actor: ActorView) -> impl IntoView {
    match actor.person {
        true => view! { <span data-entered>{actor.name}</span> }.into_any(),
        false => view! { <span>{actor.name}</span> }.into_any(),
    }
}

/// An event's reason; what a person wrote is marked as theirs (in the language they wrote it in).
#[component]
pub fn Reason(reason: ReasonView) -> impl IntoView {
    match reason.written {
        true => view! { <span data-entered>{reason.text}</span> }.into_any(),
        false => view! { <span>{reason.text}</span> }.into_any(),
    }
}

/// A recorded value in the reader's words where the product has them (a stored code as the tooltip: exports and
/// searches use it); a code it has no words for as a code; what people wrote or named as they wrote it (a record
/// or a list of them field by field, as recorded).
fn value(action: &str, key: &str, stored: String) -> AnyView {
    use serde_json::Value;
    let is_code = |text: &str| !text.is_empty() && text.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '.');
    if let Some(words) = value_words(action, key, &stored) {
        let code = is_code(&stored).then_some(stored);
        return view! { <span title=code>{words}</span> }.into_any();
    }
    let parsed = serde_json::from_str(&stored).unwrap_or_else(|_| Value::String(stored.clone()));
    match parsed {
        Value::String(text) if is_code(&text) => view! { <code>{text}</code> }.into_any(),
        Value::String(text) if chrono::DateTime::parse_from_rfc3339(&text).is_err() => {
            view! { <span data-entered>{text}</span> }.into_any()
        }
        Value::Array(_) | Value::Object(_) => {
            view! { <span data-entered>{plain_words(action, key, &parsed)}</span> }.into_any()
        }
        other => view! { <span>{plain_words(action, key, &other)}</span> }.into_any(),
    }
}

#[component]
fn EventRow(row: AuditRow, may_prove: bool) -> impl IntoView {
    let l = super::labels::locale();
    let action = row.action.clone();
    let code = row.object_type.clone(); // the kind's code as a tooltip; the ID is shown or named
    // Its kind in words, then its name (as given) or its ID (a code).
    let name = match row.object_name {
        Some(name) => view! { <span data-entered>{name}</span> }.into_any(),
        None => view! { <code>{row.object_id.clone()}</code> }.into_any(),
    };
    let object = match row.object_href {
        Some(href) => view! {
            <A href=href attr:title=code>
                {row.object_kind}
                " "
                {name}
            </A>
        }
        .into_any(),
        None => view! { <span title=code>{row.object_kind} " " {name}</span> }.into_any(),
    };
    view! {
        <tr>
            // Each cell names its column: on a phone the rows are cards (`table.cards`), the headings hidden.
            <td data-label="#">{row.seq}</td>
            <td data-label=td_string!(l, audit.column.at)>{local_time(row.at)}</td>
            <td data-label=td_string!(l, audit.field.actor)>
                <ActorName actor=row.actor />
                <span class="hint">" (" {row.actor_kind} ")"</span>
            </td>
            // Auditors search and export by the code: it is the name's tooltip.
            <td data-label=td_string!(l, audit.field.action)>
                <span title=row.action>{row.action_label}</span>
            </td>
            <td data-label=td_string!(l, audit.column.object)>{object}</td>
            <td data-label=td_string!(l, audit.field.department) title=row.department class="nowrap">
                {row
                    .department_name
                    .map_or_else(|| view! { "—" }.into_any(), |d| view! { <span data-entered>{d}</span> }.into_any())}
            </td>
            <td data-label=td_string!(
                l, audit.column.changes
            )>
                {row
                    .reason
                    .map(|r| view! { <p class="reason">{td_string!(l, audit.reason_lead)} <Reason reason=r /></p> })}
                // What the event recorded, field by field, exactly as it is stored and exported.
                {(!row.diff.is_empty()).then(|| view! { <Diff action diff=row.diff /> })}
                {may_prove.then(|| view! { <super::audit_proof::ProveButton seq=row.seq /> })}
            </td>
        </tr>
    }
}

/// What an event recorded, field by field: a changed value shows before → after.
#[component]
fn Diff(action: String, diff: Vec<FieldChange>) -> impl IntoView {
    let l = super::labels::locale();
    let lines = diff.into_iter().map(|FieldChange { line, label }| {
        let changed = line.changed();
        // The field's name in words (its key as a tooltip), else its key.
        let name = match (label, line.key.is_empty()) {
            (_, true) => view! { {td_string!(l, audit.value)} }.into_any(),
            (Some(label), false) => view! { <span title=line.key.clone()>{label}</span> }.into_any(),
            (None, false) => view! { <code>{line.key.clone()}</code> }.into_any(),
        };
        let before = line.before.filter(|_| changed).map(|b| {
            view! {
                <del>{value(&action, &line.key, b)}</del>
                " → "
            }
        });
        let after = line
            .after
            .map_or_else(|| view! { {td_string!(l, audit.none)} }.into_any(), |a| value(&action, &line.key, a));
        view! {
            <dt>{name}</dt>
            <dd class=if changed { "changed" } else { "same" }>{before} <ins>{after}</ins></dd>
        }
    });
    view! { <dl class="diff">{lines.collect_view()}</dl> }
}
