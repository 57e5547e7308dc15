//! The Idempotency-Key protocol of the ingestion API (SPEC "Ingestion API"):
//! first request → claimed and processed; same key, same body → the stored answer again; same key, other body →
//! 409 mismatch; same key while the first is still processed → wait briefly for its answer, else 409 in flight.
//! The claim is made in the transaction that processes the request, so another request sees the key claimed
//! and answered at once, or not at all.
use crate::{AppState, db};
use chrono::{DateTime, Duration, Utc};
use contract::AppError;
use domain::audit::ObjectType;
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::idempotency::IdempotencyState;
use std::time::Duration as StdDuration;

/// How long a second request waits for the first one's answer before it is told "in flight".
pub const WAIT_FOR_ANSWER: StdDuration = StdDuration::from_secs(2);
pub const POLL: StdDuration = StdDuration::from_millis(25);
/// A claim older than this belongs to a request that died; the next request takes it over.
const STALE_CLAIM_SECONDS: i64 = 60;

pub enum Claim {
    /// This request owns the key: process it, then `complete`, in the same transaction.
    Proceed,
    /// The key was used for the same request before: send this answer again.
    Replay { status: u16, body: String },
    /// Another request holds the key and has not answered yet: wait and ask again (`WAIT_FOR_ANSWER`).
    InFlight,
}

/// Claims the key inside the caller's write transaction; a key used for another body is a conflict.
pub async fn claim(
    tx: &mut db::Conn,
    state: &AppState,
    client: i64,
    key: &str,
    fingerprint: &str,
) -> Result<Claim, AppError> {
    let now = state.clock.now();
    let expires_at = expires_at(state, now);
    if db::idempotency::claim(tx, client, key, fingerprint, now, expires_at).await? {
        return Ok(Claim::Proceed);
    }
    let record = db::idempotency::get(tx, client, key).await?.ok_or(AppError::Internal)?;
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
    if db::idempotency::take_over_stale(tx, client, key, stale_before, now).await? {
        return Ok(Claim::Proceed);
    }
    Ok(Claim::InFlight)
}

/// The answer to a request whose key another one still holds after `WAIT_FOR_ANSWER`.
pub fn in_flight() -> AppError {
    AppError::conflict(
        Conflict::IdempotencyKeyInFlight,
        "a request with this Idempotency-Key is still being processed; retry later",
    )
}

/// Until when the answer to a key claimed `now` is kept.
pub fn expires_at(state: &AppState, now: DateTime<Utc>) -> DateTime<Utc> {
    now + Duration::days(i64::from(state.config.idempotency_retention_days))
}

/// Stores the answer, inside the transaction that made the change.
pub async fn complete(tx: &mut db::Conn, client: i64, key: &str, status: u16, body: &str) -> Result<(), AppError> {
    Ok(db::idempotency::complete(tx, client, key, status, body).await?)
}

/// Forgets answers older than the retention window (run by a periodic job).
pub async fn purge_expired(state: &AppState) -> Result<u64, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let purged = db::idempotency::purge_expired(&mut tx, now).await?;
    if purged > 0 {
        let entry = domain::audit::AuditEntry::new(
            domain::audit::Actor::system(domain::audit::SystemActor::Housekeeping),
            AuditAction::IdempotencyRecordsPurged,
            ObjectType::IdempotencyRecord,
            "expired",
        )
        .after(serde_json::json!({"purged": purged, "retention_days": state.config.idempotency_retention_days}));
        super::audit::record(&mut tx, entry, None, now).await?;
    }
    tx.commit().await?;
    Ok(purged)
}
