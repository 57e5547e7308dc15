//! The step events' write on SQLite: group commit. Events waiting for the writer are written by one of them, each
//! with its audit event, in one transaction and one round trip.
use crate::backend::db::SqliteWriter;
use crate::backend::db::audit::{EVENT_PARAMS, INSERT_COLUMNS, bind_event, placeholders, prev};
use crate::backend::db::operations::{STEP_UPDATE_PARAMS, STEP_UPDATE_SQL, bind_step_update, step_update_sql};
use crate::domain::audit::{AuditEntry, AuditEvent};
use crate::domain::steps::Step;
use chrono::{DateTime, Utc};
use sqlx::{ConnectOptions, Connection, SqliteConnection, SqlitePool};
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, oneshot};

/// The parameters of one step change in a batch: the step's compare-and-set, then its audit event.
const CHANGE_PARAMS: usize = STEP_UPDATE_PARAMS + EVENT_PARAMS;

/// A step event's write on SQLite, grouped with the others waiting for the writer (group commit). One of them
/// leads: it writes its own change and every waiting one, each with its audit event, in one transaction and
/// one round trip, tells each its outcome, and hands the lead to the first that came meanwhile. SQLite commits
/// pages, not rows: events written together share the pages of the steps table, the audit trail and its
/// indexes, and one thread hand-off. `false` when it did not write (see `StepSession::write_step`); the
/// caller then takes the ordinary path.
pub async fn write_step(
    pool: &SqlitePool,
    writer: &Arc<SqliteWriter>,
    change: StepChange,
) -> Result<bool, sqlx::Error> {
    // A success may be the operation's last open step, which the ordinary path completes: it goes alone.
    if change.step.completed_at.is_some() {
        let mut session = StepSession::open(pool, writer).await?;
        return Ok(session.write_step(&change).await?.is_some());
    }
    let waiting = {
        let mut group = writer.step_group.lock().unwrap_or_else(|p| p.into_inner());
        if group.led {
            let (done, outcome) = oneshot::channel();
            group.waiting.push_back(Waiting { change, done });
            Err(outcome)
        } else {
            group.led = true;
            Ok(change)
        }
    };
    let own = match waiting {
        Ok(change) => change,
        Err(outcome) => match outcome.await {
            Ok(Outcome::Written(written)) => return Ok(written),
            Ok(Outcome::Lead(change)) => change,
            Err(_) => return Ok(false), // the leader stopped half-way: the ordinary path finds out what was written
        },
    };
    let _lead = Lead(writer.clone());
    let mut session = StepSession::open(pool, writer).await?;
    Ok(session.write_group(own).await)
}

/// A step's new row (with the revision it was decided on) and its audit event.
#[derive(Debug)]
pub struct StepChange {
    pub step: Step,
    pub entry: AuditEntry,
    pub now: DateTime<Utc>,
}

/// The step changes waiting for the leader, and whether there is one.
#[derive(Debug, Default)]
pub(in crate::backend::db) struct StepGroup {
    led: bool,
    waiting: VecDeque<Waiting>,
}

#[derive(Debug)]
struct Waiting {
    change: StepChange,
    done: oneshot::Sender<Outcome>,
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per event through a oneshot: a box would only add an allocation
enum Outcome {
    Written(bool),
    /// Lead the next group, starting with this change (the receiver's own).
    Lead(StepChange),
}

/// Held while leading: on the way out, however it ends, the lead passes to the first waiting change.
struct Lead(Arc<SqliteWriter>);

impl Drop for Lead {
    fn drop(&mut self) {
        let mut group = self.0.step_group.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(next) = group.waiting.pop_front() {
            match next.done.send(Outcome::Lead(next.change)) {
                Ok(()) => return,
                Err(_) => continue, // its request is gone
            }
        }
        group.led = false;
    }
}

/// At most this many step changes share a transaction (`CHANGE_PARAMS` each).
const MAX_GROUP: usize = 64;

/// A step event's write on SQLite: this process's writer permit and its own connection (no pool hand-off).
pub struct StepSession {
    _permit: OwnedSemaphorePermit,
    writer: Arc<SqliteWriter>,
    pool: SqlitePool,
    connection: OwnedMutexGuard<Option<SqliteConnection>>,
    /// A batch was sent and its answer not yet read.
    in_flight: bool,
}

impl Drop for StepSession {
    /// Dropped while waiting for a batch's answer (its request went away): the batch may have stopped after
    /// `BEGIN IMMEDIATE`, holding SQLite's write lock. Closing the connection rolls it back.
    fn drop(&mut self) {
        if self.in_flight {
            self.connection.take();
            self.writer.remember_head(None);
        }
    }
}

impl StepSession {
    async fn open(pool: &SqlitePool, writer: &Arc<SqliteWriter>) -> Result<StepSession, sqlx::Error> {
        let permit = writer.permit.clone().acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
        let connection = writer.connection.clone().lock_owned().await;
        Ok(StepSession { _permit: permit, writer: writer.clone(), pool: pool.clone(), connection, in_flight: false })
    }

