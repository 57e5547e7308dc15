//! PostgreSQL's group commit of step events and registrations: the writes waiting for this process's writer
//! (`db::group`) are written by one of them in one transaction, so that they share one commit (one WAL flush)
//! and one turn at the audit head. The transaction locks the head first, as every write transaction does
//! (`Db::begin_write`), so the lock order that keeps writers from deadlocking holds, and every writer of the
//! rows a registration depends on waits behind it; each audit event chains after the one before.
use crate::db::audit::{INSERT_COLUMNS, bind_event, placeholders, prev};
use crate::db::group::{Change, Waiting, Write};
use crate::db::operations::{STEP_UPDATE_PARAMS, bind_step_update, step_update_sql};
use crate::db::{Conn, Db, audit, registrations};
use domain::steps::Step;
use std::sync::LazyLock;

/// Writes the leader's change and the waiting ones; returns the leader's outcome and sends the others'.
pub async fn write_group(db: &Db, own: Change, others: Vec<Waiting>) -> bool {
    let changes: Vec<&Change> = std::iter::once(&own).chain(others.iter().map(|w| &w.change)).collect();
    let written = match write_changes(db, &changes).await {
        Ok(written) => written,
        Err(error) => {
            // Nothing of the group was written: each takes the ordinary path, which finds out why.
            tracing::warn!(%error, changes = changes.len(), "group commit: a group was refused; each is written alone");
            vec![false; changes.len()]
        }
    };
    for (w, written) in others.into_iter().zip(&written[1..]) {
        w.answer(*written);
    }
    written[0]
}

/// Each write and, when it held, its audit event, in one transaction: a step's compare-and-set; a registration
/// whose key, process ID and step keys are still free and whose business-key duplicate is the one it was
/// decided on (read under the head's lock, so nobody changes them before the commit). One that did not hold is
/// left out (the ordinary path decides again); an error leaves out all of them.
async fn write_changes(db: &Db, changes: &[&Change]) -> Result<Vec<bool>, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let mut written = Vec::with_capacity(changes.len());
    for change in changes {
        let held = match &change.write {
            Write::Step(step) => step_with_event(&mut tx, step, change).await?,
            Write::Registration(r) => {
                let seen = registrations::seen(&mut tx, r).await?;
                let free = !(seen.key_used || seen.process_id_used || seen.step_keys_held)
                    && seen.duplicate_of == r.possible_duplicate_of;
                if free {
                    registrations::insert_answered(&mut tx, r).await?;
                    audit::append(&mut tx, change.entry.clone(), change.now).await?;
                }
                free
            }
        };
        written.push(held);
    }
    tx.commit().await?;
    Ok(written)
}

/// A step's compare-and-set and, only when it changed the row, its audit event, in one statement (one round
/// trip holding the head's lock); `true` when it did. The event is sealed after the head as this transaction
/// moved it, which moves on only when the event was written.
async fn step_with_event(tx: &mut Conn, step: &Step, change: &Change) -> Result<bool, sqlx::Error> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "WITH changed AS ({} RETURNING 1) INSERT INTO audit_events ({INSERT_COLUMNS}) SELECT {} FROM changed",
            step_update_sql(0),
            placeholders(STEP_UPDATE_PARAMS)
        )
    });
    let Conn::Postgres(t, Some(lock)) = tx else { return Ok(false) };
    let event = change.entry.clone().seal(prev(&lock.head), change.now);
    let done = bind_event!(bind_step_update!(sqlx::query(SQL.as_str()), step), event).execute(&mut **t).await?;
    let written = done.rows_affected() == 1;
    if written {
        lock.head = (event.seq, event.hash.clone());
    }
    Ok(written)
}
