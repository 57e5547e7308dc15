//! The audit trail's Merkle tree (domain::merkle), kept up with the trail, and the proofs it gives: that one
//! event is in the trail a signed tree head vouches for (inclusion), and that a later head only extends an
//! earlier one (consistency). The chain stays the record; the tree is made from it alone (each event's hash is
//! a leaf), so it follows the trail in write transactions of its own — every second and whenever a proof or a
//! checkpoint needs it — and appending an event costs the tree nothing.
use super::Caller;
use crate::db::{self, Db, audit::AuditQuery};
use contract::AppError;
use contract::audit::{ConsistencyProof, EventProof};
use domain::audit_export::AuditFilter;
use domain::checkpoint::SignedCheckpoint;
use domain::invalid::{Field, Invalid, Rule};
use domain::merkle::{self, Hash};
use domain::roles::Role;

/// Events added to the tree in one transaction.
const CHUNK: i64 = 5_000;

/// Grows the tree to the trail's head; its size.
pub async fn follow(db: &Db) -> Result<u64, AppError> {
    loop {
        let mut conn = db.connection().await?;
        let (head, _) = db::audit::head(&mut conn).await?;
        if db::audit_tree::head(&mut conn).await?.size >= head as u64 {
            return Ok(head as u64);
        }
        drop(conn);
        let mut tx = db.begin_write().await?;
        // Read both again under the writer's lock: another follower (the timer's, a proof's, a checkpoint's, another
        // instance's) may have grown it meanwhile.
        let (head, _) = db::audit::head(&mut tx).await?;
        let mut tree = db::audit_tree::head(&mut tx).await?;
        if tree.size >= head as u64 {
            continue;
        }
        let events = db::audit_tree::events_after(&mut tx, tree.size, CHUNK).await?;
        if events.is_empty() {
            // Behind the head with nothing after it: events were removed. Said, not waited on for ever.
            let why = format!("the trail's head is event {head}, but no event follows {}", tree.size);
            return Err(AppError::internal("audit tree", why));
        }
        let mut nodes = Vec::with_capacity(2 * events.len());
        for (seq, hash) in &events {
            let bytes = hex::decode(hash).ok().filter(|b| b.len() == 32 && *seq as u64 == tree.size + 1);
            let Some(bytes) = bytes else {
                return Err(AppError::internal(
                    "audit tree",
                    format!("event {seq} cannot be a leaf after {}", tree.size),
                ));
            };
            nodes.extend(merkle::append(&mut tree.frontier, tree.size, merkle::leaf_hash(&bytes)));
            tree.size += 1;
        }
        db::audit_tree::grow(&mut tx, &nodes, &tree).await?;
        tx.commit().await?;
    }
}

/// The tree's root at `size` events (the tree grown that far first).
pub async fn root_at(db: &Db, size: u64) -> Result<Hash, AppError> {
    if size > follow(db).await? {
        return Err(AppError::NotFound);
    }
    let root = read(db, size, |fetch| merkle::root(size, fetch).map(|root| vec![root])).await?;
    Ok(root[0])
}

/// The audit path of leaf `index` in the tree of `size` events, as stored (not checked).
pub async fn inclusion_path(db: &Db, index: u64, size: u64) -> Result<Vec<Hash>, AppError> {
    read(db, size, |fetch| merkle::inclusion_proof(index, size, fetch)).await
}

/// The consistency proof from `from` to `to` events, as stored (not checked).
pub async fn consistency_path(db: &Db, from: u64, to: u64) -> Result<Vec<Hash>, AppError> {
    read(db, to, |fetch| merkle::consistency_proof(from, to, fetch)).await
}

/// The hashes `make` folds from stored nodes: the nodes it needs listed first and read in one query.
async fn read(
    db: &Db,
    size: u64,
    make: impl Fn(&mut dyn FnMut(merkle::Node) -> Option<Hash>) -> Option<Vec<Hash>>,
) -> Result<Vec<Hash>, AppError> {
    let needed = merkle::nodes_needed(|fetch| {
        make(fetch);
    });
    let nodes = db::audit_tree::nodes(&mut db.connection().await?, &needed).await?;
    make(&mut merkle::from_map(&nodes)).ok_or_else(|| missing(size))
}

fn missing(size: u64) -> AppError {
    AppError::internal("audit tree", format!("a node of the tree of {size} events is missing"))
}

