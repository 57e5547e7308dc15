//! The audit trail table. There is deliberately no update or delete here: the trail is append-only.
use super::{Tx, on_tx};
use crate::domain::audit::{AuditEntry, AuditEvent};
use chrono::{DateTime, Utc};

/// Appends one event after the current head. PostgreSQL locks the head row first (`FOR UPDATE`); SQLite
/// writers are serialised by `BEGIN IMMEDIATE` and this process's writer, which remembers the head, so the
/// usual append is one statement. If another process appended meanwhile, the sequence number's primary key
/// refuses the insert and the head is read again. Either way two appends can never fork the chain; a trigger
/// moves `audit_head` with every insert.
pub async fn append(tx: &mut Tx, entry: AuditEntry, now: DateTime<Utc>) -> Result<AuditEvent, sqlx::Error> {
    let cached = match tx {
        Tx::Sqlite(_, Some(lock)) => lock.audit_head(),
        _ => None,
    };
    let event = match cached {
        Some(head) => match insert(tx, entry.clone().seal(prev(&head), now)).await {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                if let Tx::Sqlite(_, Some(lock)) = tx {
                    lock.forget_audit_head();
                }
                let head = read_head(tx).await?;
                insert(tx, entry.seal(prev(&head), now)).await?
            }
            other => other?,
        },
        None => {
            let head = read_head(tx).await?;
            insert(tx, entry.seal(prev(&head), now)).await?
        }
    };
    if let Tx::Sqlite(_, Some(lock)) = tx {
        lock.moved_head = Some((event.seq, event.hash.clone()));
    }
    Ok(event)
}

pub(super) fn prev(head: &(i64, String)) -> Option<(i64, &str)> {
    (head.0 > 0).then_some((head.0, head.1.as_str()))
}

async fn read_head(tx: &mut Tx) -> Result<(i64, String), sqlx::Error> {
    match tx {
        Tx::Sqlite(t, _) => sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1").fetch_one(&mut **t).await,
        Tx::Postgres(t) => {
            sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE").fetch_one(&mut **t).await
        }
    }
}

async fn insert(tx: &mut Tx, event: AuditEvent) -> Result<AuditEvent, sqlx::Error> {
    let sql = format!("INSERT INTO audit_events ({INSERT_COLUMNS}) VALUES ({})", placeholders(0));
    on_tx!(tx, |c| bind_event!(sqlx::query(&sql), event).execute(c).await.map(drop))?;
    Ok(event)
}

pub(super) const INSERT_COLUMNS: &str = "seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id,
    department, before_json, after_json, reason, request_id, prev_hash, hash";

/// `$n+1, …, $n+15`: the event's values after `n` other parameters.
pub(super) fn placeholders(n: usize) -> String {
    (n + 1..=n + 15).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

macro_rules! bind_event {
    ($query:expr, $event:expr) => {
        $query
            .bind($event.seq)
            .bind($event.at)
            .bind(&$event.actor_kind)
            .bind(&$event.actor_id)
            .bind(&$event.actor_label)
            .bind(&$event.action)
            .bind(&$event.object_type)
            .bind(&$event.object_id)
            .bind(&$event.department)
            .bind(&$event.before_json)
            .bind(&$event.after_json)
            .bind(&$event.reason)
            .bind(&$event.request_id)
            .bind(&$event.prev_hash)
            .bind(&$event.hash)
    };
}
pub(super) use bind_event;

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
