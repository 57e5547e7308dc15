//! The audit trail as a Merkle tree (RFC 9162 §2.1, as Certificate Transparency): each event is a leaf, its
//! hash `SHA-256(0x00 ‖ event hash)`, each inner node `SHA-256(0x01 ‖ left ‖ right)`. An inclusion proof (a
//! few hashes) shows that one event is in a tree of a given size and root, without the other events; a
//! consistency proof shows that a later tree only extends an earlier one.
//!
//! The tree is kept as its complete subtrees (`Node`): appending a leaf writes it and the subtrees it closes
//! (two on average), computed from the tree's right edge (`frontier`), and a stored node never changes. A
//! proof's other hashes are folded from stored nodes; `inclusion_nodes`/`consistency_nodes` say which, so that
//! the database is asked once.
use sha2::{Digest, Sha256};
use std::collections::HashMap;

pub type Hash = [u8; 32];

/// A complete subtree: the `2^level` leaves from `index << level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub level: u32,
    pub index: u64,
}

pub fn leaf_hash(entry: &[u8]) -> Hash {
    Sha256::new().chain_update([0u8]).chain_update(entry).finalize().into()
}

pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new().chain_update([1u8]).chain_update(left).chain_update(right).finalize().into()
}

/// The root of the empty tree: the hash of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The complete subtrees a tree of `size` leaves is made of, left to right (the largest first).
pub fn frontier(size: u64) -> Vec<Node> {
    let mut start = 0;
    (0..64u32)
        .rev()
        .filter(|level| size >> level & 1 == 1)
        .map(|level| {
            let node = Node { level, index: start >> level };
            start += 1 << level;
            node
        })
        .collect()
}

/// The root of a tree from its frontier's hashes, folded from the right.
pub fn root_of(frontier: &[Hash]) -> Hash {
    match frontier.split_last() {
        None => empty_root(),
        Some((last, rest)) => rest.iter().rev().fold(*last, |right, left| node_hash(left, &right)),
    }
}

/// Appends a leaf to a tree of `size` leaves whose frontier hashes are `frontier`: the nodes to store (the leaf
/// and the subtrees it closes), and the new frontier in its place.
pub fn append(frontier: &mut Vec<Hash>, size: u64, leaf: Hash) -> Vec<(Node, Hash)> {
    let (mut node, mut hash) = (Node { level: 0, index: size }, leaf);
    let mut stored = vec![(node, hash)];
    while node.index & 1 == 1 {
        let left = frontier.pop().expect("an odd index has a left sibling on the frontier");
        hash = node_hash(&left, &hash);
        node = Node { level: node.level + 1, index: node.index >> 1 };
        stored.push((node, hash));
    }
    frontier.push(hash);
    stored
}

/// The largest power of two smaller than `n` (n ≥ 2): where RFC 9162 splits a tree.
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// The hash of the leaves `[from, to)` (the RFC's MTH), from the complete subtrees that make it up.
fn subtree(from: u64, to: u64, fetch: &mut dyn FnMut(Node) -> Option<Hash>) -> Option<Hash> {
    let n = to - from;
    if n.is_power_of_two() && from.is_multiple_of(n) {
        return fetch(Node { level: n.trailing_zeros(), index: from / n });
    }
    let k = split(n);
    Some(node_hash(&subtree(from, from + k, fetch)?, &subtree(from + k, to, fetch)?))
}

/// The root of the tree of `size` leaves.
pub fn root(size: u64, fetch: &mut dyn FnMut(Node) -> Option<Hash>) -> Option<Hash> {
    if size == 0 { Some(empty_root()) } else { subtree(0, size, fetch) }
}

/// RFC 9162 §2.1.3.1: the audit path of leaf `index` in the tree of `size` leaves, from the leaf up.
pub fn inclusion_proof(index: u64, size: u64, fetch: &mut dyn FnMut(Node) -> Option<Hash>) -> Option<Vec<Hash>> {
    if index >= size {
        return None;
    }
    let (mut proof, mut from, mut to) = (Vec::new(), 0, size);
    while to - from > 1 {
        let k = split(to - from);
        if index < from + k {
            proof.push(subtree(from + k, to, fetch)?);
            to = from + k;
        } else {
            proof.push(subtree(from, from + k, fetch)?);
            from += k;
        }
    }
    proof.reverse();
    Some(proof)
}

/// RFC 9162 §2.1.4.1: the proof that the tree of `old` leaves is a prefix of the tree of `new` leaves.
pub fn consistency_proof(old: u64, new: u64, fetch: &mut dyn FnMut(Node) -> Option<Hash>) -> Option<Vec<Hash>> {
    if old > new {
        return None;
    }
    if old == 0 || old == new {
        return Some(Vec::new());
    }
    let (mut proof, mut from, mut to, mut whole) = (Vec::new(), 0, new, true);
    while old - from != to - from {
        let k = split(to - from);
        if old - from <= k {
            proof.push(subtree(from + k, to, fetch)?);
            to = from + k;
        } else {
            proof.push(subtree(from, from + k, fetch)?);
            from += k;
            whole = false;
        }
    }
    if !whole {
        proof.push(subtree(from, to, fetch)?);
    }
    proof.reverse();
    Some(proof)
}

/// The stored nodes a proof (or a root) is made of: run it once with a fetch that only notes them.
pub fn nodes_needed(run: impl FnOnce(&mut dyn FnMut(Node) -> Option<Hash>)) -> Vec<Node> {
    let mut needed = Vec::new();
    run(&mut |node| {
        needed.push(node);
        Some([0; 32])
    });
    needed.sort();
    needed.dedup();
    needed
}

/// A fetch from nodes read beforehand.
pub fn from_map(nodes: &HashMap<Node, Hash>) -> impl FnMut(Node) -> Option<Hash> + '_ {
    |node| nodes.get(&node).copied()
}

/// RFC 9162 §2.1.3.2: whether `proof` shows the leaf `leaf` at `index` in the tree of `size` leaves with `root`.
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fnode, mut snode, mut r) = (index, size - 1, *leaf);
    for p in proof {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && r == *root
}

/// `verify_inclusion` over the hex text proofs travel in (the event's hash, the path, the root): false for any
/// text that is not 32 bytes of hex.
pub fn verify_inclusion_hex(index: u64, size: u64, event_hash: &str, proof: &[String], root: &str) -> bool {
    let decode = |text: &str| hex::decode(text).ok().and_then(|bytes| Hash::try_from(bytes).ok());
    let path: Option<Vec<Hash>> = proof.iter().map(|h| decode(h)).collect();
    match (decode(event_hash), path, decode(root)) {
        (Some(event), Some(path), Some(root)) => verify_inclusion(index, size, &leaf_hash(&event), &path, &root),
        _ => false,
    }
}

/// RFC 9162 §2.1.4.2: whether `proof` shows that the tree of `old` leaves with `old_root` is a prefix of the
/// tree of `new` leaves with `new_root`.
pub fn verify_consistency(old: u64, new: u64, old_root: &Hash, new_root: &Hash, proof: &[Hash]) -> bool {
    if old > new {
        return false;
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 {
        return proof.is_empty();
    }
    let mut path: Vec<Hash> = proof.to_vec();
    if old.is_power_of_two() {
        path.insert(0, *old_root);
    }
    let Some((first, rest)) = path.split_first() else { return false };
    let (mut fnode, mut snode) = (old - 1, new - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    fr == *old_root && sr == *new_root && snode == 0
}

#[cfg(test)]
mod tests;