/// The inclusion proof of event `seq` in the tree of `tree_size` events, checked before it is given: by
/// default the newest signed tree head's, or the tree's own head when no signed head holds the event yet (a read
/// signs nothing). Auditors, and staff and managers for their departments' events; 404 for any other event.
pub async fn prove_event(
    state: &crate::AppState,
    caller: &Caller,
    seq: i64,
    tree_size: Option<u64>,
) -> Result<EventProof, AppError> {
    caller.require_any(Role::EVIDENCE_READERS)?;
    if seq < 1 {
        return Err(AppError::invalid(Field::Seq, Invalid::new(Rule::OutOfRange, "events are numbered from 1")));
    }
    let departments = caller.readable_departments();
    let query = AuditQuery {
        filter: &AuditFilter::default(),
        departments: departments.as_deref(),
        after_seq: Some(seq - 1),
        before_seq: None,
        up_to_seq: Some(seq),
        except_actions: &[],
        limit: 1,
    };
    let event = db::audit::select(&mut state.db.connection().await?, &query).await?.pop().ok_or(AppError::NotFound)?;
    let size = match tree_size {
        Some(size) => size,
        None => tree_size_for(&state.db, seq).await?,
    };
    inclusion(&state.db, event.seq, &event.hash, size).await
}

/// The newest signed tree head that holds event `seq`, or the tree's own head. A read signs nothing (an export
/// signs its head before it asks: `evidence`).
pub async fn tree_size_for(db: &Db, seq: i64) -> Result<u64, AppError> {
    let signed = db::audit_proof::tree_head(&mut db.connection().await?, None).await?;
    match signed.filter(|c| c.seq >= seq) {
        Some(head) => Ok(head.seq as u64),
        None => follow(db).await,
    }
}

/// Event `seq` (with `hash`)'s inclusion proof in the tree of `size` events, checked against its root.
pub async fn inclusion(db: &Db, seq: i64, hash: &str, size: u64) -> Result<EventProof, AppError> {
    TreeHead::at(db, size).await?.prove(db, seq, hash).await
}

/// A tree head events are proven against: its size, its root and the checkpoint that signed it, if any — read
/// once for all the events of a bundle.
pub struct TreeHead {
    size: u64,
    root: Hash,
    checkpoint: Option<SignedCheckpoint>,
}

impl TreeHead {
    pub async fn at(db: &Db, size: u64) -> Result<TreeHead, AppError> {
        let root = root_at(db, size).await?;
        let checkpoint = db::audit_proof::tree_head(&mut db.connection().await?, Some(size as i64)).await?;
        let checkpoint = checkpoint.filter(|c| c.root.as_deref() == Some(hex::encode(root).as_str()));
        Ok(TreeHead { size, root, checkpoint })
    }

    /// Event `seq` (with `hash`)'s inclusion proof, checked against the root.
    pub async fn prove(&self, db: &Db, seq: i64, hash: &str) -> Result<EventProof, AppError> {
        let (index, size) = ((seq - 1) as u64, self.size);
        if index >= size {
            return Err(AppError::invalid(
                Field::TreeSize,
                Invalid::new(Rule::OutOfRange, format!("a tree of {size} events does not hold event {seq}")),
            ));
        }
        let proof = inclusion_path(db, index, size).await?;
        let leaf = hex::decode(hash).map(|b| merkle::leaf_hash(&b)).map_err(|e| AppError::internal("audit tree", e))?;
        if !merkle::verify_inclusion(index, size, &leaf, &proof, &self.root) {
            let why = format!("event {seq} does not prove against the tree's root");
            return Err(AppError::internal("audit tree", why));
        }
        Ok(EventProof {
            seq,
            event_hash: hash.to_string(),
            leaf_index: index,
            tree_size: size,
            root: hex::encode(self.root),
            proof: proof.iter().map(hex::encode).collect(),
            checkpoint: self.checkpoint.clone(),
        })
    }
}

/// The consistency proof from the tree of `from` events to the tree of `to` events. Auditors only.
pub async fn prove_consistency(db: &Db, caller: &Caller, from: u64, to: u64) -> Result<ConsistencyProof, AppError> {
    caller.require(Role::Auditor)?;
    if from > to {
        let why = format!("from ({from}) is after to ({to})");
        return Err(AppError::invalid(Field::To, Invalid::new(Rule::OutOfRange, why)));
    }
    let (proof, from_root, to_root) = consistency(db, from, to).await?;
    Ok(ConsistencyProof {
        from,
        to,
        from_root: hex::encode(from_root),
        to_root: hex::encode(to_root),
        proof: proof.iter().map(hex::encode).collect(),
    })
}

/// The consistency proof from `from` to `to` events and the two roots, checked before it is given.
pub async fn consistency(db: &Db, from: u64, to: u64) -> Result<(Vec<Hash>, Hash, Hash), AppError> {
    let (from_root, to_root) = (root_at(db, from).await?, root_at(db, to).await?);
    let proof = consistency_path(db, from, to).await?;
    if !merkle::verify_consistency(from, to, &from_root, &to_root, &proof) {
        return Err(AppError::internal("audit tree", format!("the tree of {to} does not extend the tree of {from}")));
    }
    Ok((proof, from_root, to_root))
}
