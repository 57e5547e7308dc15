//! Sessions live in the same database as everything else, so that any server instance can serve any user.
use super::Db;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

#[derive(Clone, Debug)]
pub enum SqlSessionStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl SqlSessionStore {
    pub fn new(db: &Db) -> Self {
        match db {
            Db::Sqlite(pool, ..) => SqlSessionStore::Sqlite(SqliteStore::new(pool.clone())),
            Db::Postgres(pool, ..) => SqlSessionStore::Postgres(PostgresStore::new(pool.clone())),
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for SqlSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            SqlSessionStore::Sqlite(s) => s.create(record).await,
            SqlSessionStore::Postgres(s) => s.create(record).await,
        }
    }
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            SqlSessionStore::Sqlite(s) => s.save(record).await,
            SqlSessionStore::Postgres(s) => s.save(record).await,
        }
    }
    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            SqlSessionStore::Sqlite(s) => s.load(id).await,
            SqlSessionStore::Postgres(s) => s.load(id).await,
        }
    }
    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            SqlSessionStore::Sqlite(s) => s.delete(id).await,
            SqlSessionStore::Postgres(s) => s.delete(id).await,
        }
    }
}

#[async_trait::async_trait]
impl ExpiredDeletion for SqlSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        match self {
            SqlSessionStore::Sqlite(s) => s.delete_expired().await,
            SqlSessionStore::Postgres(s) => s.delete_expired().await,
        }
    }
}
