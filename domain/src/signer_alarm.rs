//! The audit signer's alarm: the database's chain no longer extends what the signer signed (see
//! `backend::services::audit_proof`), or the signer's memory is gone. Pages, notifications and `/readyz` say it.
use serde::{Deserialize, Serialize};

/// Why the signer signs nothing: the database's chain no longer extends what it signed, or its own memory is
/// gone. It stands until a person resolves it. (English here, for the log, `/readyz` and the command line; the
/// pages say it in the reader's language.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SignerAlarm {
    /// The database no longer holds event `seq` that the signer vouched for (`found` is `None`; the trail ends at
    /// `head`), or holds another event there.
    HistoryChanged { seq: i64, hash: String, found: Option<String>, head: i64 },
    /// The chain after the vouched event does not link at `seq`.
    ChainBroken { seq: i64, problem: String },
    /// The Merkle tree at `to` events does not extend the tree of `from` events the signer signed (or, signing an
    /// older size, is not a prefix of it): the consistency proof fails.
    TreeRewritten { from: u64, to: u64 },
    /// The Merkle tree's last leaf at `seq` events is not event `seq`'s hash.
    TreeMismatch { seq: i64 },
    /// The signer's memory is missing or cannot be read or written.
    MemoryLost { problem: String },
}

impl std::fmt::Display for SignerAlarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignerAlarm::HistoryChanged { seq, found: None, head, .. } if head < seq => write!(
                f,
                "event {seq} was signed, but the database's trail ends at event {head}: events {} to {seq} are missing",
                head + 1
            ),
            SignerAlarm::HistoryChanged { seq, found: None, .. } => {
                write!(f, "event {seq} was signed, but the database no longer holds it")
            }
            SignerAlarm::HistoryChanged { seq, hash, found: Some(found), .. } => write!(
                f,
                "event {seq} is not the event that was signed (hash {found}, signed {hash}): the history was rewritten"
            ),
            SignerAlarm::ChainBroken { seq, problem } => {
                write!(f, "the chain after the last signed event breaks at event {seq}: {problem}")
            }
            SignerAlarm::TreeRewritten { from, to } => write!(
                f,
                "the Merkle tree of the events up to {to} does not extend the signed tree of {from} events: \
                 the tree was rewritten"
            ),
            SignerAlarm::TreeMismatch { seq } => {
                write!(f, "the Merkle tree's leaf for event {seq} is not that event's hash: the tree was rewritten")
            }
            SignerAlarm::MemoryLost { problem } => write!(f, "the signer's memory is lost: {problem}"),
        }
    }
}

/// Which history a person found true when they resolved the alarm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrueHistory {
    /// The signer's memory: the database was brought back to a copy that holds every event it vouched for.
    Memory,
    /// The database's: the vouched events it no longer holds are accepted as lost (an older backup restored).
    Database,
}

impl TrueHistory {
    pub fn parse(text: &str) -> Option<TrueHistory> {
        match text {
            "memory" => Some(TrueHistory::Memory),
            "database" => Some(TrueHistory::Database),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TrueHistory::Memory => "memory",
            TrueHistory::Database => "database",
        }
    }
}

/// A person's resolution of the alarm: kept in the signer's memory, recorded in the trail, and signed over by the
/// next checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub at: chrono::DateTime<chrono::Utc>,
    /// Who decided, as they named themselves.
    pub by: String,
    pub reason: String,
    pub history: TrueHistory,
    /// The alarm it ends.
    pub alarm: SignerAlarm,
    /// The event the memory goes on from: the one it vouched for (memory), or the database's head (database).
    pub seq: i64,
    pub hash: String,
}
