//! The data layer: one interface for both engines. Statements that both engines read the same way are
//! written once (with `$n` placeholders, which SQLite accepts too); what differs lives in `sqlite/` and
//! `postgres/`. Queries are checked at run time (`query_as` + `FromRow`), so no database is needed to build.
pub mod ai_attempts;
pub mod api_clients;
pub mod audit;
pub mod audit_proof;
mod audit_rows;
pub mod audit_tree;
pub mod batches;
pub mod chat;
pub mod demo_systems;
pub mod departments;
pub mod directory;
pub mod dispatches;
pub mod drills;
mod group;
pub mod holds;
pub mod idempotency;
pub mod incidents;
pub mod makers;
pub mod metrics;
pub mod notifications;
pub mod operations;
pub mod pools;
mod postgres;
pub mod reconciliations;
pub mod registrations;
pub mod rerun_requests;
pub mod reviews;
pub mod sessions;
pub mod sign_in;
mod sqlite;
pub mod stages;
pub(crate) mod states;
pub mod stop_switch;
pub mod users;
pub mod webhooks;

use pools::{PoolKind, PoolSettings, PoolWatch};
use sqlx::pool::PoolConnection;
use sqlx::{Database, PgPool, Pool, Postgres, Sqlite, SqlitePool, Transaction};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The database. Both engines write one transaction at a time, in the order of the audit trail's head. SQLite
/// allows one writer: this process lines its writers up on a semaphore instead of letting them poll the file
/// lock (SQLite's busy handler sleeps up to 100 ms between tries). PostgreSQL: see `begin_write`.
/// Each `Db` reads through one pool (`pools::PoolKind`); its siblings share the writer.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool, Arc<SqliteWriter>, Arc<PoolWatch>),
    Postgres(PgPool, Arc<PgWriter>, Arc<PoolWatch>),
}

/// This process's PostgreSQL writers: one at a time (see `begin_write`), and the writes waiting to share a
/// transaction (see `write_at_once`).
#[derive(Debug)]
pub struct PgWriter {
    permit: Arc<Semaphore>,
    queue: group::Queue,
}

/// This process's SQLite writers: one at a time, and what they know of the audit head. Only a permit holder
/// reads or moves the cached head; another process's append is caught by the sequence number's primary key.
#[derive(Debug)]
pub struct SqliteWriter {
    permit: Arc<Semaphore>,
    audit_head: std::sync::Mutex<Option<(i64, String)>>,
    /// The group commit's own connection (see `sqlite::write_at_once`).
    connection: Arc<tokio::sync::Mutex<Option<sqlx::SqliteConnection>>>,
    /// Writes waiting to be written together (see `sqlite::write_at_once`).
    queue: group::Queue,
}

/// A SQLite write transaction's hold on the writer, and the audit head it moved (kept on commit).
pub struct WriteLock {
    _permit: OwnedSemaphorePermit,
    writer: Arc<SqliteWriter>,
    pub(crate) moved_head: Option<(i64, String)>,
}

impl SqliteWriter {
    fn remembered_head(&self) -> Option<(i64, String)> {
        self.audit_head.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn remember_head(&self, head: Option<(i64, String)>) {
        *self.audit_head.lock().unwrap_or_else(|p| p.into_inner()) = head;
    }
}

impl WriteLock {
    /// The audit head as this transaction sees it, if known without asking the database.
    pub(crate) fn audit_head(&self) -> Option<(i64, String)> {
        self.moved_head.clone().or_else(|| self.writer.remembered_head())
    }

