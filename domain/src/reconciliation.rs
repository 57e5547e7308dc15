//! Reconciliation: what the outside system says really happened to one step, judged into a verdict.
//! "Not found" is never proof by itself: only an authoritative look-up by idempotency key, past the provider's
//! consistency delay and within its key-retention window, proves that a step did not run.
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Verdict {
    /// A record was found and its content matches the step.
    Executed,
    /// A record was found that says the work was done, but nothing of its content was compared with the step's
    /// (no content, no field the connector reads, no field both carry): the key alone says it ran, not what ran.
    ExecutedNotCompared,
    /// A record was found but its content differs: a data inconsistency, never rerun.
    ExecutedMismatch,
    /// The outside system proves there is no record.
    NotExecuted,
    /// Accepted and still being worked on.
    InProgress,
    /// Nothing found, but absence cannot be proven (or no look-up is possible).
    Unknown,
    /// The look-up itself failed (network, credentials, timeout).
    LookupFailed,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Executed,
        Verdict::ExecutedNotCompared,
        Verdict::ExecutedMismatch,
        Verdict::NotExecuted,
        Verdict::InProgress,
        Verdict::Unknown,
        Verdict::LookupFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Executed => "executed",
            Verdict::ExecutedNotCompared => "executed_not_compared",
            Verdict::ExecutedMismatch => "executed_mismatch",
            Verdict::NotExecuted => "not_executed",
            Verdict::InProgress => "in_progress",
            Verdict::Unknown => "unknown",
            Verdict::LookupFailed => "lookup_failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a provider's record says about the work, after the connector's status map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// The work was done (sent, issued, generated).
    Done,
    /// Accepted, still running (queued, in progress).
    Running,
    /// The provider says the work did not happen (failed before doing anything, cancelled before start).
    NotDone,
    /// A status the connector cannot place: a person must look.
    Unclear,
}

/// One record the outside system holds for the step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub external_id: Option<String>,
    pub at: Option<DateTime<Utc>>,
    /// The provider's own status word, kept as evidence.
    pub status_text: Option<String>,
    pub status: RecordStatus,
    /// The fields the connector read from the record, to compare with the step's content.
    pub fields: Map<String, Value>,
    /// Tokens an AI generation used, when the provider says.
    #[serde(default)]
    pub usage: Option<super::ai::Usage>,
}

/// The answer of one look-up, before judging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Finding {
    Found(Vec<Record>),
    /// Nothing found; `authoritative` when the provider's "not found" for this key means it never happened.
    NotFound {
        authoritative: bool,
    },
    /// No look-up is possible (e.g. no result ID and no key search at this provider).
    NoLookup(LookupProblem),
    Failed(LookupProblem),
}

/// Why a look-up gave no answer, as facts. Its English `text` is what the evidence keeps (the API and the
/// exports), and reads back with `parse`; the pages say it in the reader's language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum LookupProblem {
    /// No answer within the connector's timeout.
    NoAnswerWithin { seconds: u64 },
    /// The provider answered with an HTTP error status.
    HttpStatus { status: u16 },
    /// The provider's answer is not JSON.
    NotJson,
    /// No result ID to look up, at a provider that cannot search by key.
    NoResultId,
    /// Anything else (no connection, a refused address), in the technical words of the library, redacted.
    Other { detail: String },
}

impl LookupProblem {
    pub fn text(&self) -> String {
        match self {
            LookupProblem::NoAnswerWithin { seconds } => format!("no answer within {seconds} s"),
            LookupProblem::HttpStatus { status } => format!("the provider answered HTTP {status}"),
            LookupProblem::NotJson => "the provider's answer is not JSON".into(),
            LookupProblem::NoResultId => "no result ID to look up at this provider".into(),
            LookupProblem::Other { detail } => redact(detail),
        }
    }

    pub fn parse(text: &str) -> LookupProblem {
        let number = |before: &str, after: &str| text.strip_prefix(before)?.strip_suffix(after)?.parse().ok();
        if let Some(seconds) = number("no answer within ", " s") {
            return LookupProblem::NoAnswerWithin { seconds };
        }
        if let Some(status) = number("the provider answered HTTP ", "") {
            return LookupProblem::HttpStatus { status: status as u16 };
        }
        match text {
            "the provider's answer is not JSON" => LookupProblem::NotJson,
            "no result ID to look up at this provider" => LookupProblem::NoResultId,
            _ => LookupProblem::Other { detail: text.to_string() },
        }
    }
}

