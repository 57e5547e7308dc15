//! Dispatch pauses (the stop switch).
use super::{Tx, on_tx};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct PauseRow {
    pub scope: String,
    pub name: String,
    pub paused_by: String,
    pub paused_at: DateTime<Utc>,
    pub reason: String,
}

/// The open pauses, oldest first.
pub async fn open(tx: &mut Tx) -> Result<Vec<PauseRow>, sqlx::Error> {
    on_tx!(tx, |c| sqlx::query_as(
        "SELECT p.scope, p.name, u.display_name AS paused_by, p.paused_at, p.reason
         FROM dispatch_pauses p JOIN users u ON u.id = p.paused_by WHERE p.resumed_at IS NULL ORDER BY p.paused_at, p.id"
    )
    .fetch_all(c)
    .await)
}

/// Opens a pause; `false` when this workflow or connector is paused already.
pub async fn pause(tx: &mut Tx, scope: &str, name: &str, user: i64, reason: &str, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    let inserted = on_tx!(tx, |c| sqlx::query(
        "INSERT INTO dispatch_pauses (scope, name, paused_by, paused_at, reason) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (scope, name) WHERE resumed_at IS NULL DO NOTHING"
    )
    .bind(scope)
    .bind(name)
    .bind(user)
    .bind(now)
    .bind(reason)
    .execute(c)
    .await
    .map(|r| r.rows_affected()))?;
    Ok(inserted == 1)
}

/// Closes the open pause; `false` when there was none.
pub async fn resume(tx: &mut Tx, scope: &str, name: &str, user: i64, reason: &str, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    let closed = on_tx!(tx, |c| sqlx::query(
        "UPDATE dispatch_pauses SET resumed_by = $3, resumed_at = $4, resume_reason = $5
         WHERE scope = $1 AND name = $2 AND resumed_at IS NULL"
    )
    .bind(scope)
    .bind(name)
    .bind(user)
    .bind(now)
    .bind(reason)
    .execute(c)
    .await
    .map(|r| r.rows_affected()))?;
    Ok(closed == 1)
}