    /// The cached head was wrong (another process appended): forget it.
    pub(crate) fn forget_audit_head(&self) {
        self.writer.remember_head(None);
    }
}

/// A connection to either engine, inside a transaction (`Db::begin_read`, `Db::begin_write`) or on its own
/// (`Db::connection`, each statement reading alone). The data layer's functions take `&mut Conn`, so that the
/// caller chooses which. A write transaction holds this process's writer permit until it ends.
pub enum Conn {
    Sqlite(Handle<Sqlite>, Option<WriteLock>),
    Postgres(Handle<Postgres>, Option<PgWriteLock>),
}

/// The rows a read takes for the rest of its transaction, so that no other transaction changes or claims them
/// meanwhile. How (or whether) an engine takes them is its own business: `Conn::lock_clause`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLock {
    /// Every row the read returns.
    Every,
    /// The rows of the table with this alias, in a read that joins others.
    Of(&'static str),
    /// The rows nobody else holds: a queue's claim passes over the others instead of waiting for them.
    SkipLocked,
}

impl Conn {
    /// The clause that makes a read take `lock`, to end its SQL with.
    pub fn lock_clause(&self, lock: RowLock) -> String {
        match self {
            Conn::Sqlite(..) => sqlite::lock_clause(lock),
            Conn::Postgres(..) => postgres::lock_clause(lock),
        }
    }
}

/// A PostgreSQL write transaction's turn: this process's permit, and the audit head it locked first (and
/// moves with each append, so an append reads nothing).
pub struct PgWriteLock {
    _permit: OwnedSemaphorePermit,
    pub(crate) head: (i64, String),
}

/// Begins a transaction in a task of its own. sqlx's `begin` cannot be cut off at every await: on SQLite after a
/// `BEGIN IMMEDIATE` was answered (while it checks the connection is inside it), on PostgreSQL before the answer
/// was read; a caller cut off there (the request timeout, a client gone) leaves no transaction to roll back, and
/// the connection goes back to the pool inside it: holding SQLite's write lock for good ("database is locked" for
/// every writer after it). The task always finishes the `begin`; its result, when nobody awaits it any more, is a
/// transaction dropped, which rolls back. (Test: `cancellation.rs`, cut off after each of its awaits.)
async fn begin<DB: Database>(
    pool: &Pool<DB>,
    statement: Option<&'static str>,
) -> Result<Transaction<'static, DB>, sqlx::Error> {
    let pool = pool.clone();
    let begun = tokio::spawn(async move {
        match statement {
            Some(statement) => pool.begin_with(statement).await,
            None => pool.begin().await,
        }
    });
    begun.await.map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
}

/// A transaction, or a bare connection for single-statement reads on hot paths (no BEGIN/COMMIT round trips).
pub enum Handle<DB: Database> {
    Transaction(Transaction<'static, DB>),
    Connection(PoolConnection<DB>),
}

impl<DB: Database> Deref for Handle<DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        match self {
            Handle::Transaction(t) => t,
            Handle::Connection(c) => c,
        }
    }
}

impl<DB: Database> DerefMut for Handle<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        match self {
            Handle::Transaction(t) => t,
            Handle::Connection(c) => c,
        }
    }
}

impl<DB: Database> Handle<DB> {
    async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Handle::Transaction(t) => t.commit().await,
            Handle::Connection(_) => Ok(()),
        }
    }
}

/// Runs the same statement on whichever engine the transaction belongs to.
macro_rules! on_conn {
    ($tx:expr, |$conn:ident| $body:expr) => {
        match $tx {
            $crate::db::Conn::Sqlite(t, _) => {
                let $conn = &mut **t;
                $body
            }
            $crate::db::Conn::Postgres(t, _) => {
                let $conn = &mut **t;
                $body
            }
        }
    };
}
pub(crate) use on_conn;

/// Runs one statement on either engine and tells whether it changed exactly one row: the answer of a
/// compare-and-set (`UPDATE … WHERE id = $1 AND status = $2`: `false` when another move came first) or of an
/// insert that may meet its conflict (`ON CONFLICT DO NOTHING`: `false` when the row was there).
macro_rules! changed_one {
    ($tx:expr, |$conn:ident| $execute:expr) => {
        $crate::db::on_conn!($tx, |$conn| $execute.map(|done| done.rows_affected() == 1))
    };
}
pub(crate) use changed_one;