/// When a provider's "not found" may count as proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbsenceRules {
    /// Records may take this long to become visible to look-ups.
    pub consistency_delay_seconds: i64,
    /// The provider remembers a key this long; older, absence proves nothing.
    pub retention_days: i64,
}

/// One compared field: what the step says, what the record says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ComparedField {
    pub name: String,
    /// Any JSON value (a number, a string…): what the step's content says.
    pub expected: Option<Value>,
    /// Any JSON value: what the outside system's record says.
    pub found: Option<Value>,
    pub matches: bool,
}

/// What the verdict rests on. Holds IDs, statuses and compared values, never credentials.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Evidence {
    pub external_id: Option<String>,
    pub external_at: Option<DateTime<Utc>>,
    pub status_text: Option<String>,
    /// How many records the provider holds for this key (more than one is a double send).
    pub records: usize,
    pub compared: Vec<ComparedField>,
    /// Fields of the step's content that the record does not carry (not compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_not_in_record: Vec<String>,
    /// Fields of the record that the step's content does not name (not compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record_not_in_content: Vec<String>,
    /// The record's fields that were not compared, as read (personal ones redacted): what a person looks at
    /// beside the step's content before confirming that what ran is what was meant.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub uncompared_record: Map<String, Value>,
    /// The basis in one English sentence, for the API and the exports; pages say `basis` in the reader's
    /// language.
    pub summary: String,
    /// What the verdict rests on, as facts. Absent in evidence recorded before it existed: see `basis()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<Object>))]
    pub basis: Option<Basis>,
}

impl Evidence {
    /// Evidence that rests on `basis`, its summary said from it.
    pub fn of(basis: Basis) -> Evidence {
        Evidence { summary: basis.summary(), basis: Some(basis), ..Evidence::default() }
    }

    /// What the verdict rests on; for older evidence, read back from its English summary.
    pub fn basis(&self) -> Basis {
        self.basis.clone().unwrap_or_else(|| Basis::from_summary(&self.summary))
    }
}

/// What a verdict rests on, as facts (counts, statuses, field names, seconds, days), never as a sentence: each
/// reader gets it in their language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// The provider holds `count` records for the key; the deciding one's status, and the fields that differ.
    /// `not_compared`: why nothing of the record was compared with the step, so that "executed" says nothing
    /// about what was done (another amount would pass unseen). `content_not_compared`: the same, as evidence
    /// recorded before the reason was kept said it (the step had no content).
    Records {
        count: usize,
        status: Option<String>,
        differs_in: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        content_not_compared: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        not_compared: Option<NotCompared>,
    },
    /// An authoritative look-up found no record for the key.
    NoRecord,
    /// Not found, but this provider's "not found" proves nothing.
    NotFoundProvesNothing,
    /// Not found yet, but records may take this long to appear.
    NotFoundYet { delay_seconds: i64 },
    /// Not found, but the provider keeps keys only this long.
    NotFoundPastRetention { retention_days: i64 },
    /// The provider answered with no record at all.
    EmptyResult,
    /// The look-up failed; why, as `LookupProblem::text` writes it.
    LookupFailed { detail: String },
    /// No look-up is possible; why, as `LookupProblem::text` writes it.
    NoLookup { detail: String },
    /// A person recorded the verdict with what they checked.
    ByHand { text: String },
    /// Older evidence whose summary this version does not recognise, as it was written.
    Text { text: String },
}

/// Why nothing of a record was compared with the step's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotCompared {
    /// The step was registered without content.
    NoContent,
    /// The connector reads no field of the record (no `fields` mapping).
    NoFieldRead,
    /// The step's content and the record share no field name.
    NoCommonField,
}

impl NotCompared {
    fn summary(self) -> &'static str {
        match self {
            NotCompared::NoContent => NOT_COMPARED,
            NotCompared::NoFieldRead => "; content not compared: the connector reads no field of the record",
            NotCompared::NoCommonField => "; content not compared: the step's content and the record share no field",
        }
    }
}

const MANY: &str = "; more than one execution for one key";
const NOT_COMPARED: &str = "; step content not compared: the step was registered without content";

