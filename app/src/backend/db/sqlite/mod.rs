//! SQLite specifics: the file, WAL, busy timeout, foreign keys, and the embedded migrations.
use super::audit::{INSERT_COLUMNS, bind_event, placeholders, prev};
use super::operations::{STEP_UPDATE_SQL, StepRow, bind_step_update};
use super::SqliteWriter;
use crate::domain::audit::{AuditEntry, AuditEvent};
use chrono::{DateTime, Utc};
use sqlx::SqlitePool;
use std::sync::LazyLock;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;

pub async fn connect(url: &str) -> anyhow::Result<SqlitePool> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    if let Some(dir) = options.get_filename().parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    // A connection to a local file does not go stale: no ping (one thread hand-off) before every use.
    Ok(SqlitePoolOptions::new().max_connections(8).test_before_acquire(false).connect_with(options).await?)
}

pub async fn migrate(pool: &SqlitePool) -> anyhow::Result<()> {
    sqlx::migrate!("../migrations/sqlite").run(pool).await?;
    tower_sessions_sqlx_store::SqliteStore::new(pool.clone()).migrate().await?;
    Ok(())
}

/// A step's compare-and-set and its audit event in one round trip (one hand-off to the connection's thread
/// instead of four), when this process knows the audit head: `BEGIN IMMEDIATE; UPDATE …; INSERT … WHERE
/// changes() = 1; COMMIT`, then the stored hash of the sequence number it used. `None` when it did not write
/// (the head is unknown or was taken by another process, or another event changed the step first): the
/// caller takes the ordinary path, which reads the head and decides again under the lock.
pub async fn write_step_in_one_trip(
    pool: &SqlitePool,
    writer: &SqliteWriter,
    step: &StepRow,
    seen_seq: Option<i64>,
    entry: &AuditEntry,
    now: DateTime<Utc>,
) -> Result<Option<AuditEvent>, sqlx::Error> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "BEGIN IMMEDIATE; {STEP_UPDATE_SQL}; INSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {} WHERE changes() = 1;
             COMMIT; SELECT hash FROM audit_events WHERE seq = $13",
            placeholders(12)
        )
    });
    let _permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
    let Some(head) = writer.remembered_head() else { return Ok(None) };
    let event = entry.clone().seal(prev(&head), now);
    let mut conn = pool.acquire().await?;
    let query = bind_event!(bind_step_update!(sqlx::query_scalar::<_, String>(SQL.as_str()), step, seen_seq), event);
    match query.fetch_optional(&mut *conn).await {
        Ok(Some(hash)) if hash == event.hash => {
            writer.remember_head(Some((event.seq, event.hash.clone())));
            Ok(Some(event))
        }
        // Another event changed the step first (nothing was written), or another process holds that number.
        Ok(Some(_)) => {
            writer.remember_head(None);
            Ok(None)
        }
        Ok(None) => Ok(None),
        Err(error) => {
            // Stopped part-way: closing the connection rolls back whatever the batch began.
            writer.remember_head(None);
            let _ = conn.close().await;
            match &error {
                sqlx::Error::Database(e) if e.is_unique_violation() => Ok(None),
                _ => Err(error),
            }
        }
    }
}
