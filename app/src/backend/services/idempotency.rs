//! The Idempotency-Key protocol of the ingestion API (SPEC "Ingestion API"):
//! first request → claimed and processed; same key, same body → the stored answer again; same key, other body →
//! 409 mismatch; same key while the first is still processed → wait briefly for its answer, else 409 in flight.
use crate::backend::{AppState, db};
use crate::contract::AppError;
use crate::domain::audit_action::AuditAction;
use crate::domain::conflict::Conflict;
use crate::domain::idempotency::IdempotencyState;
use chrono::Duration;
use std::time::Duration as StdDuration;

/// How long a second request waits for the first one's answer before it is told "in flight".
const WAIT_FOR_ANSWER: StdDuration = StdDuration::from_secs(2);
const POLL: StdDuration = StdDuration::from_millis(25);
/// A claim older than this belongs to a request that died; the next request takes it over.
const STALE_CLAIM_SECONDS: i64 = 60;

pub enum Claim {
    /// This request owns the key: process it, then `complete` in the same transaction.
    Proceed,
    /// The key was used for the same request before: send this answer again.
    Replay { status: u16, body: String },
}

pub async fn claim(state: &AppState, client: i64, key: &str, fingerprint: &str) -> Result<Claim, AppError> {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_ANSWER;
    loop {
        let now = state.clock.now();
        let expires_at = now + Duration::days(i64::from(state.config.idempotency_retention_days));
        let mut tx = state.db.begin_write().await?;
        if db::idempotency::claim(&mut tx, client, key, fingerprint, now, expires_at).await? {
            tx.commit().await?;
            return Ok(Claim::Proceed);
        }
        let record = db::idempotency::get(&mut tx, client, key).await?.ok_or(AppError::Internal)?;
        if record.fingerprint != fingerprint {
            return Err(AppError::conflict(
                Conflict::IdempotencyKeyMismatch,
                "this Idempotency-Key was used with a different request body; nothing was changed",
            ));
        }
        if record.state == IdempotencyState::Done {
            let status = record.response_status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200);
            return Ok(Claim::Replay { status, body: record.response_body.unwrap_or_default() });
        }
        let stale_before = now - Duration::seconds(STALE_CLAIM_SECONDS);
        if db::idempotency::take_over_stale(&mut tx, client, key, stale_before, now).await? {
            tx.commit().await?;
            return Ok(Claim::Proceed);
        }
        drop(tx);
        if tokio::time::Instant::now() >= deadline {
            return Err(AppError::conflict(
                Conflict::IdempotencyKeyInFlight,
                "a request with this Idempotency-Key is still being processed; retry later",
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Stores the answer, inside the transaction that made the change.
pub async fn complete(tx: &mut db::Conn, client: i64, key: &str, status: u16, body: &str) -> Result<(), AppError> {
    Ok(db::idempotency::complete(tx, client, key, status, body).await?)
}

/// Gives the key back when the request was refused and changed nothing, so the sender may correct and retry.
pub async fn release(state: &AppState, client: i64, key: &str) -> Result<(), AppError> {
    let mut tx = state.db.begin_write().await?;
    db::idempotency::release(&mut tx, client, key).await?;
    tx.commit().await?;
    Ok(())
}

/// Forgets answers older than the retention window (run by a periodic job).
pub async fn purge_expired(state: &AppState) -> Result<u64, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let purged = db::idempotency::purge_expired(&mut tx, now).await?;
    if purged > 0 {
        let entry = crate::domain::audit::AuditEntry::new(
            crate::domain::audit::Actor::system(crate::domain::audit::SystemActor::Housekeeping),
            AuditAction::IdempotencyRecordsPurged,
            "idempotency_record",
            "expired",
        )
        .after(serde_json::json!({"purged": purged, "retention_days": state.config.idempotency_retention_days}));
        super::audit::record(&mut tx, entry, None, now).await?;
    }
    tx.commit().await?;
    Ok(purged)
}