impl Basis {
    /// The English sentence of the API and the exports (the wording evidence always had).
    pub fn summary(&self) -> String {
        match self {
            Basis::Records { count, status, differs_in, content_not_compared, not_compared } => {
                let mut summary = format!("{count} record(s); status {}", status.as_deref().unwrap_or("—"));
                if !differs_in.is_empty() {
                    summary.push_str(&format!("; differs in {}", differs_in.join(", ")));
                }
                if *count > 1 {
                    summary.push_str(MANY);
                }
                match (not_compared, content_not_compared) {
                    (Some(why), _) => summary.push_str(why.summary()),
                    (None, true) => summary.push_str(NOT_COMPARED),
                    (None, false) => {}
                }
                summary
            }
            Basis::NoRecord => "no record for this idempotency key (authoritative look-up)".into(),
            Basis::NotFoundProvesNothing => {
                "not found, and this provider's \"not found\" does not prove absence".into()
            }
            Basis::NotFoundYet { delay_seconds } => {
                format!("not found yet, but records may take {delay_seconds} s to appear")
            }
            Basis::NotFoundPastRetention { retention_days } => {
                format!("not found, but the provider keeps keys only {retention_days} days")
            }
            Basis::EmptyResult => "the provider returned an empty result".into(),
            Basis::LookupFailed { detail } | Basis::NoLookup { detail } => detail.clone(),
            Basis::ByHand { text } | Basis::Text { text } => text.clone(),
        }
    }

    /// Evidence written before the basis was kept: its summary read back (the sentences `summary` writes).
    pub fn from_summary(summary: &str) -> Basis {
        let fixed = [Basis::NoRecord, Basis::NotFoundProvesNothing, Basis::EmptyResult];
        if let Some(basis) = fixed.into_iter().find(|b| b.summary() == summary) {
            return basis;
        }
        let number =
            |text: &str, before: &str, after: &str| text.strip_prefix(before)?.strip_suffix(after)?.parse::<i64>().ok();
        if let Some(delay_seconds) = number(summary, "not found yet, but records may take ", " s to appear") {
            return Basis::NotFoundYet { delay_seconds };
        }
        if let Some(retention_days) = number(summary, "not found, but the provider keeps keys only ", " days") {
            return Basis::NotFoundPastRetention { retention_days };
        }
        Basis::records_from_summary(summary).unwrap_or_else(|| Basis::Text { text: summary.to_string() })
    }

    fn records_from_summary(summary: &str) -> Option<Basis> {
        let (count, rest) = summary.split_once(" record(s); status ")?;
        let count: usize = count.parse().ok()?;
        let content_not_compared = rest.ends_with(NOT_COMPARED);
        let rest = rest.strip_suffix(NOT_COMPARED).unwrap_or(rest);
        let rest = rest.strip_suffix(MANY).unwrap_or(rest);
        let (status, differs) = match rest.split_once("; differs in ") {
            Some((status, fields)) => (status, fields.split(", ").map(str::to_string).collect()),
            None => (rest, Vec::new()),
        };
        let status = (status != "—").then(|| status.to_string());
        let basis = Basis::Records { count, status, differs_in: differs, content_not_compared, not_compared: None };
        // Only a sentence this reading gives back exactly is understood.
        (basis.summary() == summary).then_some(basis)
    }
}

/// What the step looked like when it was checked.
pub struct StepContext<'a> {
    /// The step's content as registered (compared field by field with the record).
    pub content: Option<&'a Map<String, Value>>,
    /// The fields to compare; empty: every field of the step's content that the record also carries.
    pub compare: &'a [String],
    /// When the step was first attempted (or the operation registered): the clock for the absence rules.
    pub attempted_at: DateTime<Utc>,
}

