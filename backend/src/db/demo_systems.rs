//! The demo outside systems' execution log (demo mode only).
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ExecutionRow {
    pub service: String,
    pub idempotency_key: String,
    pub fingerprint: String,
    pub external_id: String,
    pub content_json: String,
    pub process_id: Option<String>,
    pub replays: i64,
    pub conflicts: i64,
    pub created_at: DateTime<Utc>,
    pub done_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "service, idempotency_key, fingerprint, external_id, content_json, process_id, replays, conflicts,
    created_at, done_at";

pub async fn by_key(tx: &mut Conn, service: &str, key: &str) -> Result<Option<ExecutionRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM demo_executions WHERE service = $1 AND idempotency_key = $2");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(service).bind(key).fetch_optional(c).await)
}

pub async fn by_external_id(tx: &mut Conn, service: &str, id: &str) -> Result<Option<ExecutionRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM demo_executions WHERE service = $1 AND external_id = $2");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(service).bind(id).fetch_optional(c).await)
}

/// How many operations of the drill group `process_id` belongs to (the same drill and fault) the service did
/// work for, the group's drill locked until the transaction ends (so that two calls at once count each other).
pub async fn executed_in_group(tx: &mut Conn, service: &str, process_id: &str) -> Result<i64, sqlx::Error> {
    let lock = format!(
        "SELECT d.id FROM drills d JOIN drill_operations o ON o.drill_id = d.id WHERE o.process_id = $1{}",
        tx.lock_clause(RowLock::Of("d"))
    );
    on_conn!(tx, |c| sqlx::query_scalar::<_, String>(&lock).bind(process_id).fetch_optional(c).await)?;
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT COUNT(*) FROM demo_executions e JOIN drill_operations o ON o.process_id = e.process_id
         JOIN drill_operations mine ON mine.drill_id = o.drill_id AND mine.fault = o.fault
         WHERE e.service = $1 AND mine.process_id = $2"
    )
    .bind(service)
    .bind(process_id)
    .fetch_one(c)
    .await)
}

pub async fn insert(tx: &mut Conn, row: &ExecutionRow) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
            "INSERT INTO demo_executions (service, idempotency_key, fingerprint, external_id, content_json, process_id,
             created_at, done_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&row.service)
        .bind(&row.idempotency_key)
        .bind(&row.fingerprint)
        .bind(&row.external_id)
        .bind(&row.content_json)
        .bind(&row.process_id)
        .bind(row.created_at)
        .bind(row.done_at)
        .execute(c)
        .await
        .map(drop)
    })
}

/// Counts a repeated call under a known key: `replay` (same content) or a refused change.
pub async fn count_repeat(tx: &mut Conn, service: &str, key: &str, replay: bool) -> Result<(), sqlx::Error> {
    let sql = if replay {
        "UPDATE demo_executions SET replays = replays + 1 WHERE service = $1 AND idempotency_key = $2"
    } else {
        "UPDATE demo_executions SET conflicts = conflicts + 1 WHERE service = $1 AND idempotency_key = $2"
    };
    on_conn!(tx, |c| sqlx::query(sql).bind(service).bind(key).execute(c).await.map(drop))
}

/// The demo receiver remembers a webhook-id; `false` when it had it already.
pub async fn remember_rerun(tx: &mut Conn, webhook_id: &str, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO demo_rerun_receipts (webhook_id, received_at) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    )
    .bind(webhook_id)
    .bind(now)
    .execute(c)
    .await)
}

pub async fn reruns_received(tx: &mut Conn) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM demo_rerun_receipts").fetch_one(c).await)
}
