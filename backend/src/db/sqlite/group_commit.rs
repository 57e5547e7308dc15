//! SQLite's group commit: writes waiting for the writer (step events, registrations) are written by one of them,
//! each with its audit event, in one transaction and one round trip.
use crate::db::SqliteWriter;
use crate::db::audit::{EVENT_PARAMS, INSERT_COLUMNS, bind_event, placeholders, prev};
use crate::db::group::{Change, Turn, Waiting, Write};
use crate::db::operations::{STEP_UPDATE_PARAMS, STEP_UPDATE_SQL, bind_step_update, step_update_sql};
use crate::db::registrations::{bind_registration, registration_holds, registration_params, registration_sql};
use domain::audit::AuditEvent;
use sqlx::sqlite::{Sqlite, SqliteArguments};
use sqlx::{ConnectOptions, Connection, SqliteConnection, SqlitePool};
use std::sync::{Arc, LazyLock};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit};

/// A write on SQLite, grouped with the others waiting for the writer (group commit, `db::group`): the leader
/// writes its own change and every waiting one, each with its audit event, in one transaction and one round
/// trip. SQLite commits pages,
/// not rows: writes made together share the pages of their tables, the audit trail and its indexes, and one
/// thread hand-off. `false` when it did not write (a step changed since it was read, a key or process ID
/// taken meanwhile, the audit head unknown…): the caller then takes the ordinary path, which decides again
/// under the lock.
pub async fn write_at_once(pool: &SqlitePool, writer: &Arc<SqliteWriter>, change: Change) -> Result<bool, sqlx::Error> {
    // A success may be the operation's last open step, which the ordinary path completes: it goes alone.
    if let Write::Step(step) = &change.write
        && step.completed_at.is_some()
    {
        let mut session = Session::open(pool, writer).await?;
        return Ok(session.write_step(&change).await?.is_some());
    }
    match writer.queue.join(change).await {
        Turn::Done(written) => Ok(written),
        Turn::Lead(own, leading) => {
            let mut session = Session::open(pool, writer).await?;
            Ok(session.write_group(own, leading.take()).await)
        }
    }
}

/// The parameters a write takes in a batch.
fn params(write: &Write) -> usize {
    match write {
        Write::Step(_) => STEP_UPDATE_PARAMS,
        Write::Registration(r) => registration_params(r.steps.len()),
    }
}

/// A write's statements after `n` other parameters, and the condition under which its audit event gets its hash.
fn statements(write: &Write, n: usize) -> (String, String) {
    match write {
        Write::Step(_) => (step_update_sql(n), "changes() = 1".into()),
        Write::Registration(r) => (registration_sql(n, r.steps.len()), registration_holds(n, r.steps.len())),
    }
}

type Batch<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

fn bind<'q>(query: Batch<'q>, write: &'q Write) -> Batch<'q> {
    match write {
        Write::Step(step) => bind_step_update!(query, step),
        Write::Registration(r) => bind_registration!(query, r),
    }
}

/// A grouped write on SQLite: this process's writer permit and its own connection (no pool hand-off).
pub struct Session {
    _permit: OwnedSemaphorePermit,
    writer: Arc<SqliteWriter>,
    pool: SqlitePool,
    connection: OwnedMutexGuard<Option<SqliteConnection>>,
    /// A batch was sent and its answer not yet read.
    in_flight: bool,
}

impl Drop for Session {
    /// Dropped while waiting for a batch's answer (its request went away): the batch may have stopped after
    /// `BEGIN IMMEDIATE`, holding SQLite's write lock. Closing the connection rolls it back.
    fn drop(&mut self) {
        if self.in_flight {
            self.connection.take();
            self.writer.remember_head(None);
        }
    }
}

impl Session {
    async fn open(pool: &SqlitePool, writer: &Arc<SqliteWriter>) -> Result<Session, sqlx::Error> {
        let permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
        let connection = writer.connection.clone().lock_owned().await;
        Ok(Session { _permit: permit, writer: writer.clone(), pool: pool.clone(), connection, in_flight: false })
    }