/// Turns a look-up's finding into a verdict with its evidence.
pub fn judge(
    finding: &Finding,
    step: &StepContext<'_>,
    rules: AbsenceRules,
    now: DateTime<Utc>,
) -> (Verdict, Evidence) {
    match finding {
        Finding::Failed(problem) => {
            (Verdict::LookupFailed, Evidence::of(Basis::LookupFailed { detail: problem.text() }))
        }
        Finding::NoLookup(problem) => (Verdict::Unknown, Evidence::of(Basis::NoLookup { detail: problem.text() })),
        Finding::NotFound { authoritative } => {
            let visible_since = step.attempted_at + Duration::seconds(rules.consistency_delay_seconds);
            let forgotten_at = step.attempted_at + Duration::days(rules.retention_days);
            let (verdict, basis) = if !authoritative {
                (Verdict::Unknown, Basis::NotFoundProvesNothing)
            } else if now < visible_since {
                (Verdict::Unknown, Basis::NotFoundYet { delay_seconds: rules.consistency_delay_seconds })
            } else if now >= forgotten_at {
                (Verdict::Unknown, Basis::NotFoundPastRetention { retention_days: rules.retention_days })
            } else {
                (Verdict::NotExecuted, Basis::NoRecord)
            };
            (verdict, Evidence::of(basis))
        }
        Finding::Found(records) => judge_records(records, step),
    }
}

fn judge_records(records: &[Record], step: &StepContext<'_>) -> (Verdict, Evidence) {
    // The record that did the work speaks for the step; otherwise the latest one.
    let Some(record) = records.iter().find(|r| r.status == RecordStatus::Done).or_else(|| records.last()) else {
        return (Verdict::Unknown, Evidence::of(Basis::EmptyResult));
    };
    let compared = compare(step, &record.fields);
    let mismatched: Vec<&str> = compared.iter().filter(|c| !c.matches).map(|c| c.name.as_str()).collect();
    let not_compared = compared.is_empty().then(|| why_not_compared(step, &record.fields));
    let verdict = match record.status {
        RecordStatus::Done if not_compared.is_some() => Verdict::ExecutedNotCompared,
        RecordStatus::Done if mismatched.is_empty() => Verdict::Executed,
        RecordStatus::Done => Verdict::ExecutedMismatch,
        RecordStatus::Running => Verdict::InProgress,
        RecordStatus::NotDone => Verdict::NotExecuted,
        RecordStatus::Unclear => Verdict::Unknown,
    };
    let basis = Basis::Records {
        count: records.len(),
        status: record.status_text.clone(),
        differs_in: mismatched.iter().map(|name| name.to_string()).collect(),
        content_not_compared: false,
        not_compared,
    };
    let content = step.content.cloned().unwrap_or_default();
    let evidence = Evidence {
        external_id: record.external_id.clone(),
        external_at: record.at,
        status_text: record.status_text.clone(),
        records: records.len(),
        content_not_in_record: content.keys().filter(|k| !record.fields.contains_key(*k)).cloned().collect(),
        record_not_in_content: record.fields.keys().filter(|k| !content.contains_key(*k)).cloned().collect(),
        uncompared_record: redacted(
            record.fields.iter().filter(|(name, _)| !compared.iter().any(|c| &c.name == *name)),
        ),
        compared,
        ..Evidence::of(basis)
    };
    (verdict, evidence)
}

fn why_not_compared(step: &StepContext<'_>, found: &Map<String, Value>) -> NotCompared {
    if step.content.is_none_or(Map::is_empty) {
        NotCompared::NoContent
    } else if found.is_empty() {
        NotCompared::NoFieldRead
    } else {
        NotCompared::NoCommonField
    }
}

/// The fields compared: those `compare` names (each must be in the step's content), else every field both the
/// step's content and the record carry, by the same name.
fn compare(step: &StepContext<'_>, found: &Map<String, Value>) -> Vec<ComparedField> {
    let Some(expected) = step.content else {
        return Vec::new();
    };
    let names: Vec<&String> = if step.compare.is_empty() {
        expected.keys().filter(|k| found.contains_key(*k)).collect()
    } else {
        step.compare.iter().collect()
    };
    names
        .into_iter()
        .filter(|name| expected.contains_key(*name))
        .map(|name| {
            let (e, f) = (expected.get(name), found.get(name));
            ComparedField {
                name: name.clone(),
                matches: e.is_some() && same_value(e, f),
                expected: e.map(|v| redact_value(name, v)),
                found: f.map(|v| redact_value(name, v)),
            }
        })
        .collect()
}

/// Numbers compare by value (a provider may send `4000` as `4000.0` or `"4000"`); the rest exactly.
fn same_value(a: Option<&Value>, b: Option<&Value>) -> bool {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match (a, b) {
        (Some(a), Some(b)) => a == b || matches!((number(a), number(b)), (Some(x), Some(y)) if x == y),
        _ => false,
    }
}

