//! The audit trail page: events as the caller may see them, newest first, with before/after as a diff.
use chrono::{DateTime, Utc};
use domain::audit::DiffLine;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The actor's kind and name, and the action's name, in the reader's language; `action` is the raw code.
    pub actor_kind: String,
    pub actor: ActorView,
    pub action: String,
    pub action_label: String,
    pub object_type: String,
    pub object_id: String,
    /// The object as a person reads it: its kind in words, its name when it has one a person gave (a user's, a
    /// department's), and its page when it has one.
    pub object_kind: String,
    pub object_name: Option<String>,
    pub object_href: Option<String>,
    /// The department's code (exports and filters use it) and its name.
    pub department: Option<String>,
    pub department_name: Option<String>,
    pub reason: Option<ReasonView>,
    pub diff: Vec<FieldChange>,
}

/// One field of an event, before and after, by its name in the reader's language when it has one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub line: DiffLine,
    pub label: Option<String>,
}

/// Who acted, as a page shows them: a person by their name (a name people gave: marked so on the page), or a
/// part of the system or a service in the reader's words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorView {
    pub name: String,
    pub person: bool,
}

/// One choice of a filter: the value searched for, and what the reader reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// What the filters offer: the catalogue's actions and object types, the reader's departments, the people.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditChoices {
    pub actions: Vec<Choice>,
    pub object_types: Vec<Choice>,
    pub departments: Vec<Choice>,
    pub people: Vec<Choice>,
}

/// The key that signs the chain's checkpoints (none configured: nothing is signed), and the newest checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningView {
    pub key_id: Option<String>,
    pub fingerprint: Option<String>,
    pub latest: Option<(i64, chrono::DateTime<chrono::Utc>)>,
    /// Why nothing is signed, until a person resolves it.
    pub alarm: Option<domain::signer_alarm::SignerAlarm>,
}

/// The chain as the last incremental check found it (a background task checks it every minute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainView {
    Intact { seq: i64, checked_at: DateTime<Utc> },
    Broken { seq: i64, problem: String },
    Unchecked,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageView {
    pub rows: Vec<AuditRow>,
    /// Pass as `before` for the next (older) page; `None` on the last page.
    pub next: Option<i64>,
    pub chain: ChainView,
    /// Auditors may download the trail.
    pub may_export: bool,
    /// Auditors, staff and managers may prove an event they see (its Merkle inclusion proof).
    pub may_prove: bool,
    pub choices: AuditChoices,
    /// Routine events (sign-ins, sign-outs, preference changes) are on the page.
    pub routine_shown: bool,
    /// The audit signer's alarm: the chain no longer extends what it signed.
    pub signer_alarm: Option<domain::signer_alarm::SignerAlarm>,
}

/// An event's reason as the page shows it: the system's own in the reader's language, or what a person wrote
/// (`written`), as they wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonView {
    pub text: String,
    pub written: bool,
}

/// That one event is in the trail a tree head vouches for (RFC 9162 inclusion proof): `GET
/// /api/v1/audit/proof`, the auditors' "prove this event", and each event of an evidence bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventProof {
    pub seq: i64,
    /// The event's hash (hex); its leaf is `SHA-256(0x00 ‖ those 32 bytes)`.
    pub event_hash: String,
    /// The leaf's place in the tree: `seq - 1`.
    pub leaf_index: u64,
    pub tree_size: u64,
    /// The tree's root at `tree_size` (hex).
    pub root: String,
    /// The audit path, from the leaf up (hex).
    pub proof: Vec<String>,
    /// The signed checkpoint whose root this is; none when nothing signed that size (no key, or not yet).
    pub checkpoint: Option<domain::checkpoint::SignedCheckpoint>,
}

/// That the tree of `from` events is a prefix of the tree of `to` events (RFC 9162 consistency proof): `GET
/// /api/v1/audit/consistency`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsistencyProof {
    pub from: u64,
    pub to: u64,
    pub from_root: String,
    pub to_root: String,
    pub proof: Vec<String>,
}