impl Db {
    /// `sqlite://…` or `postgres://…`, as in `DATABASE_URL`, with the default pools.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        Db::connect_with(url, &PoolSettings::default()).await
    }

    /// The work pool (`PoolKind::Work`) of `settings`; the pages' and exports' are its `sibling`s.
    pub async fn connect_with(url: &str, settings: &PoolSettings) -> anyhow::Result<Db> {
        let (size, timeout) = (settings.work, settings.acquire_timeout);
        let watch = Arc::new(PoolWatch::new(PoolKind::Work));
        if url.starts_with("sqlite:") {
            let writer = SqliteWriter {
                permit: Arc::new(Semaphore::new(1)),
                audit_head: std::sync::Mutex::new(None),
                connection: Arc::new(tokio::sync::Mutex::new(None)),
                queue: group::Queue::default(),
            };
            Ok(Db::Sqlite(sqlite::connect(url, size, timeout).await?, Arc::new(writer), watch))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let writer = PgWriter { permit: Arc::new(Semaphore::new(1)), queue: group::Queue::default() };
            Ok(Db::Postgres(postgres::connect(url, size, timeout).await?, Arc::new(writer), watch))
        } else {
            anyhow::bail!("DATABASE_URL must start with sqlite:// or postgres:// (got '{}')", redact_url(url))
        }
    }

    /// The same database and writer through a pool of its own (`kind`, sized by `settings`), connecting on
    /// first use: the pages' reads then never take a connection the work pool's callers need, nor the reverse.
    pub fn sibling(&self, kind: PoolKind, settings: &PoolSettings) -> Db {
        let (size, timeout) = (settings.size(kind), settings.acquire_timeout);
        let watch = Arc::new(PoolWatch::new(kind));
        match self {
            Db::Sqlite(pool, writer, _) => Db::Sqlite(sqlite::sibling(pool, size, timeout), writer.clone(), watch),
            Db::Postgres(pool, writer, _) => {
                Db::Postgres(postgres::sibling(pool, size, timeout), writer.clone(), watch)
            }
        }
    }

    /// What this pool's acquires waited (for `/metrics`).
    pub fn pool_watch(&self) -> &PoolWatch {
        match self {
            Db::Sqlite(_, _, watch) | Db::Postgres(_, _, watch) => watch,
        }
    }

    /// Applies the embedded migrations (ours and the session store's).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(pool, ..) => sqlite::migrate(pool).await?,
            Db::Postgres(pool, ..) => postgres::migrate(pool).await?,
        }
        // What SQL cannot compute (NFKC) for the rows from before a migration kept it.
        let mut tx = self.begin_write().await?;
        users::fill_username_keys(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// PostgreSQL: grants the runtime role its rights (`postgres::grant_runtime`); this is the owner's pool.
    /// SQLite has no roles: one file, one process, whose owner can do anything (the signed checkpoints are
    /// what shows that).
    pub async fn grant_runtime(&self, role: &str) -> Result<(), sqlx::Error> {
        match self {
            Db::Sqlite(..) => Ok(()),
            Db::Postgres(pool, ..) => postgres::grant_runtime(pool, role).await,
        }
    }

    /// The role this pool signs in as (PostgreSQL).
    pub fn role(&self) -> Option<String> {
        match self {
            Db::Sqlite(..) => None,
            Db::Postgres(pool, ..) => Some(pool.connect_options().get_username().to_string()),
        }
    }

    /// A transaction that will write. On SQLite it takes the write lock up front (`BEGIN IMMEDIATE`), so a
    /// read-then-write never fails half-way on a busy snapshot. On PostgreSQL it locks the audit trail's head
    /// up front: writes lock rows in different orders (a step event appends, then completes the operation; the
    /// dispatcher marks the operation, then appends), and with the head always first no two can deadlock.
    /// Writes append anyway, so they were already in line at the head; this process's writers wait for their
    /// turn on a semaphore, not holding a connection that readers need.
    pub async fn begin_write(&self) -> Result<Conn, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pool, writer, watch) => {
                let permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
                let lock = WriteLock { _permit: permit, writer: writer.clone(), moved_head: None };
                let tx = watch.timed(begin(pool, Some("BEGIN IMMEDIATE"))).await?;
                Conn::Sqlite(Handle::Transaction(tx), Some(lock))
            }
            Db::Postgres(pool, writer, watch) => {
                let permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
                let mut tx = Handle::Transaction(watch.timed(begin(pool, None)).await?);
                let head = audit::lock_head(&mut tx).await?;
                Conn::Postgres(tx, Some(PgWriteLock { _permit: permit, head }))
            }
        })
    }

    /// A transaction that claims work — leases rows no one else holds (`FOR UPDATE SKIP LOCKED`) — and appends no
    /// audit event: an outbox's worker taking its next batch. On PostgreSQL it waits neither for this process's
    /// writers nor for the audit head, so that claims do not queue behind the writes of the batches already sent;
    /// it never waits for a row lock either, so it cannot deadlock with them. On SQLite it is a write like any other.
    pub async fn begin_claim(&self) -> Result<Conn, sqlx::Error> {
        match self {
            Db::Sqlite(..) => self.begin_write().await,
            Db::Postgres(pool, _, watch) => {
                Ok(Conn::Postgres(Handle::Transaction(watch.timed(begin(pool, None)).await?), None))
            }
        }
    }

    /// A transaction that only reads: one consistent snapshot, no write lock.
    pub async fn begin_read(&self) -> Result<Conn, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pool, _, watch) => {
                Conn::Sqlite(Handle::Transaction(watch.timed(begin(pool, None)).await?), None)
            }
            Db::Postgres(pool, _, watch) => {
                Conn::Postgres(Handle::Transaction(watch.timed(begin(pool, Some("BEGIN READ ONLY"))).await?), None)
            }
        })
    }

    /// A bare connection: each statement reads on its own. For hot paths that read one or two independent
    /// rows (every API call's token, a step before its compare-and-set); use `begin_read` for a snapshot.
    pub async fn connection(&self) -> Result<Conn, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pool, _, watch) => Conn::Sqlite(Handle::Connection(watch.timed(pool.acquire()).await?), None),
            Db::Postgres(pool, _, watch) => {
                Conn::Postgres(Handle::Connection(watch.timed(pool.acquire()).await?), None)
            }
        })
    }

    /// Writes a step's change or a registration with its audit event, grouped with the other writes waiting for
    /// the writer: on SQLite in one round trip (`sqlite::write_at_once`), on PostgreSQL in one transaction
    /// (`postgres::write_group`). `false` when it did not write: the caller then takes the ordinary path.
    pub async fn write_at_once(&self, change: Change) -> Result<bool, sqlx::Error> {
        match self {
            Db::Sqlite(pool, writer, _) => sqlite::write_at_once(pool, writer, change).await,
            Db::Postgres(_, writer, _) => {
                // A success may be its operation's last open step, which the ordinary path completes.
                if matches!(&change.write, Write::Step(step) if step.completed_at.is_some()) {
                    return Ok(false);
                }
                Ok(match writer.queue.join(change).await {
                    group::Turn::Done(written) => written,
                    group::Turn::Lead(own, leading) => postgres::write_group(self, own, leading.take()).await,
                })
            }
        }
    }

    /// Keeps the query planner's statistics current (SQLite: `PRAGMA optimize`, which analyses only what
    /// changed enough; PostgreSQL's autovacuum does this by itself). Run at start and by the housekeeping.
    pub async fn optimize(&self) -> Result<(), sqlx::Error> {
        if let Db::Sqlite(pool, ..) = self {
            sqlx::query("PRAGMA optimize=0x10002").execute(pool).await?;
        }
        Ok(())
    }

    /// Folds the board's count changes into its counts (PostgreSQL appends changes, see migration 0027;
    /// SQLite's triggers update the counts themselves). Returns how many changes it folded.
    pub async fn fold_board_counts(&self) -> Result<u64, sqlx::Error> {
        match self {
            Db::Sqlite(..) => Ok(0),
            Db::Postgres(pool, ..) => postgres::fold_board_counts(pool).await,
        }
    }

    pub fn engine(&self) -> &'static str {
        match self {
            Db::Sqlite(..) => "sqlite",
            Db::Postgres(..) => "postgres",
        }
    }

    /// Closes every connection, the group commit's own too (SQLite): a connection left open on a file that is
    /// then replaced (a backup restored) would, when it closes, checkpoint and delete the `-wal` beside it by
    /// name, which is by then the new file's.
    /// The pool first: a grouped write checks its own pool is closed, under the writer's lock, before it opens
    /// the writer's connection again, so once the writer's connection is taken here none is opened after it.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(pool, writer, _) => {
                close_fully(pool).await;
                let connection = writer.connection.lock().await.take();
                if let Some(connection) = connection {
                    let _ = sqlx::Connection::close(connection).await;
                }
            }
            Db::Postgres(pool, ..) => close_fully(pool).await,
        }
    }
}

