//! The audit trail's rules: what an event holds, its canonical form, the hash chain and its verification.
//!
//! Hash recipe (also in docs/security.md, so that auditors can check an export without the app):
//! `hash = lowercase hex of SHA-256(canonical JSON of the event without its own "hash" field)`, where the
//! canonical JSON has sorted keys and no whitespace, `at` is UTC with exactly six fractional digits, and
//! `prev_hash` is the previous event's hash (64 zeros for the first event).
use super::audit_action::AuditAction;
use super::canonical_json::to_canonical_string;
use super::identity::Authentication;
use super::names::named;
use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

named! {
    pub enum ActorKind {
        User => "user",
        ApiClient => "api_client",
        System => "system",
        Anonymous => "anonymous",
    }
}

named! {
    /// The parts of Rerun Gate that act on their own, by the names the trail keeps for them.
    pub enum SystemActor {
        Dispatcher => "dispatcher",
        Sweeper => "sweeper",
        Reconciler => "reconciler",
        Housekeeping => "housekeeping",
        Configuration => "configuration",
        CommandLine => "cli",
        Indicators => "indicators",
        BulkPreview => "bulk-preview",
        /// Checks each stage of a bulk rerun against the outside systems and stops a failed one.
        Stages => "stages",
        Demo => "demo",
        IdentityProvider => "identity-provider",
    }
}

/// A system actor's label for the webhooks of a connector: `webhook:<connector>`.
const WEBHOOK_PREFIX: &str = "webhook:";

/// Who a system actor's label names: one of Rerun Gate's own parts, or a connector's webhooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemLabel<'a> {
    Part(SystemActor),
    Webhook { connector: &'a str },
}

impl<'a> SystemLabel<'a> {
    /// `None` for a label this version does not know (history keeps what it wrote).
    pub fn parse(label: &'a str) -> Option<Self> {
        match label.strip_prefix(WEBHOOK_PREFIX) {
            Some(connector) => Some(SystemLabel::Webhook { connector }),
            None => SystemActor::parse(label).map(SystemLabel::Part),
        }
    }
}

/// Who did it: a signed-in user, an API client, the system itself, or someone not signed in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: Option<String>,
    pub label: String,
}

impl Actor {
    pub fn user(id: i64, username: &str) -> Self {
        Actor { kind: ActorKind::User, id: Some(id.to_string()), label: username.to_string() }
    }
    pub fn api_client(id: i64, name: &str) -> Self {
        Actor { kind: ActorKind::ApiClient, id: Some(id.to_string()), label: name.to_string() }
    }
    pub fn system(part: SystemActor) -> Self {
        Actor { kind: ActorKind::System, id: None, label: part.as_str().to_string() }
    }
    /// The webhooks of a connector.
    pub fn webhook(connector: &str) -> Self {
        Actor { kind: ActorKind::System, id: None, label: format!("{WEBHOOK_PREFIX}{connector}") }
    }
    pub fn anonymous(claimed_name: &str) -> Self {
        Actor { kind: ActorKind::Anonymous, id: None, label: claimed_name.to_string() }
    }
}

named! {
    /// What an event is about: the kinds of object the trail records changes of.
    pub enum ObjectType {
        ApiClient => "api_client",
        AuditTrail => "audit_trail",
        Connector => "connector",
        Database => "database",
        Department => "department",
        DirectoryGroup => "directory_group",
        Drill => "drill",
        IdempotencyRecord => "idempotency_record",
        Incident => "incident",
        Indicator => "indicator",
        Operation => "operation",
        OutboundMessage => "outbound_message",
        RerunBatch => "rerun_batch",
        Review => "review",
        User => "user",
        Webhook => "webhook",
        Workflow => "workflow",
    }
}

/// What a service asks the trail to record, in the same transaction as the change itself.
#[derive(Clone, Debug)]
pub struct AuditEntry {
    pub actor: Actor,
    pub action: AuditAction,
    pub object_type: ObjectType,
    pub object_id: String,
    pub department: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub reason: Option<String>,
    pub request_id: Option<String>,
}

