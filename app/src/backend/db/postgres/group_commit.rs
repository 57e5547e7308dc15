//! PostgreSQL's group commit of step events: the events waiting for this process's writer (`db::group`) are
//! written by one of them in one transaction, so that they share one commit (one WAL flush) and one turn at
//! the audit head. The transaction locks the head first, as every write transaction does (`Db::begin_write`),
//! so the lock order that keeps writers from deadlocking holds; each audit event chains after the one before.
use crate::backend::db::group::{Change, Waiting, Write};
use crate::backend::db::{Db, audit, operations};

/// Writes the leader's change and the waiting ones; returns the leader's outcome and sends the others'.
pub async fn write_group(db: &Db, own: Change, others: Vec<Waiting>) -> bool {
    let changes: Vec<&Change> = std::iter::once(&own).chain(others.iter().map(|w| &w.change)).collect();
    let written = match write_steps(db, &changes).await {
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

/// Each step's compare-and-set and, when it held, its audit event, in one transaction. A step changed since it
/// was read is left out (the ordinary path decides again on the row as it is); an error leaves out all of them.
async fn write_steps(db: &Db, changes: &[&Change]) -> Result<Vec<bool>, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let mut written = Vec::with_capacity(changes.len());
    for change in changes {
        let Write::Step(step) = &change.write else {
            written.push(false);
            continue;
        };
        let changed = operations::update_step_if_unchanged(&mut tx, step).await?;
        if changed {
            audit::append(&mut tx, change.entry.clone(), change.now).await?;
        }
        written.push(changed);
    }
    tx.commit().await?;
    Ok(written)
}
