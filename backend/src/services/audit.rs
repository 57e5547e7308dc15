//! Recording into and checking the audit trail.
use crate::db::{self, Conn, Db};
use chrono::{DateTime, Utc};
use domain::audit::{AuditEntry, AuditEvent, ChainBreak, ChainVerifier, GENESIS_HASH};
use domain::audit_proof::{CheckpointCheck, ProofProblem, ProofSummary, PublicKey, SignedCheckpoint, TrustedKeys};

/// Appends `entry` inside the caller's transaction, stamped with the caller's request ID.
pub async fn record(
    tx: &mut Conn,
    entry: AuditEntry,
    request_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<AuditEvent, sqlx::Error> {
    let mut events = record_all(tx, vec![(entry, now)], request_id).await?;
    Ok(events.pop().expect("the event was recorded"))
}

/// Records events in their order, each at its moment and stamped with the caller's request ID, in a few
/// statements (`db::audit::append_all`).
pub async fn record_all(
    tx: &mut Conn,
    entries: Vec<(AuditEntry, DateTime<Utc>)>,
    request_id: Option<&str>,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let entries = entries
        .into_iter()
        .map(|(mut entry, at)| {
            if entry.request_id.is_none() {
                entry.request_id = request_id.map(str::to_string);
            }
            (entry, at)
        })
        .collect();
    let events = db::audit::append_all(tx, entries).await?;
    for event in &events {
        tracing::debug!(
            seq = event.seq,
            action = %event.action,
            object = %event.object_id,
            actor = %event.actor_label,
            "audit"
        );
    }
    Ok(events)
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verification {
    /// Every event links to the one before.
    Intact {
        events: i64,
    },
    /// Intact, and it matches every signed checkpoint (`verify_with` a public key).
    Proven {
        events: i64,
        proof: ProofSummary,
    },
    Broken(ChainBreak),
    /// The chain links, but not to what was signed: history was rewritten (or a checkpoint is not genuine).
    Unproven(ProofProblem),
}

/// What the signed checkpoints are checked against: the public key an auditor trusts, and checkpoints they
/// kept from before (an earlier export), in case the database's own were removed.
pub struct Proof {
    pub public_key: PublicKey,
    pub kept: Vec<SignedCheckpoint>,
}

/// Reads the whole chain in pages (constant memory, one snapshot, so that events appended meanwhile do not
/// count) and stops at the first event that does not fit.
pub async fn verify(db: &Db) -> Result<Verification, sqlx::Error> {
    verify_with(db, None).await
}

/// `verify`, and with a proof, stops too at the first event that no longer matches a signed checkpoint.
pub async fn verify_with(db: &Db, proof: Option<Proof>) -> Result<Verification, sqlx::Error> {
    let mut tx = db.begin_read().await?;
    let mut check = match proof {
        Some(proof) => match checkpoint_check(&mut tx, proof).await? {
            Ok(check) => Some(check),
            Err(problem) => return Ok(Verification::Unproven(problem)),
        },
        None => None,
    };
    let walked = walk_checking(&mut tx, 0, GENESIS_HASH, |event| match check.as_mut() {
        Some(check) => check.event(event.seq, &event.hash).map_err(Stop::Unproven),
        None => Ok(()),
    })
    .await?;
    let (last_seq, last_hash) = match walked {
        Ok(last) => last,
        Err(Stop::Broken(broken)) => return Ok(Verification::Broken(broken)),
        Err(Stop::Unproven(problem)) => return Ok(Verification::Unproven(problem)),
    };
    let (head_seq, head_hash) = db::audit::head(&mut tx).await?;
    let head = (head_seq > 0).then_some((head_seq, head_hash.as_str()));
    let events = match ChainVerifier::after(last_seq, &last_hash).finish(head) {
        Ok(events) => events,
        Err(broken) => return Ok(Verification::Broken(broken)),
    };
    Ok(match check.map(|check| check.finish(last_seq, true)) {
        None => Verification::Intact { events },
        Some(Ok(proof)) => Verification::Proven { events, proof },
        Some(Err(problem)) => Verification::Unproven(problem),
    })
}

/// The database's checkpoints and the kept ones, each signed by the trusted key or one its statements link.
async fn checkpoint_check(tx: &mut Conn, proof: Proof) -> Result<Result<CheckpointCheck, ProofProblem>, sqlx::Error> {
    let statements = db::audit_proof::statements(tx).await?;
    let mut checkpoints = db::audit_proof::checkpoints_up_to(tx, i64::MAX).await?;
    checkpoints.extend(proof.kept);
    Ok(CheckpointCheck::new(checkpoints, &TrustedKeys::new(proof.public_key, &statements)))
}

enum Stop {
    Broken(ChainBreak),
    Unproven(ProofProblem),
}

impl From<ChainBreak> for Stop {
    fn from(broken: ChainBreak) -> Self {
        Stop::Broken(broken)
    }
}

/// Checks the events after `seq` (whose hash is `hash`) in pages; returns the last event that fits, or the
/// first that does not.
pub async fn walk(tx: &mut Conn, seq: i64, hash: &str) -> Result<Result<(i64, String), ChainBreak>, sqlx::Error> {
    walk_checking(tx, seq, hash, |_| Ok(())).await
}

/// `walk`, with one more check of each event that fits the chain.
pub async fn walk_checking<E: From<ChainBreak>>(
    tx: &mut Conn,
    seq: i64,
    hash: &str,
    mut also: impl FnMut(&AuditEvent) -> Result<(), E>,
) -> Result<Result<(i64, String), E>, sqlx::Error> {
    const PAGE: i64 = 5_000;
    let mut verifier = ChainVerifier::after(seq, hash);
    let mut last = (seq, hash.to_string());
    loop {
        let page = db::audit::page_after(tx, last.0, PAGE).await?;
        for event in &page {
            if let Err(stop) = verifier.check(event).map_err(E::from).and_then(|()| also(event)) {
                return Ok(Err(stop));
            }
            last = (event.seq, event.hash.clone());
        }
        if (page.len() as i64) < PAGE {
            return Ok(Ok(last));
        }
    }
}
