//! Recording into and checking the audit trail.
use crate::backend::db::{self, Conn, Db};
use crate::domain::audit::{AuditEntry, AuditEvent, ChainBreak, ChainVerifier, GENESIS_HASH};
use chrono::{DateTime, Utc};

/// Appends `entry` inside the caller's transaction, stamped with the caller's request ID.
pub async fn record(
    tx: &mut Conn,
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

/// Reads the whole chain in pages (constant memory, one snapshot, so that events appended meanwhile do not
/// count) and stops at the first event that does not fit.
pub async fn verify(db: &Db) -> Result<Verification, sqlx::Error> {
    let mut tx = db.begin_read().await?;
    let (last_seq, last_hash) = match walk(&mut tx, 0, GENESIS_HASH).await? {
        Ok(last) => last,
        Err(broken) => return Ok(Verification::Broken(broken)),
    };
    let (head_seq, head_hash) = db::audit::head(&mut tx).await?;
    let head = (head_seq > 0).then_some((head_seq, head_hash.as_str()));
    Ok(match ChainVerifier::after(last_seq, &last_hash).finish(head) {
        Ok(events) => Verification::Intact { events },
        Err(broken) => Verification::Broken(broken),
    })
}

/// Checks the events after `seq` (whose hash is `hash`) in pages; returns the last event that fits, or the
/// first that does not.
pub async fn walk(tx: &mut Conn, seq: i64, hash: &str) -> Result<Result<(i64, String), ChainBreak>, sqlx::Error> {
    const PAGE: i64 = 5_000;
    let mut verifier = ChainVerifier::after(seq, hash);
    let mut last = (seq, hash.to_string());
    loop {
        let page = db::audit::page_after(tx, last.0, PAGE).await?;
        for event in &page {
            if let Err(broken) = verifier.check(event) {
                return Ok(Err(broken));
            }
            last = (event.seq, event.hash.clone());
        }
        if (page.len() as i64) < PAGE {
            return Ok(Ok(last));
        }
    }
}
