//! Incident reports: what happened to which operations, and the prevention actions that follow. The list with
//! the filing form, one report with its forms (staff and managers of its department; auditors read), and the
//! board's box of overdue actions.
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{
    action_status_label, event_label, failure_class_label, local_input_value, local_time, locale, reader_zone,
};
use crate::api::incidents::{
    AddPreventionAction, FileIncident, LinkOperation, SetActionStatus, UpdateIncident, list_incidents, load_incident,
};
use crate::contract::incidents::{
    ActionView, HistoryEntry, IncidentList, IncidentView, LinkedOperation, OverdueAction,
};
use crate::contract::{AppError, FieldError};
use crate::domain::incidents::{ActionStatus, PAGE_LENGTH};
use crate::domain::invalid::{Field, Rule};
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

/// A refusal in the reader's words; the incident forms' own fields first, then the shared words.
fn error_text_in(l: Locale, error: &AppError) -> String {
    match error {
        AppError::Validation(fields) => fields.iter().map(|f| field_text(l, f)).collect::<Vec<_>>().join(" "),
        other => super::error_message(other),
    }
}

fn field_text(l: Locale, f: &FieldError) -> String {
    match (f.field, f.rule) {
        (Field::ProcessIds | Field::ProcessId, Some(Rule::NotSatisfied)) => {
            td_string!(l, incident.error.other_department).into()
        }
        (Field::OccurredAt, Some(Rule::Unknown)) => td_string!(l, incident.error.bad_time).into(),
        (Field::DueOn, Some(Rule::Unknown)) => td_string!(l, incident.error.bad_date).into(),
        (Field::Owner, Some(Rule::Unknown)) => td_string!(l, incident.error.owner_outside).into(),
        // The shared words for the rule, with this form's name for the field.
        (field, _) => super::field_in(l, f, field_label(l, field)),
    }
}

fn field_label(l: Locale, field: Field) -> Option<&'static str> {
    Some(match field {
        Field::ProcessIds => td_string!(l, incident.field.process_ids),
        Field::ProcessId => td_string!(l, incident.field.process_id),
        Field::Title => td_string!(l, incident.field.title),
        Field::OccurredAt => td_string!(l, incident.field.occurred_at),
        Field::Impact => td_string!(l, incident.field.impact),
        Field::Cause => td_string!(l, incident.field.cause),
        Field::Response => td_string!(l, incident.field.response),
        Field::Description => td_string!(l, incident.field.description),
        Field::Owner => td_string!(l, incident.field.owner),
        Field::DueOn => td_string!(l, incident.field.due_on),
        Field::Evidence => td_string!(l, incident.field.evidence),
        Field::Status => td_string!(l, incident.field.status),
        _ => return None,
    })
}

/// The message of an action's last failure, in this feature's words.
pub fn error_of<T>(action: ServerAction<T>) -> Signal<Option<String>>
where
    T: leptos::server_fn::ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    T::Output: Clone + Send + Sync + 'static,
{
    super::error_in_words(action, error_text_in)
}