    async fn conn(&mut self) -> Result<&mut SqliteConnection, sqlx::Error> {
        if self.connection.is_none() {
            *self.connection = Some(self.pool.connect_options().connect().await?);
        }
        self.connection.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// Writes the leader's change and the waiting ones: together when there are several; if that is refused
    /// (a step changed since it was read, or the audit head moved), each alone, so that one refusal costs the
    /// others nothing. The leader's own outcome is returned, the others' sent.
    async fn write_group(&mut self, own: StepChange) -> bool {
        let others: Vec<Waiting> = {
            let mut group = self.writer.step_group.lock().unwrap_or_else(|p| p.into_inner());
            let take = group.waiting.len().min(MAX_GROUP - 1);
            group.waiting.drain(..take).collect()
        };
        if !others.is_empty() {
            let changes: Vec<&StepChange> = std::iter::once(&own).chain(others.iter().map(|w| &w.change)).collect();
            if self.write_together(&changes).await {
                for w in others {
                    let _ = w.done.send(Outcome::Written(true));
                }
                return true;
            }
        }
        for w in others {
            let written = self.write_step(&w.change).await;
            let _ = w.done.send(Outcome::Written(matches!(written, Ok(Some(_)))));
        }
        matches!(self.write_step(&own).await, Ok(Some(_)))
    }

    /// `BEGIN IMMEDIATE; (UPDATE … (compare-and-set); INSERT …)… ; COMMIT` in one round trip. An audit row
    /// whose step did not change gets no hash, which the NOT NULL constraint refuses: the batch stops there
    /// and is rolled back, so the chain never skips a number.
    async fn write_together(&mut self, changes: &[&StepChange]) -> bool {
        let Some(mut head) = self.writer.remembered_head() else { return false };
        let events: Vec<AuditEvent> = changes
            .iter()
            .map(|c| {
                let event = c.entry.clone().seal(prev(&head), c.now);
                head = (event.seq, event.hash.clone());
                event
            })
            .collect();
        let sql = group_sql(changes.len());
        let mut query = sqlx::query(&sql);
        for (c, event) in changes.iter().zip(&events) {
            query = bind_event!(bind_step_update!(query, c.step), event);
        }
        self.in_flight = true;
        let conn = match self.conn().await {
            Ok(conn) => conn,
            Err(error) => {
                tracing::warn!(%error, "step events: no connection for a group; each is written alone");
                return false;
            }
        };
        let written = match query.execute(&mut *conn).await {
            Ok(_) => true,
            // Expected under concurrency: a step changed since it was read (its audit row had no hash), or another
            // process took the audit head's next number.
            Err(sqlx::Error::Database(e))
                if matches!(
                    e.kind(),
                    sqlx::error::ErrorKind::NotNullViolation | sqlx::error::ErrorKind::UniqueViolation
                ) =>
            {
                false
            }
            Err(error) => {
                tracing::warn!(%error, changes = changes.len(), "step events: a group was refused; each is written alone");
                false
            }
        };
        if !written && let Err(error) = sqlx::query("ROLLBACK").execute(&mut *conn).await {
            tracing::warn!(%error, "step events: rolling back a group failed; its connection is closed");
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
    async fn write_step(&mut self, change: &StepChange) -> Result<Option<AuditEvent>, sqlx::Error> {
        let StepChange { step, entry, now } = change;
        static SQL: LazyLock<String> = LazyLock::new(|| {
            // After the change's own parameters: whether it completes the step, and the step's operation.
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

/// `n` step changes with their audit events in one transaction (see `write_together`).
fn group_sql(n: usize) -> String {
    let mut sql = String::from("BEGIN IMMEDIATE;");
    for first in (0..n).map(|i| i * CHANGE_PARAMS) {
        // The event's values, its hash last: NULL (refused) unless its step changed.
        let mut values: Vec<String> =
            (1..EVENT_PARAMS).map(|i| format!("${}", first + STEP_UPDATE_PARAMS + i)).collect();
        values.push(format!("CASE WHEN changes() = 1 THEN ${} END", first + CHANGE_PARAMS));
        sql += &format!(
            "\n{};\nINSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {};",
            step_update_sql(first),
            values.join(", ")
        );
    }
    sql + "\nCOMMIT;"
}