impl AuditEntry {
    pub fn new(actor: Actor, action: AuditAction, object_type: ObjectType, object_id: impl ToString) -> Self {
        AuditEntry {
            actor,
            action,
            object_type,
            object_id: object_id.to_string(),
            department: None,
            before: None,
            after: None,
            reason: None,
            request_id: None,
        }
    }
    pub fn department(mut self, code: Option<&str>) -> Self {
        self.department = code.map(str::to_string);
        self
    }
    pub fn before(mut self, value: Value) -> Self {
        self.before = Some(value);
        self
    }
    pub fn after(mut self, value: Value) -> Self {
        self.after = Some(value);
        self
    }
    /// When and how the person deciding proved who they are: `authenticated` in the event's `after` (call it
    /// after `after`).
    pub fn authenticated(mut self, authentication: &Authentication) -> Self {
        let mut after = match self.after.take() {
            Some(Value::Object(fields)) => fields,
            Some(other) => serde_json::Map::from_iter([("value".to_string(), other)]),
            None => serde_json::Map::new(),
        };
        after.insert("authenticated".into(), json!(authentication));
        self.after = Some(Value::Object(after));
        self
    }
    pub fn reason(mut self, reason: impl ToString) -> Self {
        self.reason = Some(reason.to_string());
        self
    }

    /// Seals the entry as the event following `prev` (`None` for the first event).
    pub fn seal(self, prev: Option<(i64, &str)>, now: DateTime<Utc>) -> AuditEvent {
        let (seq, prev_hash) = match prev {
            Some((seq, hash)) => (seq + 1, hash.to_string()),
            None => (1, GENESIS_HASH.to_string()),
        };
        let mut event = AuditEvent {
            seq,
            at: now.trunc_subsecs(6),
            actor_kind: self.actor.kind.as_str().to_string(),
            actor_id: self.actor.id,
            actor_label: self.actor.label,
            action: self.action.as_str().to_string(),
            object_type: self.object_type.as_str().to_string(),
            object_id: self.object_id,
            department: self.department,
            before_json: self.before.as_ref().map(to_canonical_string),
            after_json: self.after.as_ref().map(to_canonical_string),
            reason: self.reason,
            request_id: self.request_id,
            prev_hash,
            hash: String::new(),
        };
        event.hash = event.expected_hash();
        event
    }
}

/// One event as stored and exported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub actor_label: String,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    pub department: Option<String>,
    pub before_json: Option<String>,
    pub after_json: Option<String>,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEvent {
    /// The event as the hash covers it: every field but `hash`, before/after as JSON values.
    pub fn content(&self) -> Value {
        // A stored before/after that is not JSON any more is kept as a string, so the hash still fails.
        let embed = |text: &Option<String>| match text {
            None => Value::Null,
            Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
        };
        json!({
            "seq": self.seq,
            "at": self.at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            "actor_kind": self.actor_kind,
            "actor_id": self.actor_id,
            "actor_label": self.actor_label,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "department": self.department,
            "before": embed(&self.before_json),
            "after": embed(&self.after_json),
            "reason": self.reason,
            "request_id": self.request_id,
            "prev_hash": self.prev_hash,
        })
    }

    pub fn canonical(&self) -> String {
        to_canonical_string(&self.content())
    }

    pub fn expected_hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical().as_bytes()))
    }
}

/// One line of an event's before/after, for people to read: a top-level field and its two values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub key: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl DiffLine {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// Field by field when both sides are objects (or absent); otherwise one line with the whole values.
pub fn diff(before: Option<&str>, after: Option<&str>) -> Vec<DiffLine> {
    let parse = |text: Option<&str>| {
        text.map(|t| serde_json::from_str::<Value>(t).unwrap_or_else(|_| Value::String(t.to_string())))
    };
    let show = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (parse(before), parse(after)) {
        (None, None) => Vec::new(),
        (b @ (None | Some(Value::Object(_))), a @ (None | Some(Value::Object(_)))) => {
            let (b, a) = (b.unwrap_or(Value::Null), a.unwrap_or(Value::Null));
            let mut keys: Vec<&String> =
                b.as_object().into_iter().chain(a.as_object()).flat_map(|o| o.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .map(|k| DiffLine { key: k.clone(), before: b.get(k).map(show), after: a.get(k).map(show) })
                .collect()
        }
        (b, a) => vec![DiffLine { key: String::new(), before: b.as_ref().map(show), after: a.as_ref().map(show) }],
    }
}

/// Where and why a chain check failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainBreak {
    pub seq: i64,
    pub problem: String,
}

/// Walks the events in sequence order and stops at the first one that does not fit.
#[derive(Debug)]
pub struct ChainVerifier {
    next_seq: i64,
    prev_hash: String,
}

impl ChainVerifier {
    /// Continues a walk that already checked everything up to `seq` (whose hash is `hash`).
    pub fn after(seq: i64, hash: &str) -> Self {
        ChainVerifier { next_seq: seq + 1, prev_hash: hash.to_string() }
    }
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier { next_seq: 1, prev_hash: GENESIS_HASH.to_string() }
    }
}

