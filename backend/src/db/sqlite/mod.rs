//! SQLite specifics: the file, WAL, busy timeout, foreign keys, the embedded migrations, and the group commit
//! of step events and registrations (`group_commit`).
pub mod export;
mod group_commit;
use super::RowLock;
pub use group_commit::write_at_once;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, SqlitePool};
use std::str::FromStr;
use std::time::Duration;

pub async fn connect(url: &str, size: u32, acquire_timeout: Duration) -> anyhow::Result<SqlitePool> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    if let Some(dir) = options.get_filename().parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    Ok(pool_options(size, acquire_timeout).connect_with(options).await?)
}

/// Another pool on the same file, connecting on first use.
pub fn sibling(pool: &SqlitePool, size: u32, acquire_timeout: Duration) -> SqlitePool {
    pool_options(size, acquire_timeout).connect_lazy_with((*pool.connect_options()).clone())
}

/// A connection to a local file does not go stale: no ping (one thread hand-off) before every use.
fn pool_options(size: u32, acquire_timeout: Duration) -> SqlitePoolOptions {
    SqlitePoolOptions::new().max_connections(size.max(1)).acquire_timeout(acquire_timeout).test_before_acquire(false)
}

/// No clause: a write transaction (`BEGIN IMMEDIATE`, one writer at a time) already excludes every other writer
/// until it ends, so whatever it read stays as it was, and a queue's claim never meets another one.
pub fn lock_clause(_: RowLock) -> String {
    String::new()
}

/// The embedded migrations, on a connection of their own with foreign keys off: SQLite's procedure for rebuilding
/// a table that others refer to (a CHECK cannot change in place). Every reference is checked afterwards.
pub async fn migrate(pool: &SqlitePool) -> anyhow::Result<()> {
    let mut conn = (*pool.connect_options()).clone().foreign_keys(false).connect().await?;
    sqlx::migrate!("../migrations/sqlite").run(&mut conn).await?;
    let broken = sqlx::query("PRAGMA foreign_key_check").fetch_all(&mut conn).await?;
    anyhow::ensure!(broken.is_empty(), "the migrations left {} rows referring to rows that do not exist", broken.len());
    conn.close().await?;
    tower_sessions_sqlx_store::SqliteStore::new(pool.clone()).migrate().await?;
    Ok(())
}
