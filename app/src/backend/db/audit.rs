//! The audit trail table. There is deliberately no update or delete here: the trail is append-only.
use super::{Tx, on_tx};
use crate::domain::audit::{AuditEntry, AuditEvent};
use chrono::{DateTime, Utc};

/// Appends one event after the current head. The head row is locked first (`FOR UPDATE` on PostgreSQL;
/// SQLite writers are already serialised by `BEGIN IMMEDIATE`), so two appends can never fork the chain.
pub async fn append(tx: &mut Tx, entry: AuditEntry, now: DateTime<Utc>) -> Result<AuditEvent, sqlx::Error> {
    let (seq, hash): (i64, String) = match tx {
        Tx::Sqlite(t, _) => sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1").fetch_one(&mut **t).await?,
        Tx::Postgres(t) => {
            sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE").fetch_one(&mut **t).await?
        }
    };
    let prev = (seq > 0).then_some((seq, hash.as_str()));
    let event = entry.seal(prev, now);
    on_tx!(tx, |c| sqlx::query(
        "INSERT INTO audit_events (seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id,
             department, before_json, after_json, reason, request_id, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    )
    .bind(event.seq)
    .bind(event.at)
    .bind(&event.actor_kind)
    .bind(&event.actor_id)
    .bind(&event.actor_label)
    .bind(&event.action)
    .bind(&event.object_type)
    .bind(&event.object_id)
    .bind(&event.department)
    .bind(&event.before_json)
    .bind(&event.after_json)
    .bind(&event.reason)
    .bind(&event.request_id)
    .bind(&event.prev_hash)
    .bind(&event.hash)
    .execute(c)
    .await.map(drop))?;
    on_tx!(tx, |c| sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(event.seq)
        .bind(&event.hash)
        .execute(c)
        .await.map(drop))?;
    Ok(event)
}

pub async fn head(tx: &mut Tx) -> Result<(i64, String), sqlx::Error> {
    on_tx!(tx, |c| sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1").fetch_one(c).await)
}

const EVENT_COLUMNS: &str = "seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id, department,
    before_json, after_json, reason, request_id, prev_hash, hash";

/// One page of events in sequence order, starting after `after_seq` (keyset pagination).
pub async fn page_after(tx: &mut Tx, after_seq: i64, limit: i64) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let sql = format!("SELECT {EVENT_COLUMNS} FROM audit_events WHERE seq > $1 ORDER BY seq LIMIT $2");
    on_tx!(tx, |c| sqlx::query_as(&sql).bind(after_seq).bind(limit).fetch_all(c).await)
}

/// The newest events about one object, newest first.
pub async fn for_object(
    tx: &mut Tx,
    object_type: &str,
    object_id: &str,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM audit_events WHERE object_type = $1 AND object_id = $2 ORDER BY seq DESC LIMIT $3"
    );
    on_tx!(tx, |c| sqlx::query_as(&sql).bind(object_type).bind(object_id).bind(limit).fetch_all(c).await)
}