/// sqlx 0.8's `Pool::close` may return with a connection still open (launchbadge/sqlx#3217): one whose return
/// to the pool was under way lands in the idle queue after the last drain, or the wait for the permits ends
/// early. Closing again drains what came back, until no connection is left.
async fn close_fully<DB: Database>(pool: &Pool<DB>) {
    pool.close().await;
    while pool.size() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        pool.close().await;
    }
}

/// SQLite: a consistent copy of the live database into a new file (`VACUUM INTO`, readers and writers go on);
/// `false` on PostgreSQL, whose tool is pg_dump.
pub async fn backup_into(db: &Db, path: &std::path::Path) -> Result<bool, sqlx::Error> {
    match db {
        Db::Sqlite(pool, ..) => {
            sqlx::query("VACUUM INTO $1").bind(path.to_string_lossy().into_owned()).execute(pool).await?;
            Ok(true)
        }
        Db::Postgres(..) => Ok(false),
    }
}

pub use group::{Change, Write};

impl Conn {
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            // The permit is released only after the commit; the head this transaction moved becomes the cache.
            Conn::Sqlite(t, lock) => {
                let committed = t.commit().await;
                if let Some(lock) = lock {
                    match (&committed, lock.moved_head) {
                        (Ok(()), Some(moved)) => lock.writer.remember_head(Some(moved)),
                        (Err(_), Some(_)) => lock.writer.remember_head(None),
                        _ => {}
                    }
                }
                committed
            }
            // The permit, if any, is dropped only after the commit.
            Conn::Postgres(t, _lock) => t.commit().await,
        }
    }
}

/// `$after+1, …, $after+count`: a statement's next `count` parameters, numbered in the order they appear, which
/// is the order SQLite numbers them in too (so each is bound once, in that order).
pub(crate) fn params(after: usize, count: usize) -> String {
    (after + 1..=after + count).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// `CASE key WHEN $after+1 THEN $after+2 … END` for `rows` (key, value) pairs, bound in that order: one column's
/// new value per row in a batch's single `UPDATE`.
pub(crate) fn case_when(key: &str, after: usize, rows: usize) -> String {
    let whens: Vec<String> =
        (0..rows).map(|i| format!("WHEN ${} THEN ${}", after + 2 * i + 1, after + 2 * i + 2)).collect();
    format!("CASE {key} {} END", whens.join(" "))
}

/// Hides the password in a database URL before it is shown or logged.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &url[scheme_end + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}:***{}", &url[..scheme_end + 3], user, &url[at..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn a_database_password_never_shows_in_a_redacted_url() {
        assert_eq!(redact_url("postgres://app:s3cret@db:5432/rg"), "postgres://app:***@db:5432/rg");
        assert_eq!(redact_url("sqlite://data/rerun-gate.db?mode=rwc"), "sqlite://data/rerun-gate.db?mode=rwc");
    }
}
