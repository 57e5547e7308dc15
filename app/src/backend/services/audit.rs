//! Recording into and checking the audit trail.
use crate::backend::db::{self, Db, Tx};
use crate::domain::audit::{AuditEntry, AuditEvent, ChainBreak, ChainVerifier};
use chrono::{DateTime, Utc};

/// Appends `entry` inside the caller's transaction, stamped with the caller's request ID.
pub async fn record(
    tx: &mut Tx,
    mut entry: AuditEntry,
    request_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<AuditEvent, sqlx::Error> {
    if entry.request_id.is_none() {
        entry.request_id = request_id.map(str::to_string);
    }
    let event = db::audit::append(tx, entry, now).await?;
    tracing::debug!(seq = event.seq, action = %event.action, object = %event.object_id, actor = %event.actor_label, "audit");
    Ok(event)
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verification {
    Intact { events: i64 },
    Broken(ChainBreak),
}

/// Reads the whole chain in pages (constant memory) and stops at the first event that does not fit.
pub async fn verify(db: &Db) -> Result<Verification, sqlx::Error> {
    const PAGE: i64 = 1_000;
    let mut tx = db.begin_read().await?;
    let mut verifier = ChainVerifier::default();
    let mut after = 0;
    loop {
        let page = db::audit::page_after(&mut tx, after, PAGE).await?;
        for event in &page {
            if let Err(broken) = verifier.check(event) {
                return Ok(Verification::Broken(broken));
            }
        }
        match page.last() {
            Some(last) if page.len() as i64 == PAGE => after = last.seq,
            _ => break,
        }
    }
    let (head_seq, head_hash) = db::audit::head(&mut tx).await?;
    let head = (head_seq > 0).then_some((head_seq, head_hash.as_str()));
    Ok(match verifier.finish(head) {
        Ok(events) => Verification::Intact { events },
        Err(broken) => Verification::Broken(broken),
    })
}
