//! The signer's memory beyond signing (`audit_proof`): starting it for a key made before it, a person's
//! resolution of the alarm, and the digests that carry the newest checkpoint to the auditors.
use super::audit::walk_checking;
use super::audit_proof::signer;
use super::audit_proof::{checkpoint_head, extends_memory};
use crate::AppState;
use crate::audit_witness::Witness;
use crate::db;
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ChainBreak, GENESIS_HASH, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::audit_proof::{AuditKey, SignedCheckpoint};
use domain::roles::Role;
use domain::signer_alarm::{Resolution, TrueHistory};
use std::path::Path;

/// Starts the memory of a key made before memories existed: the newest checkpoint this key signed in the
/// database (its signature checked) is its first line. `None` when the key signed none yet.
pub async fn start_memory(state: &AppState, key: &AuditKey, path: &Path) -> Result<Option<i64>, AppError> {
    let key_id = key.public().key_id();
    let latest = db::audit_proof::latest_checkpoint(&mut state.db.connection().await?, Some(&key_id)).await?;
    let trusted = domain::audit_proof::TrustedKeys::new(key.public(), &[]);
    let mut witness = Witness::create(path).map_err(AppError::BadRequest)?;
    match latest.filter(|c| trusted.verifies(c)) {
        Some(checkpoint) => {
            witness.remember(&checkpoint).map_err(|e| AppError::internal("the signer's memory", e))?;
            Ok(Some(checkpoint.seq))
        }
        None => Ok(None),
    }
}

/// Ends the alarm by a person's decision of which history is true (`by`, `reason`): the signer's memory (the
/// database must hold every vouched event again, e.g. restored from a later copy), or the database's (its whole
/// chain must link; the vouched events it no longer holds are accepted as lost). The resolution is kept in the
/// memory, recorded in the trail, and the next checkpoint, signed at once, vouches for it.
pub async fn resolve(
    state: &AppState,
    history: TrueHistory,
    by: &str,
    reason: &str,
) -> Result<Option<SignedCheckpoint>, AppError> {
    let signer = signer(state);
    let refuse = AppError::BadRequest;
    let Some(alarm) = signer.alarm() else { return Err(refuse("no alarm stands".into())) };
    if by.trim().is_empty() || reason.trim().is_empty() {
        return Err(refuse("say who decides and why (--by, --reason)".into()));
    }
    let mut memory = signer.memory.lock().await;
    let (head, head_hash) = db::audit::head(&mut state.db.connection().await?).await?;
    let (seq, hash) = match history {
        TrueHistory::Memory => {
            memory.checked = None;
            if let Err(still) = extends_memory(state, &mut memory, head, &head_hash).await? {
                return Err(refuse(format!("the database does not hold the signed history yet: {still}")));
            }
            let witness = memory.witness.as_ref().map_err(|problem| refuse(problem.to_string()))?;
            witness.vouched().map_or((0, GENESIS_HASH.to_string()), |(seq, hash)| (seq, hash.to_string()))
        }
        TrueHistory::Database => {
            let walked =
                walk_checking(&mut state.db.connection().await?, 0, GENESIS_HASH, |_| Ok::<(), ChainBreak>(())).await?;
            match walked {
                Ok(end) if end.0 == head && end.1 == head_hash => end,
                Ok((end, _)) => return Err(refuse(format!("the chain ends at event {end}, its head says {head}"))),
                Err(broken) => {
                    return Err(refuse(format!("the chain breaks at event {}: {}", broken.seq, broken.problem)));
                }
            }
        }
    };
    let now = state.clock.now();
    let resolution =
        Resolution { at: now, by: by.trim().into(), reason: reason.trim().into(), history, alarm, seq, hash };
    let witness = memory.witness.as_mut().map_err(|problem| refuse(problem.to_string()))?;
    witness.resolve(&resolution).map_err(|problem| refuse(problem.to_string()))?;
    memory.checked = None;
    *signer.alarm.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    drop(memory);
    let entry = AuditEntry::new(
        Actor::system(SystemActor::CommandLine),
        AuditAction::AuditAlarmResolved,
        ObjectType::AuditTrail,
        "signer",
    )
    .reason(&resolution.reason)
    .after(serde_json::json!({"history": history.as_str(), "by": resolution.by, "alarm": resolution.alarm.to_string(),
                              "seq": resolution.seq, "hash": resolution.hash}));
    let mut tx = state.db.begin_write().await?;
    super::audit::record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    tracing::warn!(history = history.as_str(), by = %resolution.by, "the audit signer's alarm was resolved");
    checkpoint_head(state).await
}

/// Sends the newest signed checkpoint to the auditors as a short signed digest (e-mail, and the team's chat where
/// configured), at most once per `[audit] digest_hours` and only when the chain moved since the last one: a copy
/// outside this host, which neither the database's keeper nor the memory's can take back. `true` when sent.
pub async fn send_digest_if_due(state: &AppState) -> Result<bool, AppError> {
    let signer = signer(state);
    if signer.key().is_none() || signer.alarm().is_some() {
        return Ok(false);
    }
    let now = state.clock.now();
    let period = chrono::Duration::hours(i64::from(state.config.audit.digest_hours));
    let mut memory = signer.memory.lock().await;
    let Ok(witness) = memory.witness.as_mut() else { return Ok(false) };
    let Some(newest) = witness.newest().cloned() else { return Ok(false) };
    if witness.last_digest().is_some_and(|(seq, at)| newest.seq <= seq || now - at < period) {
        return Ok(false);
    }
    let notice = domain::notifications::Notice::AuditDigest { seq: newest.seq, digest: newest.digest() };
    let mut tx = state.db.begin_write().await?;
    let to = (&[Role::Auditor][..], "audit_digest");
    super::notifications::notify_holders(&mut tx, state, to, &notice, "/audit", now).await?;
    tx.commit().await?;
    if let Err(problem) = witness.digest_sent(newest.seq, now) {
        tracing::warn!(
            %problem,
            "a digest went out but the signer's memory could not keep it: the next may come early"
        );
    }
    Ok(true)
}
