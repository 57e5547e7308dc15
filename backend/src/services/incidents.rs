//! Incident reports: staff and managers file them from their department's operations, edit them, link more
//! operations and follow the prevention actions up; auditors read them all. Every change is one transaction
//! with its audit event (object "incident"). Known patterns are in `known_patterns`.
use super::Caller;
use super::audit::record;
use crate::db::Conn;
use crate::db::incidents::{IncidentRow, IncidentTexts};
use crate::db::operations::OperationRow;
use crate::{AppState, db};
use chrono::{DateTime, NaiveDate, Utc};
use contract::incidents::{
    ActionView, HistoryEntry, IncidentList, IncidentSummary, IncidentView, LinkedOperation, OverdueAction, Person,
};
use contract::{AppError, FieldError};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::incidents::{self as rules, ActionStatus};
use domain::invalid::{Field, Invalid, Rule, unknown_process_ids};
use domain::rights::Act;
use domain::roles::Role;
use domain::stall::FailureClass;
use serde_json::{Map, Value, json};
use words::audit::action_code_label_in;

const HISTORY_LENGTH: i64 = 100;
/// The board's overdue box: the most overdue first.
pub const OVERDUE_ON_BOARD: i64 = 50;

/// The texts of a report as typed into the form.
pub struct TextsForm {
    pub title: String,
    pub occurred_at: String,
    pub impact: String,
    pub cause: String,
    pub response: String,
}

/// The same, checked.
struct Texts {
    title: String,
    occurred_at: DateTime<Utc>,
    impact: String,
    cause: String,
    response: String,
}

impl Texts {
    fn as_db(&self) -> IncidentTexts<'_> {
        IncidentTexts {
            title: &self.title,
            occurred_at: self.occurred_at,
            impact: &self.impact,
            cause: &self.cause,
            response: &self.response,
        }
    }

    fn json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("title".into(), json!(self.title));
        map.insert("occurred_at".into(), json!(self.occurred_at));
        map.insert("impact".into(), json!(self.impact));
        map.insert("cause".into(), json!(self.cause));
        map.insert("response".into(), json!(self.response));
        map
    }
}

/// Every refused field of a form at once, so that the form can say all that is wrong.
#[derive(Default)]
struct Refusals(Vec<FieldError>);

impl Refusals {
    fn check<T>(&mut self, field: Field, checked: Result<T, Invalid>) -> Option<T> {
        checked.map_err(|Invalid { rule, message }| self.0.push(FieldError { field, message, rule: Some(rule) })).ok()
    }

    fn finish(self) -> Result<(), AppError> {
        if self.0.is_empty() { Ok(()) } else { Err(AppError::Validation(self.0)) }
    }
}

fn check_texts(caller: &Caller, form: &TextsForm, now: DateTime<Utc>, refusals: &mut Refusals) -> Option<Texts> {
    let zone = domain::preferences::time_zone_or_default(&caller.user().time_zone);
    let title = refusals.check(Field::Title, rules::title(&form.title));
    let occurred_at = refusals.check(Field::OccurredAt, rules::occurred_at(&form.occurred_at, zone, now));
    let impact = refusals.check(Field::Impact, rules::text(&form.impact));
    let cause = refusals.check(Field::Cause, rules::text(&form.cause));
    let response = refusals.check(Field::Response, rules::text(&form.response));
    Some(Texts { title: title?, occurred_at: occurred_at?, impact: impact?, cause: cause?, response: response? })
}

/// Staff or a manager who belongs to the department: may change its reports. Auditors read only.
pub(super) fn may_write(caller: &Caller, department: &str) -> bool {
    caller.may_act(Act::ReportIncident, department)
}

pub(super) fn require_write(caller: &Caller, department: &str) -> Result<(), AppError> {
    caller.check_act(Act::ReportIncident, department)
}

/// The report, locked for a change by someone who may make it; another department's report does not exist.
async fn incident_for_change(tx: &mut Conn, caller: &Caller, id: i64) -> Result<IncidentRow, AppError> {
    let incident = db::incidents::lock(tx, id).await?.ok_or(AppError::NotFound)?;
    if !caller.may_read(&incident.department) {
        return Err(AppError::NotFound);
    }
    require_write(caller, &incident.department)?;
    Ok(incident)
}