    async fn conn(&mut self) -> Result<&mut SqliteConnection, sqlx::Error> {
        // A database closed for good (`Db::close`, before its file is replaced) is not opened again by a write
        // that was waiting for its turn: its connection would stay open on the old file.
        if self.pool.is_closed() {
            return Err(sqlx::Error::PoolClosed);
        }
        if self.connection.is_none() {
            *self.connection = Some(self.pool.connect_options().connect().await?);
        }
        self.connection.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// Writes the leader's change and the waiting ones: together when there are several; if that is refused
    /// (a step changed since it was read, or the audit head moved), each alone, so that one refusal costs the
    /// others nothing. The leader's own outcome is returned, the others' sent.
    async fn write_group(&mut self, own: Change, others: Vec<Waiting>) -> bool {
        if !others.is_empty() {
            let changes: Vec<&Change> = std::iter::once(&own).chain(others.iter().map(|w| &w.change)).collect();
            if self.write_together(&changes).await {
                others.into_iter().for_each(|w| w.answer(true));
                return true;
            }
        }
        for w in others {
            let written = self.write_alone(&w.change).await;
            w.answer(written);
        }
        self.write_alone(&own).await
    }

    async fn write_alone(&mut self, change: &Change) -> bool {
        match change.write {
            Write::Step(_) => matches!(self.write_step(change).await, Ok(Some(_))),
            Write::Registration(_) => self.write_together(&[change]).await,
        }
    }

    /// `BEGIN IMMEDIATE; (UPDATE … (compare-and-set) | INSERT …; INSERT INTO audit_events …)… ; COMMIT` in one
    /// round trip. An audit row whose write did not hold (its step did not change, a registration's premise
    /// moved) gets no hash, which the NOT NULL constraint refuses; a key or process ID taken meanwhile is
    /// refused by its unique index: the batch stops there and is rolled back, so the chain never skips a number.
    async fn write_together(&mut self, changes: &[&Change]) -> bool {
        let Some(mut head) = self.writer.remembered_head() else { return false };
        let events: Vec<AuditEvent> = changes
            .iter()
            .map(|c| {
                let event = c.entry.clone().seal(prev(&head), c.now);
                head = (event.seq, event.hash.clone());
                event
            })
            .collect();
        let sql = group_sql(changes);
        let mut query = sqlx::query(&sql);
        for (c, event) in changes.iter().zip(&events) {
            query = bind_event!(bind(query, &c.write), event);
        }
        self.in_flight = true;
        let conn = match self.conn().await {
            Ok(conn) => conn,
            Err(error) => {
                tracing::warn!(%error, "group commit: no connection for a group; each is written alone");
                return false;
            }
        };
        let written = match query.execute(&mut *conn).await {
            Ok(_) => true,
            // Expected under concurrency: a write no longer held (its audit row had no hash), a key or process ID
            // was taken meanwhile, or another process took the audit head's next number.
            Err(sqlx::Error::Database(e))
                if matches!(
                    e.kind(),
                    sqlx::error::ErrorKind::NotNullViolation | sqlx::error::ErrorKind::UniqueViolation
                ) =>
            {
                false
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    changes = changes.len(),
                    "group commit: a group was refused; each is written alone"
                );
                false
            }
        };
        if !written && let Err(error) = sqlx::query("ROLLBACK").execute(&mut *conn).await {
            tracing::warn!(%error, "group commit: rolling back a group failed; its connection is closed");
            self.connection.take(); // dropping the connection rolls back what the batch began
        }
        self.in_flight = false;
        self.writer.remember_head(written.then_some(head));
        written
    }

    /// `None` when it did not write (the head is unknown or was taken by another process, or the step changed,
    /// or — for a success — it would have been the operation's last open step, which completes the operation):
    /// the caller then takes the ordinary path, which reads the head and decides again under the lock.
    /// One round trip: `BEGIN IMMEDIATE; UPDATE … (compare-and-set); INSERT … WHERE changes() = 1; COMMIT`,
    /// then the stored hash of the sequence number it used.
    async fn write_step(&mut self, change: &Change) -> Result<Option<AuditEvent>, sqlx::Error> {
        let Change { write: Write::Step(step), entry, now } = change else { return Ok(None) };
        static SQL: LazyLock<String> = LazyLock::new(|| {
            // After the change's own parameters: whether it completes the step, and the step's operation.
            const CHANGE_PARAMS: usize = STEP_UPDATE_PARAMS + EVENT_PARAMS;
            let (completes, operation) = (CHANGE_PARAMS + 1, CHANGE_PARAMS + 2);
            let (step, seq) = (1, STEP_UPDATE_PARAMS + 1); // the step's id, and the event's first value
            format!(
                "BEGIN IMMEDIATE;
                 {} AND (${completes} = 0 OR EXISTS (SELECT 1 FROM steps other
                     WHERE other.operation_id = ${operation} AND other.id <> ${step} AND other.completed_at IS NULL));
                 INSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {} WHERE changes() = 1;
                 COMMIT; SELECT hash FROM audit_events WHERE seq = ${seq}",
                STEP_UPDATE_SQL.as_str(),
                placeholders(STEP_UPDATE_PARAMS)
            )
        });
        let Some(head) = self.writer.remembered_head() else { return Ok(None) };
        let event = entry.clone().seal(prev(&head), *now);
        let completes = step.completed_at.is_some() as i64;
        let query = bind_event!(bind_step_update!(sqlx::query_scalar::<_, String>(SQL.as_str()), step), event)
            .bind(completes)
            .bind(step.operation_id);
        self.in_flight = true;
        let answer = query.fetch_optional(self.conn().await?).await;
        self.in_flight = false;
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

/// The changes with their audit events in one transaction (see `write_together`).
fn group_sql(changes: &[&Change]) -> String {
    let mut sql = String::from("BEGIN IMMEDIATE;");
    let mut first = 0;
    for change in changes {
        let params = params(&change.write);
        let (statements, holds) = statements(&change.write, first);
        // The event's values, its hash last: NULL (refused) unless its write held.
        let mut values: Vec<String> = (1..EVENT_PARAMS).map(|i| format!("${}", first + params + i)).collect();
        values.push(format!("CASE WHEN {holds} THEN ${} END", first + params + EVENT_PARAMS));
        sql += &format!("\n{statements};\nINSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {};", values.join(", "));
        first += params + EVENT_PARAMS;
    }
    sql + "\nCOMMIT;"
}
