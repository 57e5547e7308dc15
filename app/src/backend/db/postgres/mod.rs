//! PostgreSQL specifics: the pool and the embedded migrations.
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;

pub async fn connect(url: &str) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await?)
}

pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("../migrations/postgres").run(pool).await?;
    tower_sessions_sqlx_store::PostgresStore::new(pool.clone()).migrate().await?;
    Ok(())
}