fn entry(caller: &Caller, action: AuditAction, incident: i64, department: &str) -> AuditEntry {
    AuditEntry::new(caller.actor(), action, ObjectType::Incident, incident).department(Some(department))
}

/// The operations behind these process IDs; unknown ones and those the caller may not see are refused alike.
async fn operations_for(
    tx: &mut Conn,
    caller: &Caller,
    field: Field,
    ids: &[String],
) -> Result<Vec<OperationRow>, AppError> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        match db::operations::by_process_id(tx, id).await? {
            Some(operation) if caller.may_read(&operation.department) => found.push(operation),
            _ => missing.push(id.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(AppError::invalid(field, unknown_process_ids(&missing)));
    }
    Ok(found)
}

fn one_department(field: Field, department: &str, operations: &[OperationRow]) -> Result<(), AppError> {
    if operations.iter().all(|o| o.department == department) {
        return Ok(());
    }
    Err(AppError::invalid(
        field,
        Invalid::new(Rule::NotSatisfied, "every operation of a report belongs to its department"),
    ))
}

pub async fn file(state: &AppState, caller: &Caller, process_ids: &str, form: TextsForm) -> Result<i64, AppError> {
    caller.require_any(&[Role::Staff, Role::Manager])?;
    let now = state.clock.now();
    let mut refusals = Refusals::default();
    let ids = refusals.check(Field::ProcessIds, rules::process_ids(process_ids));
    let texts = check_texts(caller, &form, now, &mut refusals);
    refusals.finish()?;
    let (Some(ids), Some(texts)) = (ids, texts) else { return Err(AppError::Internal) };

    let mut tx = state.db.begin_write().await?;
    let operations = operations_for(&mut tx, caller, Field::ProcessIds, &ids).await?;
    let department = operations[0].department.clone();
    one_department(Field::ProcessIds, &department, &operations)?;
    require_write(caller, &department)?;
    let id = db::incidents::insert(&mut tx, &department, &texts.as_db(), caller.user_id(), now).await?;
    for operation in &operations {
        db::incidents::link(
            &mut tx,
            id,
            operation.id,
            operation.event.as_deref(),
            operation.failure_class.as_deref(),
            now,
        )
        .await?;
    }
    let mut after = texts.json();
    after.insert("department".into(), json!(department));
    after.insert("operations".into(), json!(ids));
    record(
        &mut tx,
        entry(caller, AuditAction::IncidentCreated, id, &department).after(Value::Object(after)),
        caller.request_id.as_deref(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Changes the texts; the audit event holds only what changed (nothing changed: no event).
pub async fn update(state: &AppState, caller: &Caller, id: i64, form: TextsForm) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut refusals = Refusals::default();
    let texts = check_texts(caller, &form, now, &mut refusals);
    let mut tx = state.db.begin_write().await?;
    let incident = incident_for_change(&mut tx, caller, id).await?;
    refusals.finish()?;
    let Some(texts) = texts else { return Err(AppError::Internal) };
    let stored = Texts {
        title: incident.title,
        occurred_at: incident.occurred_at,
        impact: incident.impact,
        cause: incident.cause,
        response: incident.response,
    };
    let (old, new) = (stored.json(), texts.json());
    let changed: Vec<&String> = new.keys().filter(|k| old.get(*k) != new.get(*k)).collect();
    if changed.is_empty() {
        return Ok(());
    }
    let pick =
        |map: &Map<String, Value>| Value::Object(changed.iter().map(|k| ((*k).clone(), map[*k].clone())).collect());
    db::incidents::update_texts(&mut tx, id, &texts.as_db(), now).await?;
    let audit =
        entry(caller, AuditAction::IncidentUpdated, id, &incident.department).before(pick(&old)).after(pick(&new));
    record(&mut tx, audit, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn link(state: &AppState, caller: &Caller, id: i64, process_id: &str) -> Result<(), AppError> {
    let now = state.clock.now();
    let process_id = process_id.trim();
    if process_id.is_empty() {
        return Err(AppError::invalid(Field::ProcessId, Invalid::new(Rule::Required, "a process ID is required")));
    }
    let mut tx = state.db.begin_write().await?;
    let incident = incident_for_change(&mut tx, caller, id).await?;
    let operations = operations_for(&mut tx, caller, Field::ProcessId, &[process_id.to_string()]).await?;
    one_department(Field::ProcessId, &incident.department, &operations)?;
    let operation = &operations[0];
    let (event, failure_class) = (operation.event.as_deref(), operation.failure_class.as_deref());
    if !db::incidents::link(&mut tx, id, operation.id, event, failure_class, now).await? {
        return Err(AppError::conflict(Conflict::AlreadyLinked, "the operation is already linked to this report"));
    }
    db::incidents::touch(&mut tx, id, now).await?;
    let after = json!({"process_id": process_id, "event": event, "failure_class": failure_class});
    record(
        &mut tx,
        entry(caller, AuditAction::IncidentOperationLinked, id, &incident.department).after(after),
        caller.request_id.as_deref(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn add_action(
    state: &AppState,
    caller: &Caller,
    id: i64,
    description: &str,
    owner_id: &str,
    due_on: &str,
) -> Result<i64, AppError> {
    let now = state.clock.now();
    let mut refusals = Refusals::default();
    let description = refusals.check(Field::Description, rules::text(description));
    let due_on = refusals.check(Field::DueOn, rules::due_on(due_on));
    let owner_id = refusals.check(
        Field::Owner,
        owner_id.trim().parse::<i64>().map_err(|_| Invalid::new(Rule::Required, "choose an owner")),
    );
    let mut tx = state.db.begin_write().await?;
    let incident = incident_for_change(&mut tx, caller, id).await?;
    let people = db::incidents::department_people(&mut tx, &incident.department).await?;
    let owner = owner_id.and_then(|o| people.iter().find(|(id, _)| *id == o).cloned());
    if owner_id.is_some() && owner.is_none() {
        refusals.check::<()>(
            Field::Owner,
            Err(Invalid::new(Rule::Unknown, "the owner must be a user of the report's department")),
        );
    }
    refusals.finish()?;
    let (Some(description), Some(due_on), Some((owner_id, owner_name))) = (description, due_on, owner) else {
        return Err(AppError::Internal);
    };
    let action_id = db::incidents::insert_action(&mut tx, id, &description, owner_id, due_on, now).await?;
    db::incidents::touch(&mut tx, id, now).await?;
    let after = json!({"action_id": action_id, "description": description, "owner": owner_name, "owner_id": owner_id,
        "due_on": due_on, "status": ActionStatus::Open});
    record(
        &mut tx,
        entry(caller, AuditAction::IncidentActionAdded, id, &incident.department).after(after),
        caller.request_id.as_deref(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(action_id)
}

pub async fn set_action_status(
    state: &AppState,
    caller: &Caller,
    id: i64,
    action_id: i64,
    status: &str,
) -> Result<(), AppError> {
    let now = state.clock.now();
    let to = ActionStatus::parse(status.trim())
        .ok_or_else(|| AppError::invalid(Field::Status, Invalid::new(Rule::Unknown, "open, done or dropped")))?;
    let mut tx = state.db.begin_write().await?;
    let incident = incident_for_change(&mut tx, caller, id).await?;
    let action = db::incidents::action(&mut tx, id, action_id).await?.ok_or(AppError::NotFound)?;
    let from = ActionStatus::parse(&action.status).unwrap_or(ActionStatus::Open);
    if !rules::may_move(from, to)
        || !db::incidents::set_action_status(&mut tx, action_id, from.as_str(), to.as_str(), now).await?
    {
        return Err(AppError::conflict(Conflict::ActionUnchanged, format!("the action is already {}", from.as_str())));
    }
    db::incidents::touch(&mut tx, id, now).await?;
    let audit = entry(caller, AuditAction::IncidentActionUpdated, id, &incident.department)
        .before(json!({"action_id": action_id, "description": action.description, "status": from}))
        .after(json!({"action_id": action_id, "description": action.description, "status": to}));
    record(&mut tx, audit, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// A page of the reports the caller may read, newest first; `before`: the last report of the previous page.
pub async fn list(state: &AppState, caller: &Caller, before: Option<i64>) -> Result<IncidentList, AppError> {
    let today = rules::today(state.clock.now());
    let visible = caller.readable_departments();
    let mut tx = state.db.begin_read().await?;
    let mut rows =
        db::incidents::list(&mut tx, visible.as_deref(), today, before, rules::PAGE_LENGTH as i64 + 1).await?;
    let next = (rows.len() > rules::PAGE_LENGTH).then(|| {
        rows.truncate(rules::PAGE_LENGTH);
        rows[rules::PAGE_LENGTH - 1].id
    });
    let incidents = rows
        .into_iter()
        .map(|r| IncidentSummary {
            id: r.id,
            title: r.title,
            department: r.department,
            occurred_at: r.occurred_at,
            open_actions: r.open_actions,
            overdue_actions: r.overdue_actions,
        })
        .collect();
    let may_file = caller.user().departments.iter().any(|d| may_write(caller, &d.code));
    Ok(IncidentList { incidents, next, may_file })
}

pub async fn load(state: &AppState, caller: &Caller, id: i64) -> Result<IncidentView, AppError> {
    let today = rules::today(state.clock.now());
    let mut tx = state.db.begin_read().await?;
    let incident = db::incidents::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
    if !caller.may_read(&incident.department) {
        return Err(AppError::NotFound);
    }
    let may_edit = may_write(caller, &incident.department);
    let operations = db::incidents::linked(&mut tx, id)
        .await?
        .into_iter()
        .map(|l| LinkedOperation {
            process_id: l.process_id,
            event: l.event,
            failure_class: l.failure_class.as_deref().and_then(FailureClass::parse),
            linked_at: l.linked_at,
        })
        .collect();
    let actions = db::incidents::actions(&mut tx, id).await?.into_iter().map(|a| action_view(a, today)).collect();
    let names = super::names::Names::load(&mut tx).await?;
    let history = db::audit::for_object(&mut tx, "incident", &id.to_string(), HISTORY_LENGTH)
        .await?
        .into_iter()
        .map(|e| HistoryEntry {
            at: e.at,
            actor: names.actor(caller.locale, &e.actor_kind, &e.actor_label),
            action_label: action_code_label_in(caller.locale, &e.action),
            action: e.action,
        })
        .collect();
    let people = match may_edit {
        true => db::incidents::department_people(&mut tx, &incident.department).await?,
        false => Vec::new(),
    };
    Ok(IncidentView {
        id,
        department: incident.department,
        title: incident.title,
        occurred_at: incident.occurred_at,
        impact: incident.impact,
        cause: incident.cause,
        response: incident.response,
        created_by: incident.created_by,
        created_at: incident.created_at,
        updated_at: incident.updated_at,
        operations,
        actions,
        history,
        may_edit,
        people: people.into_iter().map(|(id, name)| Person { id, name }).collect(),
        today,
    })
}

fn action_view(a: db::incidents::ActionRow, today: NaiveDate) -> ActionView {
    let status = ActionStatus::parse(&a.status).unwrap_or(ActionStatus::Open);
    ActionView {
        id: a.id,
        description: a.description,
        owner_id: a.owner_id,
        owner: a.owner,
        due_on: a.due_on,
        status,
        done_at: a.done_at,
        overdue: rules::is_overdue(status, a.due_on, today),
    }
}

/// The board's box: open actions past their due date in the caller's departments (auditors: all).
pub async fn overdue_in(tx: &mut Conn, caller: &Caller, now: DateTime<Utc>) -> Result<Vec<OverdueAction>, AppError> {
    let visible = caller.readable_departments();
    let rows = db::incidents::overdue(tx, visible.as_deref(), rules::today(now), OVERDUE_ON_BOARD).await?;
    Ok(rows
        .into_iter()
        .map(|r| OverdueAction {
            incident_id: r.incident_id,
            incident_title: r.title,
            department: r.department,
            action_id: r.action_id,
            description: r.description,
            owner: r.owner,
            due_on: r.due_on,
        })
        .collect())
}
