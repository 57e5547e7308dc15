//! The audit trail as its page shows it: each event with its people and objects named in the reader's language,
//! and the filters' choices (the catalogue's actions and object types, the departments, the people). The codes
//! stay beside the names: auditors search and export by them.
use super::Caller;
use super::audit_proof::signer;
use super::audit_trail::{self, ChainStatus};
use super::names::Names;
use crate::AppState;
use contract::AppError;
use contract::audit::{AuditChoices, AuditPageView, AuditRow, ChainView, Choice, FieldChange};
use domain::audit::{AuditEvent, ObjectType, diff};
use domain::audit_action::AuditAction;
use domain::audit_export::AuditFilter;
use domain::configuration::name_for;
use domain::roles::Role;
use words::audit::{
    action_code_label_in, action_label_in, field_label_in, object_type_label_in, reason_label_in,
    stored_actor_kind_label_in,
};
use words::i18n::Locale;

pub async fn page(
    state: &AppState,
    caller: &Caller,
    filter: &AuditFilter,
    before: Option<i64>,
    routine: bool,
) -> Result<AuditPageView, AppError> {
    let (events, next) = audit_trail::page(state, caller, filter, before, routine).await?;
    let chain = match audit_trail::chain_status(state).await? {
        ChainStatus::Intact { seq, checked_at } => ChainView::Intact { seq, checked_at },
        ChainStatus::Broken { seq, problem } => ChainView::Broken { seq, problem },
        ChainStatus::Unchecked => ChainView::Unchecked,
    };
    let names = Names::load(&mut state.db.begin_read().await?).await?;
    let l = caller.locale;
    let rows = events.into_iter().map(|e| row(l, &names, e)).collect();
    Ok(AuditPageView {
        rows,
        next,
        chain,
        may_export: caller.user().has(Role::Auditor),
        may_prove: Role::EVIDENCE_READERS.iter().any(|r| caller.user().has(*r)),
        choices: choices(l, caller, &names),
        routine_shown: routine,
        signer_alarm: signer(state).alarm(),
    })
}

fn row(l: Locale, names: &Names, e: AuditEvent) -> AuditRow {
    let (object_kind, object_name, object_href) = object(l, names, &e.object_type, &e.object_id);
    let actor = names.actor(l, &e.actor_kind, &e.actor_label);
    AuditRow {
        diff: diff(e.before_json.as_deref(), e.after_json.as_deref())
            .into_iter()
            .map(|mut line| {
                line.before = line.before.map(|v| people_named(names, &v, l == Locale::en));
                line.after = line.after.map(|v| people_named(names, &v, l == Locale::en));
                FieldChange { label: field_label_in(l, &line.key).map(str::to_string), line }
            })
            .collect(),
        seq: e.seq,
        at: e.at,
        actor_kind: stored_actor_kind_label_in(l, &e.actor_kind),
        actor,
        action_label: action_code_label_in(l, &e.action),
        action: e.action,
        object_kind,
        object_name,
        object_href,
        object_type: e.object_type,
        object_id: e.object_id,
        department_name: e.department.as_deref().map(|code| names.department(code, l == Locale::en).to_string()),
        department: e.department,
        reason: reason_label_in(l, e.reason),
    }
}

/// A recorded value with each `user_id` given as the person's name (`user`) and each department by its name: the
/// page names them; the export keeps the stored values.
fn people_named(names: &Names, stored: &str, english: bool) -> String {
    fn walk(names: &Names, value: &mut serde_json::Value, english: bool) {
        match value {
            serde_json::Value::Array(items) => items.iter_mut().for_each(|item| walk(names, item, english)),
            serde_json::Value::Object(fields) => {
                if let Some(id) = fields.get("user_id").and_then(serde_json::Value::as_i64)
                    && let Some(user) = names.user_by_id(&id.to_string())
                {
                    fields.remove("user_id");
                    fields.insert("user".into(), user.display_name.clone().into());
                }
                if let Some(serde_json::Value::String(code)) = fields.get("department") {
                    let named = names.department(code, english).to_string();
                    fields.insert("department".into(), named.into());
                }
                fields.values_mut().for_each(|v| walk(names, v, english));
            }
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(stored) {
        Ok(mut value @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => {
            walk(names, &mut value, english);
            value.to_string()
        }
        _ => stored.to_string(),
    }
}

/// The object's kind in words, its name when it has one, and its page when it has one.
fn object(l: Locale, names: &Names, object_type: &str, id: &str) -> (String, Option<String>, Option<String>) {
    let Some(kind) = ObjectType::parse(object_type) else { return (object_type.to_string(), None, None) };
    let named = match kind {
        ObjectType::User => names.user_by_id(id).map(|u| u.display_name.clone()),
        ObjectType::Department => {
            let found = names.departments().iter().find(|d| d.id.to_string() == id || d.code == id);
            found.map(|d| name_for(&d.name, d.name_en.as_deref(), l == Locale::en).to_string())
        }
        _ => None,
    };
    let href = match kind {
        ObjectType::Operation => Some(format!("/operations/{id}")),
        ObjectType::RerunBatch => Some(format!("/batches/{id}")),
        ObjectType::Incident => Some(format!("/incidents/{id}")),
        ObjectType::Drill => Some(format!("/admin/drills/{id}")),
        _ => None,
    };
    (object_type_label_in(l, kind).to_string(), named, href)
}

fn choices(l: Locale, caller: &Caller, names: &Names) -> AuditChoices {
    let readable = caller.readable_departments();
    let mut actions: Vec<Choice> = AuditAction::ALL
        .iter()
        .map(|a| Choice { value: a.as_str().into(), label: action_label_in(l, *a).into() })
        .collect();
    actions.sort_by(|a, b| a.label.cmp(&b.label));
    AuditChoices {
        actions,
        object_types: ObjectType::ALL
            .iter()
            .map(|t| Choice { value: t.as_str().into(), label: object_type_label_in(l, *t).into() })
            .collect(),
        departments: names
            .departments()
            .iter()
            .filter(|d| readable.as_ref().is_none_or(|codes| codes.contains(&d.code)))
            .map(|d| Choice {
                value: d.code.clone(),
                label: name_for(&d.name, d.name_en.as_deref(), l == Locale::en).into(),
            })
            .collect(),
        people: names
            .users()
            .iter()
            .map(|u| Choice { value: u.username.clone(), label: format!("{} ({})", u.display_name, u.username) })
            .collect(),
    }
}
