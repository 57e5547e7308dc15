//! PostgreSQL specifics: the pool, the embedded migrations, and the group commit of step events
//! (`group_commit`).
mod group_commit;
use super::RowLock;
pub use group_commit::write_group;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;

pub async fn connect(url: &str, size: u32, acquire_timeout: Duration) -> anyhow::Result<PgPool> {
    Ok(pool_options(size, acquire_timeout).connect(url).await?)
}

/// Another pool on the same database and role, connecting on first use.
pub fn sibling(pool: &PgPool, size: u32, acquire_timeout: Duration) -> PgPool {
    pool_options(size, acquire_timeout).connect_lazy_with((*pool.connect_options()).clone())
}

fn pool_options(size: u32, acquire_timeout: Duration) -> PgPoolOptions {
    PgPoolOptions::new().max_connections(size.max(1)).acquire_timeout(acquire_timeout)
}

/// Row locks, held until the transaction ends.
pub fn lock_clause(lock: RowLock) -> String {
    match lock {
        RowLock::Every => " FOR UPDATE".into(),
        RowLock::Of(alias) => format!(" FOR UPDATE OF {alias}"),
        RowLock::SkipLocked => " FOR UPDATE SKIP LOCKED".into(),
    }
}

/// Brings the schema up to date. A schema already up to date is left alone without a statement that needs
/// the owner's rights, so that the runtime role (which may not change the schema) can start on it.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    let migrator = sqlx::migrate!("../migrations/postgres");
    if pending(pool, &migrator).await? == 0 {
        return Ok(());
    }
    let ran = async {
        migrator.run(pool).await?;
        tower_sessions_sqlx_store::PostgresStore::new(pool.clone()).migrate().await?;
        anyhow::Ok(())
    };
    ran.await.map_err(|e| {
        e.context(
            "the schema needs migrations that this role may not run: run `server migrate` as the database's \
                   owner, or give the owner's URL in RERUN_GATE_MIGRATE_URL",
        )
    })
}

/// How many embedded migrations the database has not applied (all of them on an empty database).
async fn pending(pool: &PgPool, migrator: &sqlx::migrate::Migrator) -> Result<usize, sqlx::Error> {
    let ready: bool = sqlx::query_scalar(
        "SELECT to_regclass('_sqlx_migrations') IS NOT NULL AND to_regclass('tower_sessions.session') IS NOT NULL",
    )
    .fetch_one(pool)
    .await?;
    if !ready {
        return Ok(migrator.iter().count());
    }
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success").fetch_all(pool).await?;
    Ok(migrator.iter().filter(|m| !applied.contains(&m.version)).count())
}

/// The runtime role's rights, granted by the owner after the migrations: reading and writing the ordinary
/// tables; on the audit trail, its checkpoints and key statements only appending and reading; on the record
/// of migrations only reading. Never ownership, never a change to the schema (QUALITY 27): whoever holds the
/// app's credentials cannot drop the append-only triggers or rewrite history.
pub async fn grant_runtime(owner: &PgPool, role: &str) -> Result<(), sqlx::Error> {
    let role = format!("\"{}\"", role.replace('"', "\"\""));
    let statements = [
        format!("GRANT USAGE ON SCHEMA public, tower_sessions TO {role}"),
        format!("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public, tower_sessions TO {role}"),
        format!("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}"),
        format!("REVOKE UPDATE, DELETE, TRUNCATE ON {APPEND_ONLY} FROM {role}"),
        format!("REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON _sqlx_migrations FROM {role}"),
    ];
    let mut tx = owner.begin().await?;
    for statement in statements {
        sqlx::query(&statement).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// The tables the runtime role may only append to and read.
pub const APPEND_ONLY: &str = "audit_events, audit_signed_checkpoints, audit_key_statements";

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