#[component]
pub fn IncidentsPage() -> impl IntoView {
    let l = locale();
    // `/incidents?from=ORD-1` (from an operation's page) pre-fills the process IDs.
    let query = use_query_map();
    let from = query.get_untracked().get("from").unwrap_or_default();
    // `?before=ID`: the page after that report (keyset paging).
    let before = move || query.with(|q| q.get("before").and_then(|v| v.parse::<i64>().ok()));
    let list = resource(before, list_incidents);
    view! {
        <h1>{td_string!(l, incident.title)} <Help section=GuideSection::Incidents /></h1>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || {
                let from = from.clone();
                Suspend::new(async move {
                    match list.await {
                        Ok(list) => view! { <Incidents list from /> }.into_any(),
                        Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Incidents(list: IncidentList, from: String) -> impl IntoView {
    let l = locale();
    let empty = list.incidents.is_empty();
    let rows = list.incidents.into_iter().map(|i| {
        let late = i.overdue_actions > 0;
        view! {
            <tr class:overdue=late>
                <td>
                    <A href=format!("/incidents/{}", i.id)>
                        <span data-entered>{i.title.clone()}</span>
                    </A>
                </td>
                <td>{i.department.clone()}</td>
                <td>{local_time(i.occurred_at)}</td>
                <td>{i.open_actions}</td>
                <td data-testid="overdue-count">
                    {match i.overdue_actions {
                        0 => view! { <span>"0"</span> }.into_any(),
                        n => {
                            view! { <span class="badge late">{td_string!(l, incident.action.overdue)} " " {n}</span> }
                                .into_any()
                        }
                    }}
                </td>
            </tr>
        }
    }).collect_view();
    let table = if empty {
        view! {
            <p class="empty" data-testid="incidents-empty">
                {td_string!(l, incident.list.empty)}
            </p>
        }
        .into_any()
    } else {
        view! {
            <table class="grid" data-testid="incidents">
                <caption>{td_string!(l, incident.list.caption)}</caption>
                <thead>
                    <tr>
                        <th scope="col">{td_string!(l, incident.list.incident)}</th>
                        <th scope="col">{td_string!(l, incident.list.department)}</th>
                        <th scope="col">{td_string!(l, incident.list.occurred_at)}</th>
                        <th scope="col">{td_string!(l, incident.list.open_actions)}</th>
                        <th scope="col">{td_string!(l, incident.list.overdue_actions)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    let next = list.next.map(|id| {
        view! {
            <p>
                <A href=format!("/incidents?before={id}")>{td_string!(l, incident.list.next, count = PAGE_LENGTH)}</A>
            </p>
        }
    });
    view! {
        {list.may_file.then(|| view! { <FileForm from /> })}
        {table}
        {next}
    }
}

/// The report's texts as form fields (filing and editing share them), pre-filled when editing.
#[component]
fn TextFields(prefix: &'static str, #[prop(optional)] current: Option<IncidentView>) -> impl IntoView {
    let l = locale();
    let id = move |name: &str| format!("{prefix}-{name}");
    let value = |pick: fn(&IncidentView) -> String| current.as_ref().map(pick).unwrap_or_default();
    // A date-time field speaks the reader's zone, without seconds.
    let occurred = value(|i| local_input_value(reader_zone(), i.occurred_at));
    view! {
        <label for=id("title")>{td_string!(l, incident.field.title)}</label>
        <input id=id("title") name="title" required maxlength="200" value=value(|i| i.title.clone()) />
        <label for=id("occurred-at")>{td_string!(l, incident.field.occurred_at)}</label>
        <input id=id("occurred-at") name="occurred_at" type="datetime-local" required value=occurred />
        <label for=id("impact")>{td_string!(l, incident.field.impact)}</label>
        <textarea id=id("impact") name="impact" required rows="2">
            {value(|i| i.impact.clone())}
        </textarea>
        <label for=id("cause")>{td_string!(l, incident.field.cause)}</label>
        <textarea id=id("cause") name="cause" required rows="2">
            {value(|i| i.cause.clone())}
        </textarea>
        <label for=id("response")>{td_string!(l, incident.field.response)}</label>
        <textarea id=id("response") name="response" required rows="2">
            {value(|i| i.response.clone())}
        </textarea>
    }
}

#[component]
fn FileForm(from: String) -> impl IntoView {
    let l = locale();
    let file = ServerAction::<FileIncident>::new();
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(id)) = file.value().get() {
            navigate(&format!("/incidents/{id}"), Default::default());
        }
    });
    let open = !from.is_empty();
    view! {
        <details class="card" open=open data-testid="file-incident">
            <summary>{td_string!(l, incident.file.title)}</summary>
            <p class="hint">{td_string!(l, incident.file.intro)}</p>
            <ActionForm action=file attr:class="form">
                <label for="file-process-ids">{td_string!(l, incident.field.process_ids)}</label>
                <textarea id="file-process-ids" name="process_ids" required rows="2">
                    {from}
                </textarea>
                <TextFields prefix="file" />
                <crate::ui::ErrorNote error=error_of(file) />
                <button type="submit" disabled=move || file.pending().get()>
                    {td_string!(l, incident.file.submit)}
                </button>
            </ActionForm>
        </details>
    }
}

/// The page's actions; the report reloads after each one.
#[derive(Clone, Copy)]
struct Actions {
    update: ServerAction<UpdateIncident>,
    link: ServerAction<LinkOperation>,
    add: ServerAction<AddPreventionAction>,
    status: ServerAction<SetActionStatus>,
}

impl Actions {
    fn version(&self) -> [usize; 4] {
        [self.update.version().get(), self.link.version().get(), self.add.version().get(), self.status.version().get()]
    }
}

#[component]
pub fn IncidentPage() -> impl IntoView {
    let l = locale();
    let params = use_params_map();
    let actions = Actions {
        update: ServerAction::new(),
        link: ServerAction::new(),
        add: ServerAction::new(),
        status: ServerAction::new(),
    };
    let report = resource(
        move || (params.get().get("id").and_then(|id| id.parse::<i64>().ok()), actions.version()),
        |(id, _)| async move {
            match id {
                Some(id) => load_incident(id).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match report.await {
                    Ok(report) => view! { <Report report actions /> }.into_any(),
                    Err(AppError::NotFound) => {
                        view! {
                            <h1>{td_string!(l, incident.report.heading)}</h1>
                            <p data-testid="incident-not-found">{td_string!(l, incident.report.not_found)}</p>
                            <p>
                                <A href="/incidents">{td_string!(l, incident.report.back)}</A>
                            </p>
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
fn Report(report: IncidentView, actions: Actions) -> impl IntoView {
    let l = locale();
    let (id, may_edit) = (report.id, report.may_edit);
    let editing = may_edit.then(|| view! { <EditForms report=report.clone() actions /> });
    view! {
        <p>
            <A href="/incidents">{td_string!(l, incident.report.back)}</A>
        </p>
        <h1>
            {td_string!(l, incident.report.heading)} " " <span data-testid="incident-title" data-entered>
                {report.title.clone()}
            </span> <Help section=GuideSection::Incidents />
        </h1>
        {(!may_edit)
            .then(|| {
                view! {
                    <p class="hint" data-testid="read-only">
                        {td_string!(l, incident.report.read_only)}
                    </p>
                }
            })}
        <Facts report=report.clone() />
        <LinkedOperations operations=report.operations.clone() />
        <Prevention report=report.clone() actions />
        {editing}
        <History id history=report.history />
    }
}

/// What happened, when, to whom, and what was done: the report's facts.
#[component]
fn Facts(report: IncidentView) -> impl IntoView {
    let l = locale();
    view! {
        <dl class="facts card" data-testid="incident">
            <dt>{td_string!(l, incident.report.department)}</dt>
            <dd>{report.department}</dd>
            <dt>{td_string!(l, incident.report.occurred_at)}</dt>
            <dd data-testid="occurred-at">{local_time(report.occurred_at)}</dd>
            <dt>{td_string!(l, incident.report.filed_by)}</dt>
            <dd>
                <span data-entered>{report.created_by}</span>
                " · "
                {local_time(report.created_at)}
            </dd>
            <dt>{td_string!(l, incident.report.updated_at)}</dt>
            <dd>{local_time(report.updated_at)}</dd>
            <dt>{td_string!(l, incident.report.impact)}</dt>
            <dd class="prose" data-testid="impact" data-entered>
                {report.impact}
            </dd>
            <dt>{td_string!(l, incident.report.cause)}</dt>
            <dd class="prose" data-testid="cause" data-entered>
                {report.cause}
            </dd>
            <dt>{td_string!(l, incident.report.response)}</dt>
            <dd class="prose" data-testid="response" data-entered>
                {report.response}
            </dd>
        </dl>
    }
}

/// The stalled operations linked to the incident.
#[component]
fn LinkedOperations(operations: Vec<LinkedOperation>) -> impl IntoView {
    let l = locale();
    let rows = operations
        .into_iter()
        .map(|o| {
            view! {
                <tr>
                    <td>
                        <A href=format!("/operations/{}", o.process_id)>{o.process_id.clone()}</A>
                    </td>
                    <td>{o.event.as_deref().map(event_label).unwrap_or("—")}</td>
                    <td>{o.failure_class.map(failure_class_label).unwrap_or("—")}</td>
                    <td>{local_time(o.linked_at)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="grid" data-testid="incident-operations">
            <caption>{td_string!(l, incident.operations.caption)}</caption>
            <thead>
                <tr>
                    <th scope="col">{td_string!(l, incident.operations.process_id)}</th>
                    <th scope="col">{td_string!(l, incident.operations.event)}</th>
                    <th scope="col">{td_string!(l, incident.operations.failure_class)}</th>
                    <th scope="col">{td_string!(l, incident.operations.linked_at)}</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The prevention actions, with their status moves for those who may edit.
#[component]
fn Prevention(report: IncidentView, actions: Actions) -> impl IntoView {
    let l = locale();
    let (id, may_edit) = (report.id, report.may_edit);
    let today = report.today.to_string();
    let table = if report.actions.is_empty() {
        view! {
            <p class="empty" data-testid="actions-empty">
                {td_string!(l, incident.action.empty)}
            </p>
        }
        .into_any()
    } else {
        let rows = report
            .actions
            .into_iter()
            .map(|a| view! { <ActionRow a incident=id may_edit status=actions.status /> })
            .collect_view();
        view! {
            <table class="grid" data-testid="prevention-actions">
                <caption class="sr-only">{td_string!(l, incident.action.caption)}</caption>
                <thead>
                    <tr>
                        <th scope="col">{td_string!(l, incident.action.description)}</th>
                        <th scope="col">{td_string!(l, incident.action.owner)}</th>
                        <th scope="col">{td_string!(l, incident.action.due_on)}</th>
                        <th scope="col">{td_string!(l, incident.action.status)}</th>
                        {may_edit.then(|| view! { <th scope="col">{td_string!(l, incident.action.change)}</th> })}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <section aria-labelledby="actions-title" class="prevention">
            <h2 id="actions-title">{td_string!(l, incident.action.caption)}</h2>
            <p class="hint">{td_string!(l, incident.action.today, date = today).to_string()}</p>
            {table}
            <crate::ui::ErrorNote error=error_of(actions.status) />
        </section>
    }
}

/// The report's own history, with a link to it in the audit trail.
#[component]
fn History(id: i64, history: Vec<HistoryEntry>) -> impl IntoView {
    let l = locale();
    view! {
        <section aria-labelledby="history-title">
            <h2 id="history-title">{td_string!(l, incident.history.title)}</h2>
            <ol class="timeline" data-testid="incident-history">
                {history
                    .into_iter()
                    .map(|e| {
                        view! {
                            <li>
                                <time>{local_time(e.at)}</time>
                                " "
                                <strong title=e.action>{e.action_label}</strong>
                                " — "
                                <super::audit::ActorName actor=e.actor />
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
            <p>
                <A href=format!(
                    "/audit?object_type=incident&object_id={id}",
                )>{td_string!(l, incident.history.in_audit)}</A>
            </p>
        </section>
    }
}

/// One prevention action; overdue ones are marked by a class and by an icon with a word.
#[component]
fn ActionRow(a: ActionView, incident: i64, may_edit: bool, status: ServerAction<SetActionStatus>) -> impl IntoView {
    let l = locale();
    let moves: Vec<(ActionStatus, &'static str)> = match a.status {
        ActionStatus::Open => vec![
            (ActionStatus::Done, td_string!(l, incident.action.done)),
            (ActionStatus::Dropped, td_string!(l, incident.action.drop)),
        ],
        ActionStatus::Done | ActionStatus::Dropped => vec![(ActionStatus::Open, td_string!(l, incident.action.reopen))],
    };
    let action_id = a.id;
    let buttons = may_edit.then(|| {
        let forms = moves
            .into_iter()
            .map(|(to, text)| {
                view! {
                    <ActionForm action=status attr:class="inline-button">
                        <input type="hidden" name="id" value=incident.to_string() />
                        <input type="hidden" name="action_id" value=action_id.to_string() />
                        <input type="hidden" name="status" value=to.as_str() />
                        <button type="submit" class="small" data-status=to.as_str()>
                            {text}
                        </button>
                    </ActionForm>
                }
            })
            .collect_view();
        view! { <td>{forms}</td> }
    });
    view! {
        <tr class:overdue=a.overdue data-action=a.id data-status=a.status.as_str()>
            <td data-entered>{a.description.clone()}</td>
            <td data-entered>{a.owner.clone()}</td>
            <td>
                {a.due_on.to_string()}
                {a
                    .overdue
                    .then(|| {
                        view! {
                            " "
                            <strong class="badge late" data-testid="overdue">
                                {td_string!(l, incident.action.overdue)}
                            </strong>
                        }
                    })}
            </td>
            <td data-testid="action-status">
                {action_status_label(a.status)}{a.done_at.map(|at| view! { <small>" · " {local_time(at)}</small> })}
            </td>
            {buttons}
        </tr>
    }
}

/// Staff and managers of the department: add an action, link an operation, edit the texts.
#[component]
fn EditForms(report: IncidentView, actions: Actions) -> impl IntoView {
    let l = locale();
    let id = report.id.to_string();
    let (add_id, link_id) = (id.clone(), id.clone());
    let (add, link, update) = (actions.add, actions.link, actions.update);
    let people = report.people.clone();
    view! {
        <details class="card" open data-testid="add-action">
            <summary>{td_string!(l, incident.action.add)}</summary>
            <ActionForm action=add attr:class="form">
                <input type="hidden" name="id" value=add_id />
                <label for="action-description">{td_string!(l, incident.field.description)}</label>
                <textarea id="action-description" name="description" required rows="2"></textarea>
                <label for="action-owner">{td_string!(l, incident.field.owner)}</label>
                <select id="action-owner" name="owner_id" required>
                    {people
                        .into_iter()
                        .map(|p| {
                            view! {
                                <option value=p.id.to_string() data-entered>
                                    {p.name}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                <label for="action-due-on">{td_string!(l, incident.field.due_on)}</label>
                <input id="action-due-on" name="due_on" type="date" required />
                <crate::ui::ErrorNote error=error_of(add) />
                <button type="submit" disabled=move || add.pending().get()>
                    {td_string!(l, incident.action.add_submit)}
                </button>
            </ActionForm>
        </details>
        <details class="card" data-testid="link-operation">
            <summary>{td_string!(l, incident.link.summary)}</summary>
            <ActionForm action=link attr:class="form">
                <input type="hidden" name="id" value=link_id />
                <label for="link-process-id">{td_string!(l, incident.field.process_id)}</label>
                <input id="link-process-id" name="process_id" required />
                <crate::ui::ErrorNote error=error_of(link) />
                <button type="submit" disabled=move || link.pending().get()>
                    {td_string!(l, incident.link.submit)}
                </button>
            </ActionForm>
        </details>
        <details class="card" data-testid="edit-incident">
            <summary>{td_string!(l, incident.edit.summary)}</summary>
            <ActionForm action=update attr:class="form">
                <input type="hidden" name="id" value=id />
                <TextFields prefix="edit" current=report />
                <crate::ui::ErrorNote error=error_of(update) />
                <button type="submit" disabled=move || update.pending().get()>
                    {td_string!(l, incident.edit.submit)}
                </button>
            </ActionForm>
        </details>
    }
}

/// The board's box: the caller's departments' prevention actions still open after their due date; nothing
/// when there are none.
#[component]
pub fn OverdueBox(actions: Vec<OverdueAction>) -> impl IntoView {
    let l = locale();
    (!actions.is_empty()).then(|| {
        view! {
            <aside class="card overdue-box" data-testid="overdue-actions" aria-labelledby="overdue-title">
                <h2 id="overdue-title">{td_string!(l, incident.board.title)}</h2>
                <table class="grid">
                    <caption class="sr-only">{td_string!(l, incident.board.caption)}</caption>
                    <thead>
                        <tr>
                            <th scope="col">{td_string!(l, incident.board.incident)}</th>
                            <th scope="col">{td_string!(l, incident.board.action)}</th>
                            <th scope="col">{td_string!(l, incident.board.owner)}</th>
                            <th scope="col">{td_string!(l, incident.board.due_on)}</th>
                        </tr>
                    </thead>
                    <tbody>
                        {actions
                            .into_iter()
                            .map(|a| {
                                view! {
                                    <tr class="overdue" data-action=a.action_id>
                                        <td>
                                            <A href=format!("/incidents/{}", a.incident_id)>
                                                <span data-entered>{a.incident_title}</span>
                                            </A>
                                        </td>
                                        <td data-entered>{a.description}</td>
                                        <td data-entered>{a.owner}</td>
                                        <td>
                                            {a.due_on.to_string()} " "
                                            <strong class="badge late">{td_string!(l, incident.action.overdue)}</strong>
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </aside>
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::invalid::unknown_process_ids;

    #[test]
    fn a_report_naming_unknown_operations_is_refused_with_their_ids_in_the_readers_language() {
        let refusal = unknown_process_ids(&["ORD-9"]);
        let field = FieldError { field: Field::ProcessIds, message: refusal.message, rule: Some(refusal.rule) };
        assert_eq!(
            field_text(Locale::ja, &field),
            "次のプロセス ID のオペレーションは、あなたの部門に見つかりません: ORD-9"
        );
    }

    #[test]
    fn a_shared_rule_reads_with_this_forms_name_for_the_field() {
        let field = FieldError { field: Field::Title, message: "required".into(), rule: Some(Rule::Required) };
        assert_eq!(field_text(Locale::ja, &field), "件名: 入力してください");
    }
}
