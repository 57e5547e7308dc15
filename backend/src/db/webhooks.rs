//! Inbound webhook receipts (raw, deduplicated) and what processing them did.
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ReceiptRow {
    pub id: i64,
    pub connector: String,
    pub webhook_id: String,
    pub sent_at: DateTime<Utc>,
    pub body: Option<String>,
}

/// Stores a receipt; `None` when this connector already received this webhook-id (a replay).
pub async fn insert_receipt(
    tx: &mut Conn,
    connector: &str,
    webhook_id: &str,
    sent_at: DateTime<Utc>,
    body: &str,
    now: DateTime<Utc>,
) -> Result<Option<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO webhook_receipts (connector, webhook_id, sent_at, body, received_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (connector, webhook_id) DO NOTHING RETURNING id"
    )
    .bind(connector)
    .bind(webhook_id)
    .bind(sent_at)
    .bind(body)
    .bind(now)
    .fetch_optional(c)
    .await)
}

/// Receipts not processed yet, oldest first (after a crash between storing and processing).
pub async fn unprocessed(tx: &mut Conn, limit: i64) -> Result<Vec<ReceiptRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, connector, webhook_id, sent_at, body FROM webhook_receipts
         WHERE processed_at IS NULL ORDER BY id LIMIT $1"
    )
    .bind(limit)
    .fetch_all(c)
    .await)
}

pub async fn receipt(tx: &mut Conn, id: i64) -> Result<Option<ReceiptRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, connector, webhook_id, sent_at, body FROM webhook_receipts WHERE id = $1"
    )
    .bind(id)
    .fetch_optional(c)
    .await)
}

/// Marks the receipt processed; `false` when another worker did it first.
pub async fn mark_processed(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE webhook_receipts SET processed_at = $1 WHERE id = $2 AND processed_at IS NULL"
    )
    .bind(now)
    .bind(id)
    .execute(c)
    .await)
}

pub struct NewEvent<'a> {
    pub receipt_id: i64,
    pub step_id: Option<i64>,
    pub version: Option<i64>,
    pub outcome: &'a str,
    pub detail: &'a str,
}

pub async fn insert_event(tx: &mut Conn, event: &NewEvent<'_>, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO webhook_events (receipt_id, step_id, version, outcome, detail, processed_at)
         VALUES ($1, $2, $3, $4, $5, $6)"
    )
    .bind(event.receipt_id)
    .bind(event.step_id)
    .bind(event.version)
    .bind(event.outcome)
    .bind(event.detail)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// Moves the step's webhook version forward; `false` when the step already has this version or a newer one.
pub async fn advance_step_version(tx: &mut Conn, step_id: i64, version: i64) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
            "UPDATE steps SET webhook_version = $1, revision = revision + 1
         WHERE id = $2 AND (webhook_version IS NULL OR webhook_version < $1)",
        )
        .bind(version)
        .bind(step_id)
        .execute(c)
        .await
    })
}

/// The steps a webhook may be about: by idempotency key, or by the provider's result ID.
pub async fn steps_for(
    tx: &mut Conn,
    key: Option<&str>,
    result_id: Option<&str>,
) -> Result<Vec<(i64, i64, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, operation_id, name FROM steps
         WHERE ($1 IS NOT NULL AND idempotency_key = $1) OR ($2 IS NOT NULL AND result_id = $2)
         ORDER BY id DESC LIMIT 5"
    )
    .bind(key)
    .bind(result_id)
    .fetch_all(c)
    .await)
}

/// Drops raw bodies received before `before`; returns how many.
pub async fn purge_bodies(tx: &mut Conn, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let purged = on_conn!(tx, |c| sqlx::query(
        "UPDATE webhook_receipts SET body = NULL WHERE body IS NOT NULL AND received_at < $1"
    )
    .bind(before)
    .execute(c)
    .await
    .map(|r| r.rows_affected()))?;
    Ok(purged)
}
