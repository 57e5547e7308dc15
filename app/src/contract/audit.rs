//! The audit trail page: events as the caller may see them, newest first, with before/after as a diff.
use crate::domain::audit::DiffLine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The actor's kind and name, and the action's name, in the reader's language; `action` is the raw code.
    pub actor_kind: String,
    pub actor: String,
    pub action: String,
    pub action_label: String,
    pub object_type: String,
    pub object_id: String,
    pub department: Option<String>,
    pub reason: Option<ReasonView>,
    pub diff: Vec<DiffLine>,
}

/// The key that signs the chain's checkpoints (none configured: nothing is signed), and the newest checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningView {
    pub key_id: Option<String>,
    pub fingerprint: Option<String>,
    pub latest: Option<(i64, chrono::DateTime<chrono::Utc>)>,
}

/// The chain as the last incremental check found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainView {
    Intact { seq: i64, checked_at: DateTime<Utc> },
    Broken { seq: i64, problem: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageView {
    pub rows: Vec<AuditRow>,
    /// Pass as `before` for the next (older) page; `None` on the last page.
    pub next: Option<i64>,
    pub chain: ChainView,
    /// Auditors may download the trail.
    pub may_export: bool,
}

/// An event's reason as the page shows it: the system's own in the reader's language, or what a person wrote
/// (`written`), as they wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonView {
    pub text: String,
    pub written: bool,
}
