//! A value the trail recorded, in the reader's words where the product has words for it (statuses, verdicts,
//! step states, stall events, failure classes, roles, yes and no). The stored value stays beside it: exports and
//! searches use it.
use super::admin_users::role_label;
use super::checklist::maker_part_label;
use super::labels::local_time;
use super::labels::{action_status_label, batch_status_label, status_label};
use super::labels::{
    event_label, failure_class_label, locale, operation_status_label, step_state_label, verdict_label,
};
use crate::domain::approval::MakerPart;
use crate::domain::batches::BatchStatus;
use crate::domain::incidents::ActionStatus;
use crate::domain::operations::{OperationStatus, StepState};
use crate::domain::reconciliation::Verdict;
use crate::domain::rerun_request::RerunRequestStatus;
use crate::domain::roles::Role;
use crate::domain::stall::{FailureClass, StallEvent};
use crate::i18n::td_string;

/// `action` is the event's action code: a `status` is a request's, a bulk rerun's, an incident action's or an
/// operation's by the family of the action that recorded it.
pub fn value_words(action: &str, key: &str, value: &str) -> Option<String> {
    let l = locale();
    let family = action.split('.').next().unwrap_or_default();
    let words = match (key, value) {
        (_, "true") => td_string!(l, audit.yes),
        (_, "false") => td_string!(l, audit.no),
        ("status", v) if family == "rerun_request" || family == "rerun" => status_label(RerunRequestStatus::parse(v)?),
        ("status", v) if family == "rerun_batch" => batch_status_label(BatchStatus::parse(v)?),
        ("status", v) if family == "incident" => action_status_label(ActionStatus::parse(v)?),
        ("status" | "operation_status", v) => operation_status_label(OperationStatus::parse(v)?),
        ("verdict", v) => verdict_label(Some(Verdict::parse(v)?)),
        ("state", v) => step_state_label(StepState::parse(v)?),
        ("event", v) => event_label(StallEvent::parse(v)?.as_str()),
        ("failure_class" | "cause_class" | "error_class", v) => failure_class_label(FailureClass::parse(v)?),
        ("roles", v) => return roles_words(v),
        // The evidence's English sentence, said in the reader's language when it reads back.
        ("summary", v) => {
            let basis = crate::domain::reconciliation::Basis::from_summary(v);
            return (basis.summary() == v).then(|| crate::words::evidence::basis_label_in(l, &basis));
        }
        ("part", v) => maker_part_label(MakerPart::parse(v)?),
        // How a person signed in for a decision (`authenticated.method.kind`).
        ("kind", "password") => td_string!(l, audit.method.password),
        ("kind", "provider") => td_string!(l, audit.method.provider),
        ("kind", "chat") => td_string!(l, audit.method.chat),
        ("role", v) => role_label(v.parse::<Role>().ok()?),
        _ => return None,
    };
    Some(words.to_string())
}

/// Roles as recorded (`["manager","staff"]`), named.
fn roles_words(value: &str) -> Option<String> {
    let codes: Vec<String> = serde_json::from_str(value).ok()?;
    if codes.is_empty() {
        return Some("—".to_string());
    }
    let named: Option<Vec<&str>> = codes.iter().map(|c| c.parse::<Role>().ok().map(role_label)).collect();
    Some(named?.join(td_string!(locale(), operation.list_separator)))
}

/// Any other recorded value in words: absent as "—", a list as a list, a record field by field (each field named
/// where the trail has a word for it, its value in words where the product has them), a time in the reader's zone,
/// text as it is. Never JSON.
pub fn plain_words(action: &str, key: &str, value: &serde_json::Value) -> String {
    use serde_json::Value;
    let l = locale();
    match value {
        Value::Null => "—".to_string(),
        Value::Bool(true) => td_string!(l, audit.yes).to_string(),
        Value::Bool(false) => td_string!(l, audit.no).to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(text) => value_words(action, key, text)
            .or_else(|| chrono::DateTime::parse_from_rfc3339(text).ok().map(|at| local_time(at.to_utc())))
            .unwrap_or_else(|| text.clone()),
        Value::Array(items) if items.is_empty() => "—".to_string(),
        Value::Array(items) => items
            .iter()
            .map(|item| plain_words(action, key, item))
            .collect::<Vec<_>>()
            .join(td_string!(l, operation.list_separator)),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| {
                let name = crate::words::audit::field_label_in(l, k).unwrap_or(k);
                format!("{name}: {}", plain_words(action, k, v))
            })
            .collect::<Vec<_>>()
            .join(" · "),
    }
}
