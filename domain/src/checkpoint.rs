//! A signed checkpoint as stored, exported and sent to auditors: the trail's head at a moment (sequence number and
//! hash) and, since version 2, the root of the Merkle tree of the events up to it (`merkle`), signed with the
//! audit key (`audit_proof`, server side). What is signed is a few lines of text (`checkpoint_message`), so that
//! anyone can check a checkpoint with a stock Ed25519 library and the public key (docs/security.md, in Python).
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A checkpoint: what was signed, by which key, the signature, and (when a time-stamping authority is
/// configured) its RFC 3161 answer over the same message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedCheckpoint {
    pub seq: i64,
    pub hash: String,
    /// The Merkle tree's root (hex) at `seq` events: a tree head, signed (version 2). `None`: a version 1
    /// checkpoint, signed before the tree, still verifiable as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Whole seconds, so that the text signed and the JSON exported spell it alike.
    pub at: DateTime<Utc>,
    pub key_id: String,
    /// Ed25519 over `checkpoint_message`, base64.
    pub signature: String,
    /// The time-stamping authority's TimeStampResp (DER, base64) over `checkpoint_message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

const V1: &str = "rerun-gate audit checkpoint v1";
const V2: &str = "rerun-gate audit checkpoint v2";

impl SignedCheckpoint {
    pub fn message(&self) -> String {
        checkpoint_message(self.seq, &self.hash, self.root.as_deref(), self.at, &self.key_id)
    }

    /// The short signed digest the auditors receive by e-mail and chat: the signed text and its signature.
    /// `server audit verify --checkpoints` reads it back from a saved message (`digests_in`).
    pub fn digest(&self) -> String {
        format!("{}signature {}\n", self.message(), self.signature)
    }

    /// The signed tree head: the tree's size (the events up to `seq`) and its root.
    pub fn tree_head(&self) -> Option<(u64, &str)> {
        Some((self.seq as u64, self.root.as_deref()?))
    }
}

/// The digests in a text: a saved e-mail or chat message, its lines quoted (`> `) or not.
pub fn digests_in(text: &str) -> Vec<SignedCheckpoint> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_start_matches(['>', ' ', '\t']).trim_end()).collect();
    let field = |i: usize, name: &str| lines.get(i)?.strip_prefix(name)?.strip_prefix(' ');
    (0..lines.len())
        .filter(|&i| lines[i] == V1 || lines[i] == V2)
        .filter_map(|i| {
            let root = (lines[i] == V2).then(|| field(i + 3, "root").map(str::to_string));
            let after = i + usize::from(root.is_some());
            Some(SignedCheckpoint {
                seq: field(i + 1, "seq")?.parse().ok()?,
                hash: field(i + 2, "hash")?.to_string(),
                root: root.map(|r| r.ok_or(())).transpose().ok()?,
                at: DateTime::parse_from_rfc3339(field(after + 3, "at")?).ok()?.with_timezone(&Utc),
                key_id: field(after + 4, "key")?.to_string(),
                signature: field(after + 5, "signature")?.to_string(),
                timestamp: None,
            })
        })
        .collect()
}

/// The text a checkpoint's signature covers, one field per line: version 2 with the tree's root, version 1
/// without.
pub fn checkpoint_message(seq: i64, hash: &str, root: Option<&str>, at: DateTime<Utc>, key_id: &str) -> String {
    let at = rfc3339(at);
    match root {
        Some(root) => format!("{V2}\nseq {seq}\nhash {hash}\nroot {root}\nat {at}\nkey {key_id}\n"),
        None => format!("{V1}\nseq {seq}\nhash {hash}\nat {at}\nkey {key_id}\n"),
    }
}

pub(crate) fn rfc3339(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
