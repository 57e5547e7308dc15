//! Signing checkpoints of the audit chain (domain::audit_proof) with the key named by
//! `RERUN_GATE_AUDIT_KEY_FILE`: every few minutes while events arrive, at every export and at shutdown. The
//! signer remembers what it signed in its own file beside the key (`audit_witness`), and before it signs it
//! checks that the database still holds exactly the event it last vouched for and that the chain only extends
//! it. If not, it signs nothing and raises the alarm (`SignerAlarm`): in the log, on `/readyz`, as a metric, on
//! the admin and audit pages and to the auditors and admins. (Starting a memory, a person's resolution of the
//! alarm and the auditors' digests: `audit_memory`.)
use super::audit::walk_checking;
use super::audit_tree;
use crate::audit_witness::{Witness, WitnessProblem};
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{ChainBreak, GENESIS_HASH};
use domain::audit_proof::{AuditKey, PublicKey, SignedCheckpoint};
use domain::merkle::{self, Hash};
use domain::roles::Role;
use domain::signer_alarm::SignerAlarm;
use std::path::Path;
use std::sync::Arc;

/// This state's signer, made from the process's key and its memory on first use (`check_memory` at start).
pub fn signer(state: &AppState) -> Arc<Signer> {
    state.kept.get_or_init(|| Signer::new(state.server.audit_key.clone(), state.server.audit_witness.as_deref()))
}

/// The key, its memory, how far this process has checked the chain since it last signed, and the alarm.
pub struct Signer {
    key: Option<Arc<AuditKey>>,
    pub(super) memory: tokio::sync::Mutex<Memory>,
    pub(super) alarm: std::sync::Mutex<Option<SignerAlarm>>,
}

pub(super) struct Memory {
    /// The memory, or why it could not be read at start.
    pub(super) witness: Result<Witness, WitnessProblem>,
    /// The chain's end as this process last checked it (sequence number and hash): the next check starts there.
    pub(super) checked: Option<(i64, String)>,
}

impl Signer {
    /// Reads the memory of `key` from `witness`. A memory missing or unreadable raises the alarm at the first
    /// check (`check_memory`, at start): it is never recreated silently.
    pub fn new(key: Option<Arc<AuditKey>>, witness: Option<&Path>) -> Signer {
        let witness = match (&key, witness) {
            (Some(key), Some(path)) => Witness::open(path, key),
            _ => Err(WitnessProblem::Missing { path: Default::default() }),
        };
        // An alarm raised before a restart stands until a person resolves it.
        let alarm = witness.as_ref().ok().and_then(Witness::standing).cloned();
        Signer { key, memory: tokio::sync::Mutex::new(Memory { witness, checked: None }), alarm: alarm.into() }
    }

    pub fn key(&self) -> Option<&AuditKey> {
        self.key.as_deref()
    }