/// Keys whose values are personal or secret are kept as evidence only as "matches or not".
fn is_sensitive(name: &str) -> bool {
    let name = name.to_lowercase();
    ["email", "mail", "phone", "address", "token", "secret", "password", "card"].iter().any(|w| name.contains(w))
}

/// Fields as evidence keeps them: personal or secret values redacted.
pub fn redacted<'a>(fields: impl IntoIterator<Item = (&'a String, &'a Value)>) -> Map<String, Value> {
    fields.into_iter().map(|(name, value)| (name.clone(), redact_value(name, value))).collect()
}

fn redact_value(name: &str, value: &Value) -> Value {
    if is_sensitive(name) { Value::String("[redacted]".into()) } else { value.clone() }
}

/// Messages from outside (errors, bodies) are cut short and stripped of anything that looks like a credential.
pub fn redact(text: &str) -> String {
    let cleaned: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            let lower = word.to_lowercase();
            let secretish = lower.starts_with("bearer")
                || lower.contains("key=")
                || lower.contains("token=")
                || lower.starts_with("sk_")
                || lower.starts_with("sk-")
                || (word.len() >= 32 && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)));
            if secretish { "[redacted]".to_string() } else { word.to_string() }
        })
        .collect();
    let joined = cleaned.join(" ");
    match joined.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// What an outside system's own status word means, for the pages (the API and exports keep the word itself).
/// Each system has its words; these are the common ones, anything else is shown as the system wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutsideStatus {
    Done,
    InProgress,
    Waiting,
    Failed,
    Cancelled,
}

impl OutsideStatus {
    pub fn read(word: &str) -> Option<OutsideStatus> {
        Some(match word.trim().to_ascii_lowercase().replace([' ', '-'], "_").as_str() {
            "completed" | "complete" | "succeeded" | "success" | "done" | "sent" | "delivered" | "processed"
            | "paid" | "issued" | "registered" | "created" | "accepted" | "ok" => OutsideStatus::Done,
            "in_progress" | "processing" | "running" | "started" => OutsideStatus::InProgress,
            "queued" | "pending" | "waiting" | "scheduled" => OutsideStatus::Waiting,
            "failed" | "failure" | "error" | "rejected" | "bounced" | "incomplete" => OutsideStatus::Failed,
            "cancelled" | "canceled" | "void" | "voided" => OutsideStatus::Cancelled,
            _ => return None,
        })
    }
}