impl ChainVerifier {
    pub fn check(&mut self, event: &AuditEvent) -> Result<(), ChainBreak> {
        let fail = |problem: String| Err(ChainBreak { seq: self.next_seq, problem });
        if event.seq != self.next_seq {
            return fail(format!("event {} is missing (found {} next)", self.next_seq, event.seq));
        }
        if event.prev_hash != self.prev_hash {
            return fail("prev_hash does not match the previous event's hash".into());
        }
        if event.hash != event.expected_hash() {
            return fail("hash does not match the event's content".into());
        }
        self.next_seq += 1;
        self.prev_hash = event.hash.clone();
        Ok(())
    }

    /// Compares the end of the walk with the recorded head, so that deleting the newest events is found too.
    pub fn finish(self, head: Option<(i64, &str)>) -> Result<i64, ChainBreak> {
        let last = self.next_seq - 1;
        match head {
            None if last == 0 => Ok(0),
            Some((seq, hash)) if seq == last && hash == self.prev_hash => Ok(last),
            Some((seq, _)) if seq > last => {
                Err(ChainBreak { seq: last + 1, problem: format!("events {} to {seq} are missing", last + 1) })
            }
            _ => Err(ChainBreak { seq: last.max(1), problem: "the chain does not end at the recorded head".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn chain(n: usize) -> Vec<AuditEvent> {
        let mut events: Vec<AuditEvent> = Vec::new();
        for i in 0..n {
            let entry = AuditEntry::new(
                Actor::user(7, "sato"),
                crate::audit_action::AuditAction::UserCreated,
                ObjectType::User,
                i,
            )
            .department(Some("sales"))
            .after(json!({"username": format!("u{i}"), "roles": ["staff"]}));
            let prev = events.last().map(|e| (e.seq, e.hash.as_str()));
            let at = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap() + chrono::Duration::nanoseconds(1_234_567);
            events.push(entry.seal(prev, at));
        }
        events
    }

    fn verify(events: &[AuditEvent]) -> Result<i64, ChainBreak> {
        let mut verifier = ChainVerifier::default();
        for e in events {
            verifier.check(e)?;
        }
        let head = events.last().map(|e| (e.seq, e.hash.clone()));
        verifier.finish(head.as_ref().map(|(s, h)| (*s, h.as_str())))
    }

    #[test]
    fn an_untouched_chain_verifies_up_to_its_last_event() {
        assert_eq!(verify(&chain(5)), Ok(5));
    }

    #[test]
    fn a_diff_lists_every_field_of_either_side_and_marks_what_changed() {
        let lines = diff(
            Some(r#"{"status":"stalled","step":"ai_summary"}"#),
            Some(r#"{"status":"completed","step":"ai_summary","n":2}"#),
        );
        let shown: Vec<(&str, bool)> = lines.iter().map(|l| (l.key.as_str(), l.changed())).collect();
        assert_eq!(shown, [("n", true), ("status", true), ("step", false)]);
        assert_eq!(lines[1].before.as_deref(), Some("stalled"), "strings without quotes");
        assert_eq!(diff(None, Some("[1,2]"))[0].after.as_deref(), Some("[1,2]"));
        assert!(diff(None, None).is_empty());
    }

    #[test]
    fn the_first_event_follows_the_genesis_hash_and_time_keeps_microseconds() {
        let first = &chain(1)[0];
        assert_eq!(first.prev_hash, GENESIS_HASH);
        assert!(first.canonical().contains(r#""at":"2026-11-29T10:00:00.001234Z""#), "{}", first.canonical());
    }

    #[test]
    fn an_edited_event_is_reported_at_its_sequence_number() {
        let mut events = chain(5);
        events[2].after_json = Some(r#"{"roles":["admin"],"username":"u2"}"#.into());
        assert_eq!(verify(&events).unwrap_err().seq, 3);
    }

    #[test]
    fn a_deleted_event_in_the_middle_is_reported_at_its_sequence_number() {
        let mut events = chain(5);
        events.remove(1);
        assert_eq!(verify(&events).unwrap_err().seq, 2);
    }

    #[test]
    fn deleting_the_newest_event_is_found_against_the_recorded_head() {
        let events = chain(5);
        let mut verifier = ChainVerifier::default();
        for e in &events[..4] {
            verifier.check(e).unwrap();
        }
        let err = verifier.finish(Some((5, &events[4].hash))).unwrap_err();
        assert_eq!(err.seq, 5);
    }

    #[test]
    fn a_recomputed_hash_after_an_edit_still_breaks_the_next_link() {
        let mut events = chain(4);
        events[1].reason = Some("tampered".into());
        events[1].hash = events[1].expected_hash();
        assert_eq!(verify(&events).unwrap_err().seq, 3);
    }
}
