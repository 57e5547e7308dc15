//! SQLite specifics: the file, WAL, busy timeout, foreign keys, and the embedded migrations.
pub mod export;
use super::audit::{INSERT_COLUMNS, bind_event, placeholders, prev};
use super::operations::{STEP_UPDATE_SQL, StepRow, bind_step_update};
use super::SqliteWriter;
use crate::domain::audit::{AuditEntry, AuditEvent};
use chrono::{DateTime, Utc};
use sqlx::{ConnectOptions, Connection, SqliteConnection, SqlitePool};
use std::sync::{Arc, LazyLock};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit};
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

/// A step event's write on SQLite: this process's writer permit and its own connection (no pool hand-off),
/// held for one round trip: `BEGIN IMMEDIATE; UPDATE … (compare-and-set); INSERT … WHERE changes() = 1;
/// COMMIT`, then the stored hash of the sequence number it used. Needs the audit head this process remembers.
pub struct StepSession {
    _permit: OwnedSemaphorePermit,
    writer: Arc<SqliteWriter>,
    connection: OwnedMutexGuard<Option<SqliteConnection>>,
}

impl StepSession {
    pub async fn open(pool: &SqlitePool, writer: &Arc<SqliteWriter>) -> Result<StepSession, sqlx::Error> {
        let permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
        let mut connection = writer.connection.clone().lock_owned().await;
        if connection.is_none() {
            *connection = Some(pool.connect_options().connect().await?);
        }
        Ok(StepSession { _permit: permit, writer: writer.clone(), connection })
    }

    fn conn(&mut self) -> Result<&mut SqliteConnection, sqlx::Error> {
        self.connection.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// `None` when it did not write (the head is unknown or was taken by another process, or the step changed,
    /// or — for a success — it would have been the operation's last open step, which completes the operation):
    /// the caller then takes the ordinary path, which reads the head and decides again under the lock.
    pub async fn write_step(
        &mut self,
        step: &StepRow,
        seen_seq: Option<i64>,
        entry: &AuditEntry,
        now: DateTime<Utc>,
    ) -> Result<Option<AuditEvent>, sqlx::Error> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "BEGIN IMMEDIATE;
                 {STEP_UPDATE_SQL} AND ($28 = 0 OR EXISTS (SELECT 1 FROM steps other
                     WHERE other.operation_id = $29 AND other.id <> $1 AND other.completed_at IS NULL));
                 INSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {} WHERE changes() = 1;
                 COMMIT; SELECT hash FROM audit_events WHERE seq = $13",
                placeholders(12)
            )
        });
        let Some(head) = self.writer.remembered_head() else { return Ok(None) };
        let event = entry.clone().seal(prev(&head), now);
        let completes = step.completed_at.is_some() as i64;
        let query = bind_event!(bind_step_update!(sqlx::query_scalar::<_, String>(SQL.as_str()), step, seen_seq), event)
            .bind(completes)
            .bind(step.operation_id);
        let answer = query.fetch_optional(self.conn()?).await;
        match answer {
            Ok(Some(hash)) if hash == event.hash => {
                self.writer.remember_head(Some((event.seq, event.hash.clone())));
                Ok(Some(event))
            }
            // Another process holds that number; or (nothing) another event changed the step first.
            Ok(Some(_)) => {
                self.writer.remember_head(None);
                Ok(None)
            }
            Ok(None) => Ok(None),
            Err(error) => {
                // Stopped part-way: closing the connection rolls back whatever the batch began.
                self.writer.remember_head(None);
                if let Some(conn) = self.connection.take() {
                    let _ = conn.close().await;
                }
                match &error {
                    sqlx::Error::Database(e) if e.is_unique_violation() => Ok(None),
                    _ => Err(error),
                }
            }
        }
    }
}