/// A verdict read before the step's completion flag was set no longer describes the step: the step has run since
/// (a rerun succeeded). The page shows it as superseded at that moment instead of next to a "✓" it contradicts.
pub fn superseded_at(checked_at: DateTime<Utc>, completed_at: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    completed_at.filter(|completed| *completed > checked_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outside_systems_common_status_words_are_read_and_others_left_as_written() {
        assert_eq!(OutsideStatus::read("completed"), Some(OutsideStatus::Done));
        assert_eq!(OutsideStatus::read("In Progress"), Some(OutsideStatus::InProgress));
        assert_eq!(OutsideStatus::read("canceled"), Some(OutsideStatus::Cancelled));
        assert_eq!(OutsideStatus::read("partially_refunded"), None);
    }

    #[test]
    fn a_verdict_read_before_the_step_completed_is_superseded_by_the_completion() {
        let checked = DateTime::from_timestamp(1_000, 0).unwrap();
        let later = DateTime::from_timestamp(2_000, 0).unwrap();
        assert_eq!(superseded_at(checked, Some(later)), Some(later));
        assert_eq!(superseded_at(later, Some(checked)), None, "read after the completion: it stands");
        assert_eq!(superseded_at(checked, None), None, "not completed: it stands");
    }

    #[test]
    fn older_evidence_is_read_back_into_its_basis_from_the_sentence_it_was_written_as() {
        let bases = [
            Basis::Records {
                count: 2,
                status: Some("completed".into()),
                differs_in: vec!["amount".into(), "to".into()],
                content_not_compared: false,
                not_compared: None,
            },
            Basis::Records {
                count: 1,
                status: None,
                differs_in: vec![],
                content_not_compared: false,
                not_compared: None,
            },
            Basis::Records {
                count: 2,
                status: None,
                differs_in: vec![],
                content_not_compared: true,
                not_compared: None,
            },
            Basis::NoRecord,
            Basis::NotFoundProvesNothing,
            Basis::NotFoundYet { delay_seconds: 30 },
            Basis::NotFoundPastRetention { retention_days: 7 },
            Basis::EmptyResult,
        ];
        for basis in bases {
            assert_eq!(Basis::from_summary(&basis.summary()), basis);
            let old = Evidence { summary: basis.summary(), ..Evidence::default() };
            assert_eq!(old.basis(), basis, "evidence stored before the basis was kept");
        }
        let unknown = "the carrier's portal was down; checked by phone";
        assert_eq!(Basis::from_summary(unknown), Basis::Text { text: unknown.into() });
    }
    use chrono::TimeZone;
    use serde_json::json;

    fn at(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap() + Duration::minutes(minutes)
    }

    const RULES: AbsenceRules = AbsenceRules { consistency_delay_seconds: 60, retention_days: 30 };

    fn order(amount: i64) -> Map<String, Value> {
        json!({"amount": amount, "item": "A-1"}).as_object().unwrap().clone()
    }

    fn record(status: RecordStatus, amount: i64) -> Record {
        Record {
            external_id: Some("ord_1".into()),
            at: Some(at(0)),
            status_text: Some("completed".into()),
            status,
            fields: order(amount),
            usage: None,
        }
    }

    fn judge_with(finding: Finding, content: &Map<String, Value>, now: DateTime<Utc>) -> Verdict {
        let step = StepContext { content: Some(content), compare: &[], attempted_at: at(0) };
        judge(&finding, &step, RULES, now).0
    }

    #[test]
    fn a_record_with_the_same_content_is_executed_and_another_amount_is_a_mismatch() {
        let content = order(4000);
        assert_eq!(
            judge_with(Finding::Found(vec![record(RecordStatus::Done, 4000)]), &content, at(5)),
            Verdict::Executed
        );
        let step = StepContext { content: Some(&content), compare: &[], attempted_at: at(0) };
        let (verdict, evidence) = judge(&Finding::Found(vec![record(RecordStatus::Done, 5000)]), &step, RULES, at(5));
        assert_eq!(verdict, Verdict::ExecutedMismatch);
        let amount = evidence.compared.iter().find(|c| c.name == "amount").unwrap();
        assert_eq!(
            (amount.expected.clone(), amount.found.clone(), amount.matches),
            (Some(json!(4000)), Some(json!(5000)), false)
        );
        assert!(evidence.summary.contains("amount"));
    }

    /// Issue 62's traps: a record that says "done" is "executed" only when something of it was compared with the
    /// step, whatever kept it from being compared; the evidence names what was and was not compared.
    #[test]
    fn a_done_record_compared_with_nothing_is_executed_not_compared_and_says_why() {
        let done_5000 = || Finding::Found(vec![record(RecordStatus::Done, 5000)]);
        let why = |step: &StepContext<'_>| {
            let (verdict, evidence) = judge(&done_5000(), step, RULES, at(5));
            match evidence.basis() {
                Basis::Records { not_compared, .. } => (verdict, not_compared, evidence),
                other => panic!("{other:?}"),
            }
        };
        let step = StepContext { content: None, compare: &[], attempted_at: at(0) };
        let (verdict, not_compared, evidence) = why(&step);
        assert_eq!((verdict, not_compared), (Verdict::ExecutedNotCompared, Some(NotCompared::NoContent)));
        assert!(evidence.summary.contains("not compared"), "{}", evidence.summary);

        // The step says 4,000 yen under another name; the record says 5,000.
        let total = json!({"total": 4000}).as_object().unwrap().clone();
        let mut step = StepContext { content: Some(&total), ..step };
        let (verdict, not_compared, evidence) = why(&step);
        assert_eq!((verdict, not_compared), (Verdict::ExecutedNotCompared, Some(NotCompared::NoCommonField)));
        assert_eq!(evidence.content_not_in_record, vec!["total"]);
        assert_eq!(evidence.record_not_in_content, vec!["amount", "item"]);
        assert!(evidence.summary.contains("share no field") && !evidence.summary.contains("without content"));

        // A connector that reads no field of the record.
        let content = order(4000);
        step.content = Some(&content);
        let mut bare = record(RecordStatus::Done, 0);
        bare.fields.clear();
        let (verdict, evidence) = judge(&Finding::Found(vec![bare]), &step, RULES, at(5));
        assert_eq!(verdict, Verdict::ExecutedNotCompared);
        assert!(matches!(evidence.basis(), Basis::Records { not_compared: Some(NotCompared::NoFieldRead), .. }));
        assert_eq!(evidence.content_not_in_record, vec!["amount", "item"]);

        // Compared: both values kept, nothing left over.
        let (verdict, evidence) = judge(&done_5000(), &step, RULES, at(5));
        assert_eq!(verdict, Verdict::ExecutedMismatch);
        assert!(evidence.content_not_in_record.is_empty() && evidence.record_not_in_content.is_empty());
    }

    #[test]
    fn numbers_compare_by_value_whatever_their_spelling() {
        let content = order(4000);
        let mut r = record(RecordStatus::Done, 0);
        r.fields.insert("amount".into(), json!("4000"));
        assert_eq!(judge_with(Finding::Found(vec![r]), &content, at(5)), Verdict::Executed);
    }

    #[test]
    fn not_found_proves_absence_only_when_authoritative_past_the_delay_and_within_retention() {
        let content = order(4000);
        let authoritative = Finding::NotFound { authoritative: true };
        assert_eq!(judge_with(authoritative.clone(), &content, at(5)), Verdict::NotExecuted);
        assert_eq!(
            judge_with(authoritative.clone(), &content, at(0)),
            Verdict::Unknown,
            "inside the consistency delay"
        );
        assert_eq!(judge_with(authoritative, &content, at(31 * 24 * 60)), Verdict::Unknown, "past key retention");
        assert_eq!(judge_with(Finding::NotFound { authoritative: false }, &content, at(5)), Verdict::Unknown);
    }

    #[test]
    fn running_not_done_unclear_failed_and_impossible_lookups_have_their_verdicts() {
        let content = order(4000);
        assert_eq!(
            judge_with(Finding::Found(vec![record(RecordStatus::Running, 4000)]), &content, at(5)),
            Verdict::InProgress
        );
        assert_eq!(
            judge_with(Finding::Found(vec![record(RecordStatus::NotDone, 4000)]), &content, at(5)),
            Verdict::NotExecuted
        );
        assert_eq!(
            judge_with(Finding::Found(vec![record(RecordStatus::Unclear, 4000)]), &content, at(5)),
            Verdict::Unknown
        );
        assert_eq!(judge_with(Finding::Failed(LookupProblem::NotJson), &content, at(5)), Verdict::LookupFailed);
        assert_eq!(judge_with(Finding::NoLookup(LookupProblem::NoResultId), &content, at(5)), Verdict::Unknown);
        assert_eq!(judge_with(Finding::Found(vec![]), &content, at(5)), Verdict::Unknown);
    }

    #[test]
    fn two_records_for_one_key_are_reported_as_a_double_send() {
        let content = order(4000);
        let step = StepContext { content: Some(&content), compare: &[], attempted_at: at(0) };
        let found = Finding::Found(vec![record(RecordStatus::Done, 4000), record(RecordStatus::Done, 4000)]);
        let (verdict, evidence) = judge(&found, &step, RULES, at(5));
        assert_eq!((verdict, evidence.records), (Verdict::Executed, 2));
        assert!(evidence.summary.contains("more than one"));
    }

    #[test]
    fn personal_values_and_credentials_never_reach_the_evidence() {
        let content = json!({"email": "hanako@example.jp", "amount": 1}).as_object().unwrap().clone();
        let mut r = record(RecordStatus::Done, 1);
        r.fields.insert("email".into(), json!("hanako@example.jp"));
        let step = StepContext { content: Some(&content), compare: &[], attempted_at: at(0) };
        let (_, evidence) = judge(&Finding::Found(vec![r]), &step, RULES, at(5));
        assert!(!serde_json::to_string(&evidence).unwrap().contains("hanako"));
        let said = redact("401 Unauthorized: Bearer sk_live_abcdefghijklmnopqrstuvwxyz123456 rejected");
        assert!(!said.contains("sk_live") && said.contains("401"));
    }
}
