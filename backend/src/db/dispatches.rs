//! The dispatch outbox: claimed with an expiring lease, so any number of workers send each rerun once at a time
//! and a crashed worker's claim passes to another.
use super::states::Stored;
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::dispatch::DispatchStatus;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct DispatchRow {
    pub request_id: String,
    #[sqlx(try_from = "Stored<DispatchStatus>")]
    pub status: DispatchStatus,
    pub attempts: i64,
}

/// Claims up to `limit` of the most overdue pending dispatches whose lease is free; PostgreSQL skips rows other
/// workers hold.
pub async fn claim(
    tx: &mut Conn,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    owner: &str,
    limit: i64,
) -> Result<Vec<DispatchRow>, sqlx::Error> {
    // A paused bulk rerun's dispatches wait in the outbox until it is resumed.
    let pick = "SELECT request_id FROM dispatches
                WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
                  AND NOT EXISTS (SELECT 1 FROM rerun_requests r JOIN rerun_batches b ON b.id = r.batch_id
                                  WHERE r.id = dispatches.request_id AND b.status = 'paused')
                ORDER BY next_attempt_at LIMIT $3";
    let sql = format!(
        "UPDATE dispatches SET lease_until = $2, lease_owner = $4 WHERE request_id IN ({pick}{})
         RETURNING request_id, status, attempts",
        tx.lock_clause(RowLock::SkipLocked)
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(now).bind(lease_until).bind(limit).bind(owner).fetch_all(c).await)
}

/// Which of these pending dispatches `owner` still holds the lease of, locking their rows for the rest of the
/// transaction (a write on SQLite, a row lock on PostgreSQL) so that no other dispatcher can claim them
/// meanwhile. One statement for a batch.
pub async fn still_held(tx: &mut Conn, request_ids: &[&str], owner: &str) -> Result<Vec<String>, sqlx::Error> {
    if request_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "UPDATE dispatches SET lease_owner = lease_owner
         WHERE lease_owner = $1 AND status = 'pending' AND request_id IN ({})
         RETURNING request_id",
        super::params(1, request_ids.len())
    );
    on_conn!(tx, |c| {
        let mut query = sqlx::query_scalar(&sql).bind(owner);
        for id in request_ids {
            query = query.bind(*id);
        }
        query.fetch_all(c).await
    })
}

/// A dispatch's new state: ended (`sent`, `failed`, `unknown`) or another attempt scheduled (`pending` + when).
pub struct Settled<'a> {
    pub request_id: &'a str,
    pub status: DispatchStatus,
    pub attempts: i64,
    pub next_attempt_at: DateTime<Utc>,
    pub error: Option<&'a str>,
}

/// Settles dispatches (each once) and releases their leases: one statement for a batch.
pub async fn settle(tx: &mut Conn, settled: &[Settled<'_>], now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    // 50 dispatches a statement: 451 parameters, numbered in the order they appear and each bound once.
    for chunk in settled.chunks(50) {
        let n = chunk.len();
        let case = |column: usize| super::case_when("request_id", 2 * n * column, n);
        let sql = format!(
            "UPDATE dispatches SET status = {}, attempts = {}, next_attempt_at = {}, last_error = {},
                 lease_until = NULL, lease_owner = NULL, updated_at = ${}
             WHERE request_id IN ({})",
            case(0),
            case(1),
            case(2),
            case(3),
            8 * n + 1,
            super::params(8 * n + 1, n)
        );
        on_conn!(tx, |c| {
            let mut query = sqlx::query(&sql);
            for d in chunk {
                query = query.bind(d.request_id).bind(Stored(d.status));
            }
            for d in chunk {
                query = query.bind(d.request_id).bind(d.attempts);
            }
            for d in chunk {
                query = query.bind(d.request_id).bind(d.next_attempt_at);
            }
            for d in chunk {
                query = query.bind(d.request_id).bind(d.error);
            }
            query = query.bind(now);
            for d in chunk {
                query = query.bind(d.request_id);
            }
            query.execute(c).await.map(drop)
        })?;
    }
    Ok(())
}

pub async fn get(tx: &mut Conn, request_id: &str) -> Result<Option<DispatchRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT request_id, status, attempts FROM dispatches WHERE request_id = $1")
        .bind(request_id)
        .fetch_optional(c)
        .await)
}

/// Moves a waiting dispatch to `due` (a resumed bulk rerun spreads its remaining sends from now).
pub async fn reschedule(tx: &mut Conn, request_id: &str, due: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE dispatches SET next_attempt_at = $2 WHERE request_id = $1 AND status = 'pending'"
    )
    .bind(request_id)
    .bind(due)
    .execute(c)
    .await
    .map(drop))
}

/// Takes a waiting dispatch out of the outbox; `false` when a worker holds it now (it is being sent) or it
/// ended already.
pub async fn withdraw(tx: &mut Conn, request_id: &str, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE dispatches SET status = 'failed', last_error = 'withdrawn before it was sent', updated_at = $2
         WHERE request_id = $1 AND status = 'pending' AND (lease_until IS NULL OR lease_until < $2)"
    )
    .bind(request_id)
    .bind(now)
    .execute(c)
    .await)
}