    /// Why the signer signs nothing, until a person resolves it.
    pub fn alarm(&self) -> Option<SignerAlarm> {
        self.alarm.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// How many signed checkpoints the database holds.
pub async fn count(state: &AppState) -> Result<usize, AppError> {
    Ok(db::audit_proof::checkpoint_count(&mut state.db.connection().await?).await? as usize)
}

/// What the admin and audit pages show: the key's fingerprint, the newest checkpoint it signed, the alarm.
pub async fn signing(state: &AppState) -> Result<contract::audit::SigningView, AppError> {
    let signer = signer(state);
    let public = signer.key().map(AuditKey::public);
    let key_id = public.map(|p| p.key_id());
    let latest = db::audit_proof::latest_checkpoint(&mut state.db.connection().await?, key_id.as_deref()).await?;
    let latest = latest.filter(|_| key_id.is_some()).map(|c| (c.seq, c.at));
    Ok(contract::audit::SigningView {
        key_id,
        fingerprint: public.map(|p| p.fingerprint()),
        latest,
        alarm: signer.alarm(),
    })
}

/// Keeps the statement by which `new` names the key it replaces (signed by the old one too, when given), from
/// the last event the old key's signer vouched for (`vouched`, from its memory); returns it.
pub async fn record_succession(
    state: &AppState,
    new: &AuditKey,
    old: &PublicKey,
    old_key: Option<&AuditKey>,
    vouched: Option<(i64, String)>,
) -> Result<domain::audit_proof::KeyStatement, AppError> {
    let statement = new.succeed(old, old_key, vouched, state.clock.now());
    let mut tx = state.db.begin_write().await?;
    db::audit_proof::insert_statement(&mut tx, &statement).await?;
    tx.commit().await?;
    Ok(statement)
}

/// At start: does the database still hold what the signer last vouched for, and does the chain extend it? A
/// restart after the newest events were removed raises the alarm at once, not at the next checkpoint.
pub async fn check_memory(state: &AppState) -> Result<(), AppError> {
    let signer = signer(state);
    if let Some(alarm) = signer.alarm() {
        tracing::error!(%alarm, "the audit signer signs nothing until a person resolves this");
        return Ok(());
    }
    let Some(_) = signer.key() else { return Ok(()) };
    let mut memory = signer.memory.lock().await;
    let mut conn = state.db.connection().await?;
    let (seq, hash) = db::audit::head(&mut conn).await?;
    drop(conn);
    match extends_memory(state, &mut memory, seq, &hash).await? {
        Ok(_) => Ok(()),
        Err(alarm) => raise(state, &mut memory, alarm).await,
    }
}

/// Signs a checkpoint at the chain's head, unless the signer's newest one is there already (nothing arrived
/// since). Any other head, shorter included, is checked against the signer's memory first.
pub async fn checkpoint_head(state: &AppState) -> Result<Option<SignedCheckpoint>, AppError> {
    let signer = signer(state);
    if signer.key().is_none() {
        return Ok(None);
    }
    let (seq, hash) = db::audit::head(&mut state.db.connection().await?).await?;
    let memory = signer.memory.lock().await;
    let vouched = memory.witness.as_ref().ok().and_then(Witness::vouched).map(|(s, h)| (s, h.to_string()));
    drop(memory);
    if seq == 0 || vouched.is_some_and(|(s, h)| s == seq && h == hash) {
        return Ok(None);
    }
    checkpoint_at(state, seq, &hash).await
}

/// Signs a checkpoint at event `seq`, whose hash must be `hash` (an export's head), once the chain is checked
/// from the point this signer last vouched for. Nothing while the alarm stands (reads go on: an export is
/// written all the same, without a checkpoint at its head).
pub async fn checkpoint_at(state: &AppState, seq: i64, hash: &str) -> Result<Option<SignedCheckpoint>, AppError> {
    let signer = signer(state);
    let Some(key) = signer.key() else { return Ok(None) };
    if signer.alarm().is_some() {
        return Ok(None);
    }
    let mut memory = signer.memory.lock().await;
    let walked = match extends_memory(state, &mut memory, seq, hash).await? {
        Ok(walked) => walked,
        Err(alarm) => {
            raise(state, &mut memory, alarm).await?;
            return Ok(None);
        }
    };
    let root = match tree_extends_memory(state, &memory, seq, hash).await? {
        Ok(root) => hex::encode(root),
        Err(alarm) => {
            raise(state, &mut memory, alarm).await?;
            return Ok(None);
        }
    };
    let mut checkpoint = key.sign(seq, hash, Some(&root), state.clock.now());
    checkpoint.timestamp = timestamp(state, &checkpoint).await;
    // Signed once it is in the signer's own memory, on disk; the database's copy comes after.
    let remembered = match memory.witness.as_mut() {
        Ok(witness) => witness.remember(&checkpoint),
        Err(problem) => Err(problem.clone()),
    };
    if let Err(problem) = remembered {
        raise(state, &mut memory, SignerAlarm::MemoryLost { problem: problem.to_string() }).await?;
        return Ok(None);
    }
    let mut tx = state.db.begin_write().await?;
    db::audit_proof::insert_checkpoint(&mut tx, &checkpoint).await?;
    tx.commit().await?;
    memory.checked = Some(walked);
    Ok(Some(checkpoint))
}

/// Whether the database still holds exactly the event the signer last vouched for, and the chain links from
/// there (or from where this process last checked) to event `seq` with hash `hash`; the chain's end walked.
pub(super) async fn extends_memory(
    state: &AppState,
    memory: &mut Memory,
    seq: i64,
    hash: &str,
) -> Result<Result<(i64, String), SignerAlarm>, AppError> {
    let witness = match &memory.witness {
        Ok(witness) => witness,
        Err(problem) => return Ok(Err(SignerAlarm::MemoryLost { problem: problem.to_string() })),
    };
    let vouched = witness.vouched().map(|(seq, hash)| (seq, hash.to_string()));
    let mut conn = state.db.connection().await?;
    if let Some((vouched_seq, vouched_hash)) = &vouched {
        let found = db::audit_proof::event_hash(&mut conn, *vouched_seq).await?;
        if found.as_deref() != Some(vouched_hash) {
            let (head, _) = db::audit::head(&mut conn).await?;
            return Ok(Err(SignerAlarm::HistoryChanged { seq: *vouched_seq, hash: vouched_hash.clone(), found, head }));
        }
    }
    let (from_seq, from_hash) = memory.checked.clone().or(vouched).unwrap_or((0, GENESIS_HASH.to_string()));
    // From the earlier of the two points to the chain's end: the later point must lie on the way.
    let (start, end) = if seq < from_seq {
        ((seq, hash.to_string()), (from_seq, from_hash))
    } else {
        ((from_seq, from_hash), (seq, hash.to_string()))
    };
    let mut reached = end.0 == start.0 && end.1 == start.1;
    let walked = walk_checking(&mut conn, start.0, &start.1, |event| {
        if event.seq == end.0 {
            reached = event.hash == end.1;
        }
        Ok::<(), ChainBreak>(())
    })
    .await?;
    Ok(match walked {
        Ok(last) if reached => Ok(last),
        Ok(_) => {
            Err(SignerAlarm::ChainBroken { seq: end.0, problem: "the event does not have the hash to sign".into() })
        }
        Err(broken) => Err(SignerAlarm::ChainBroken { seq: broken.seq, problem: broken.problem }),
    })
}

/// The Merkle tree's root at `seq` events, once the tree is shown to extend the tree head the signer last signed
/// (a consistency proof, checked against the root in its memory, not the database's; for an older size, to be
/// its prefix) and to end with the event being signed (`hash`, an inclusion proof): a database that rewrote an
/// event and rebuilt its tree to match cannot pass.
async fn tree_extends_memory(
    state: &AppState,
    memory: &Memory,
    seq: i64,
    hash: &str,
) -> Result<Result<Hash, SignerAlarm>, AppError> {
    let size = seq as u64;
    let root = audit_tree::root_at(&state.db, size).await?;
    let signed = memory.witness.as_ref().ok().and_then(Witness::vouched_tree);
    if let Some((signed_size, signed_root)) = signed {
        // Usually the tree extends the signed one; an export signed at an older head must be its prefix.
        let ((small, small_root), (large, large_root)) = if size <= signed_size {
            ((size, root), (signed_size, signed_root))
        } else {
            ((signed_size, signed_root), (size, root))
        };
        let proof = audit_tree::consistency_path(&state.db, small, large).await?;
        if !merkle::verify_consistency(small, large, &small_root, &large_root, &proof) {
            return Ok(Err(SignerAlarm::TreeRewritten { from: signed_size, to: size }));
        }
    }
    let leaf = merkle::leaf_hash(&hex::decode(hash).unwrap_or_default());
    let path = audit_tree::inclusion_path(&state.db, size - 1, size).await?;
    if !merkle::verify_inclusion(size - 1, size, &leaf, &path, &root) {
        return Ok(Err(SignerAlarm::TreeMismatch { seq }));
    }
    Ok(Ok(root))
}

/// Raises the alarm once: the log at error level, the signer's state (read by `/readyz`, the metrics and the
/// pages), and the auditors and admins in the app, by e-mail and in the team's chat.
async fn raise(state: &AppState, memory: &mut Memory, alarm: SignerAlarm) -> Result<(), AppError> {
    tracing::error!(
        %alarm,
        "the audit chain no longer extends what the signer vouched for: nothing is signed until a person resolves this"
    );
    {
        let signer = signer(state);
        let mut standing = signer.alarm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if standing.is_some() {
            return Ok(());
        }
        *standing = Some(alarm.clone());
    }
    memory.checked = None;
    let now = state.clock.now();
    if let Ok(witness) = memory.witness.as_mut()
        && let Err(problem) = witness.raise(&alarm, now)
    {
        tracing::error!(
            %problem,
            "the alarm could not be kept in the signer's memory: it stands until this process ends"
        );
    }
    let mut tx = state.db.begin_write().await?;
    let notice = domain::notifications::Notice::AuditTrailBroken { alarm };
    let to = (&[Role::Auditor, Role::Admin][..], "audit_trail_broken");
    super::notifications::notify_holders(&mut tx, state, to, &notice, "/audit", now).await?;
    tx.commit().await?;
    Ok(())
}

/// The time-stamping authority's answer for a checkpoint, when one is configured. Without an answer the
/// checkpoint is kept all the same (its signature stands alone), and the next one is stamped again.
async fn timestamp(state: &AppState, checkpoint: &SignedCheckpoint) -> Option<String> {
    use base64::Engine;
    let audit = &state.config.audit;
    let url = audit.timestamp_url.as_deref()?;
    match crate::timestamps::stamp(url, audit.timestamp_allow_loopback, &checkpoint.message()).await {
        Ok(answer) => Some(base64::engine::general_purpose::STANDARD.encode(answer)),
        Err(problem) => {
            tracing::warn!(seq = checkpoint.seq, %problem, "checkpoint signed without a time stamp");
            None
        }
    }
}
