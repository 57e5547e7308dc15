//! PostgreSQL's group commit of step events and registrations: the writes waiting for this process's writer
//! (`db::group`) are written by one of them in one transaction, so that they share one commit (one WAL flush)
//! and one turn at the audit head. The transaction locks the head first, as every write transaction does
//! (`Db::begin_write`), so the lock order that keeps writers from deadlocking holds, and every writer of the
//! rows a registration depends on waits behind it; each audit event chains after the one before.
use crate::backend::db::group::{Change, Waiting, Write};
use crate::backend::db::{Db, audit, operations, registrations};

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
            Write::Step(step) => operations::update_step_if_unchanged(&mut tx, step).await?,
            Write::Registration(r) => {
                let seen = registrations::seen(&mut tx, r).await?;
                let free = !(seen.key_used || seen.process_id_used || seen.step_keys_held)
                    && seen.duplicate_of == r.possible_duplicate_of;
                if free {
                    registrations::insert_answered(&mut tx, r).await?;
                }
                free
            }
        };
        if held {
            audit::append(&mut tx, change.entry.clone(), change.now).await?;
        }
        written.push(held);
    }
    tx.commit().await?;
    Ok(written)
}
