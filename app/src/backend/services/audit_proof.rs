//! Signing checkpoints of the audit chain (domain::audit_proof) with the key named by
//! `RERUN_GATE_AUDIT_KEY_FILE`: every few minutes while events arrive, at every export and at shutdown. Before
//! it signs, the signer checks that the chain still links to what it last vouched for, so that it never signs
//! a rewritten history.
use super::audit::walk_checking;
use crate::backend::{AppState, db};
use crate::contract::AppError;
use crate::domain::audit::ChainBreak;
use crate::domain::audit_proof::{AuditKey, PublicKey, SignedCheckpoint};
use std::sync::Arc;

/// The key, and how far this process has checked the chain (sequence number and hash) since it last signed.
pub struct Signer {
    key: Option<Arc<AuditKey>>,
    vouched: tokio::sync::Mutex<Option<(i64, String)>>,
}

impl Signer {
    pub fn new(key: Option<Arc<AuditKey>>) -> Signer {
        Signer { key, vouched: tokio::sync::Mutex::new(None) }
    }

    pub fn key(&self) -> Option<&AuditKey> {
        self.key.as_deref()
    }
}

/// How many signed checkpoints the database holds.
pub async fn count(state: &AppState) -> Result<usize, AppError> {
    Ok(db::audit_proof::checkpoint_count(&mut state.db.connection().await?).await? as usize)
}

/// What the admin page shows: the key's fingerprint and the newest checkpoint it signed.
pub async fn signing(state: &AppState) -> Result<crate::contract::audit::SigningView, AppError> {
    let public = state.audit_signer.key().map(AuditKey::public);
    let key_id = public.map(|p| p.key_id());
    let latest = db::audit_proof::latest_checkpoint(&mut state.db.connection().await?, key_id.as_deref()).await?;
    let latest = latest.filter(|_| key_id.is_some()).map(|c| (c.seq, c.at));
    Ok(crate::contract::audit::SigningView { key_id, fingerprint: public.map(|p| p.fingerprint()), latest })
}

/// Keeps the statement by which `new` names the key it replaces (signed by the old one too, when given).
pub async fn record_succession(
    state: &AppState,
    new: &AuditKey,
    old: &PublicKey,
    old_key: Option<&AuditKey>,
) -> Result<(), AppError> {
    let statement = new.succeed(old, old_key, state.clock.now());
    let mut tx = state.db.begin_write().await?;
    db::audit_proof::insert_statement(&mut tx, &statement).await?;
    tx.commit().await?;
    Ok(())
}

/// Signs a checkpoint at the chain's head, unless the newest one is already there (nothing arrived since).
pub async fn checkpoint_head(state: &AppState) -> Result<Option<SignedCheckpoint>, AppError> {
    let Some(key) = state.audit_signer.key() else { return Ok(None) };
    let mut conn = state.db.connection().await?;
    let (seq, hash) = db::audit::head(&mut conn).await?;
    let latest = db::audit_proof::latest_checkpoint(&mut conn, Some(&key.public().key_id())).await?;
    drop(conn);
    if seq == 0 || latest.is_some_and(|c| c.seq >= seq) {
        return Ok(None);
    }
    checkpoint_at(state, seq, &hash).await
}

/// Signs a checkpoint at event `seq`, whose hash must be `hash` (an export's head), once the chain is checked
/// from the last point this signer vouched for.
pub async fn checkpoint_at(state: &AppState, seq: i64, hash: &str) -> Result<Option<SignedCheckpoint>, AppError> {
    let Some(key) = state.audit_signer.key() else { return Ok(None) };
    let mut vouched = state.audit_signer.vouched.lock().await;
    let mut conn = state.db.connection().await?;
    let (from_seq, from_hash) = match vouched.clone() {
        Some(point) => point,
        None => starting_point(&mut conn, key).await?,
    };
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
    let walked = match walked {
        Ok(last) if reached => last,
        Ok(_) => return Err(refuse(seq, "the event does not have the hash the checkpoint would vouch for")),
        Err(broken) => return Err(refuse(broken.seq, &broken.problem)),
    };
    drop(conn);
    let mut checkpoint = key.sign(seq, hash, state.clock.now());
    checkpoint.timestamp = timestamp(state, &checkpoint).await;
    let mut tx = state.db.begin_write().await?;
    db::audit_proof::insert_checkpoint(&mut tx, &checkpoint).await?;
    tx.commit().await?;
    *vouched = Some(walked);
    Ok(Some(checkpoint))
}

/// The time-stamping authority's answer for a checkpoint, when one is configured. Without an answer the
/// checkpoint is kept all the same (its signature stands alone), and the next one is stamped again.
async fn timestamp(state: &AppState, checkpoint: &SignedCheckpoint) -> Option<String> {
    use base64::Engine;
    let audit = &state.config.audit;
    let url = audit.timestamp_url.as_deref()?;
    match crate::backend::timestamps::stamp(url, audit.timestamp_allow_loopback, &checkpoint.message()).await {
        Ok(answer) => Some(base64::engine::general_purpose::STANDARD.encode(answer)),
        Err(problem) => {
            tracing::warn!(seq = checkpoint.seq, %problem, "checkpoint signed without a time stamp");
            None
        }
    }
}

/// The newest checkpoint this key signed (its signature checked: the table is only as safe as the database),
/// else the chain's start.
async fn starting_point(conn: &mut db::Conn, key: &AuditKey) -> Result<(i64, String), AppError> {
    let public = key.public();
    let trusted = crate::domain::audit_proof::TrustedKeys::new(public, &[]);
    Ok(match db::audit_proof::latest_checkpoint(conn, Some(&public.key_id())).await? {
        Some(c) if trusted.verifies(&c) => (c.seq, c.hash),
        _ => (0, crate::domain::audit::GENESIS_HASH.to_string()),
    })
}

fn refuse(seq: i64, problem: &str) -> AppError {
    tracing::error!(seq, problem, "audit chain no longer links to its last signed checkpoint: nothing signed");
    AppError::Internal
}
