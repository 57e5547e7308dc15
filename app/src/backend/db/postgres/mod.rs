//! PostgreSQL specifics: the pool and the embedded migrations.
use super::RowLock;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;

pub async fn connect(url: &str) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new().max_connections(16).acquire_timeout(Duration::from_secs(10)).connect(url).await?)
}

/// Row locks, held until the transaction ends.
pub fn lock_clause(lock: RowLock) -> String {
    match lock {
        RowLock::Every => " FOR UPDATE".into(),
        RowLock::Of(alias) => format!(" FOR UPDATE OF {alias}"),
        RowLock::SkipLocked => " FOR UPDATE SKIP LOCKED".into(),
    }
}

pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("../migrations/postgres").run(pool).await?;
    tower_sessions_sqlx_store::PostgresStore::new(pool.clone()).migrate().await?;
    Ok(())
}

/// Moves the board's count changes into its counts in one statement: the `DELETE … RETURNING` takes exactly
/// the changes it adds, so a change committed meanwhile stays for the next fold. Counts are upserted in key
/// order, so two instances folding at once wait for each other instead of deadlocking.
pub async fn fold_board_counts(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let folded = sqlx::query(
        "WITH moved AS (DELETE FROM board_count_changes RETURNING status, department, workflow, event, n)
         INSERT INTO board_counts (status, department, workflow, event, n)
         SELECT status, department, workflow, event, SUM(n) FROM moved
         GROUP BY status, department, workflow, event ORDER BY status, department, workflow, event
         ON CONFLICT (status, department, workflow, event) DO UPDATE SET n = board_counts.n + excluded.n",
    )
    .execute(pool)
    .await?;
    Ok(folded.rows_affected())
}
