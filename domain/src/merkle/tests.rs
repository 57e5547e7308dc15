use super::*;
use ct_merkle::mem_backed_tree::MemoryBackedTree;
use ct_merkle::{ConsistencyProof, InclusionProof, RootHash};
use sha2_next::Sha256 as Sha256Next;

/// The eight leaves of the RFC 6962 reference tree (Certificate Transparency's test data).
const REFERENCE_LEAVES: [&str; 8] =
    ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"];

/// Its published roots for the sizes 1 to 8.
const REFERENCE_ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// A tree kept as the database keeps it: every stored node, and the frontier.
struct Stored {
    nodes: HashMap<Node, Hash>,
    frontier: Vec<Hash>,
    size: u64,
    writes: usize,
}

impl Stored {
    fn of(entries: &[Vec<u8>]) -> Stored {
        let mut tree = Stored { nodes: HashMap::new(), frontier: Vec::new(), size: 0, writes: 0 };
        for entry in entries {
            let written = append(&mut tree.frontier, tree.size, leaf_hash(entry));
            tree.writes += written.len();
            tree.nodes.extend(written);
            tree.size += 1;
        }
        tree
    }

    fn root(&self, size: u64) -> Hash {
        root(size, &mut from_map(&self.nodes)).unwrap()
    }
}

fn entries(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("event {i}").into_bytes()).collect()
}

fn flat(proof: &[Hash]) -> Vec<u8> {
    proof.concat()
}

#[test]
fn the_reference_tree_has_its_published_roots_at_every_size() {
    let leaves: Vec<Vec<u8>> = REFERENCE_LEAVES.iter().map(|l| hex::decode(l).unwrap()).collect();
    assert_eq!(hex::encode(empty_root()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    for size in 1..=8 {
        let tree = Stored::of(&leaves[..size]);
        assert_eq!(hex::encode(tree.root(size as u64)), REFERENCE_ROOTS[size - 1], "size {size}");
        assert_eq!(hex::encode(root_of(&tree.frontier)), REFERENCE_ROOTS[size - 1], "frontier of {size}");
    }
}

#[test]
fn every_inclusion_proof_is_the_reference_implementations_and_verifies() {
    let ours = Stored::of(&entries(64));
    for size in 1..=64u64 {
        let mut prefix: MemoryBackedTree<Sha256Next, Vec<u8>> = MemoryBackedTree::new();
        entries(size as usize).into_iter().for_each(|e| prefix.push(e));
        let root = ours.root(size);
        assert_eq!(prefix.root().as_bytes().as_slice(), root, "root at {size}");
        for index in 0..size {
            let proof = inclusion_proof(index, size, &mut from_map(&ours.nodes)).unwrap();
            assert_eq!(flat(&proof), prefix.prove_inclusion(index as usize).as_bytes(), "{index} in {size}");
            let leaf = leaf_hash(&entries(64)[index as usize]);
            assert!(verify_inclusion(index, size, &leaf, &proof, &root), "{index} in {size}");
            let theirs = InclusionProof::<Sha256Next>::from_bytes(flat(&proof));
            let entry = &entries(64)[index as usize];
            assert!(prefix.root().verify_inclusion(entry, index, &theirs).is_ok(), "{index} in {size}");
        }
    }
}

#[test]
fn every_consistency_proof_is_the_reference_implementations_and_verifies() {
    let ours = Stored::of(&entries(64));
    for new in 1..=64u64 {
        let mut tree: MemoryBackedTree<Sha256Next, Vec<u8>> = MemoryBackedTree::new();
        entries(new as usize).into_iter().for_each(|e| tree.push(e));
        for old in 0..=new {
            let proof = consistency_proof(old, new, &mut from_map(&ours.nodes)).unwrap();
            let (old_root, new_root) = (ours.root(old), ours.root(new));
            assert!(verify_consistency(old, new, &old_root, &new_root, &proof), "{old} → {new}");
            if old == 0 || old == new {
                assert!(proof.is_empty());
                continue;
            }
            assert_eq!(flat(&proof), tree.prove_consistency((new - old) as usize).as_bytes(), "{old} → {new}");
            let theirs = ConsistencyProof::<Sha256Next>::try_from_bytes(flat(&proof)).unwrap();
            let old_theirs = RootHash::<Sha256Next>::new(old_root.into(), old);
            assert!(tree.root().verify_consistency(&old_theirs, &theirs).is_ok(), "{old} → {new}");
        }
    }
}

/// The kinds of damage of Certificate Transparency's test data, each on every proof of a small tree.
fn damaged(proof: &[Hash]) -> Vec<(String, Vec<Hash>)> {
    let mut out = Vec::new();
    for i in 0..proof.len() {
        for bit in [0, 1, 255] {
            let mut changed = proof.to_vec();
            changed[i][bit / 8] ^= 1 << (bit % 8);
            out.push((format!("bit {bit} of hash {i}"), changed));
        }
    }
    if !proof.is_empty() {
        out.push(("truncated".into(), proof[..proof.len() - 1].to_vec()));
    }
    let garbage = leaf_hash(b"garbage");
    out.push(("preceding garbage".into(), [vec![garbage], proof.to_vec()].concat()));
    out.push(("trailing garbage".into(), [proof.to_vec(), vec![garbage]].concat()));
    out
}

#[test]
fn a_damaged_inclusion_proof_or_a_wrong_leaf_index_or_root_fails() {
    let tree = Stored::of(&entries(20));
    for size in 1..=20u64 {
        let root = tree.root(size);
        for index in 0..size {
            let leaf = leaf_hash(&entries(20)[index as usize]);
            let proof = inclusion_proof(index, size, &mut from_map(&tree.nodes)).unwrap();
            for (damage, changed) in damaged(&proof) {
                assert!(!verify_inclusion(index, size, &leaf, &changed, &root), "{damage}: {index} in {size}");
            }
            let other = leaf_hash(b"another event");
            assert!(!verify_inclusion(index, size, &other, &proof, &root), "another leaf");
            assert!(!verify_inclusion(index, size, &leaf, &proof, &tree.root(size - 1)), "another root");
            assert!(!verify_inclusion(index + 1, size, &leaf, &proof, &root), "the next index");
            assert!(index == 0 || !verify_inclusion(index - 1, size, &leaf, &proof, &root), "the index before");
            assert!(!verify_inclusion(size, size, &leaf, &proof, &root), "an index beyond the tree");
        }
    }
}

#[test]
fn a_damaged_consistency_proof_or_swapped_or_wrong_roots_fail() {
    let tree = Stored::of(&entries(20));
    for new in 2..=20u64 {
        for old in 1..new {
            let (old_root, new_root) = (tree.root(old), tree.root(new));
            let proof = consistency_proof(old, new, &mut from_map(&tree.nodes)).unwrap();
            for (damage, changed) in damaged(&proof) {
                assert!(!verify_consistency(old, new, &old_root, &new_root, &changed), "{damage}: {old} → {new}");
            }
            assert!(!verify_consistency(old, new, &new_root, &old_root, &proof), "swapped roots");
            let rewritten = leaf_hash(b"a rewritten history");
            assert!(!verify_consistency(old, new, &rewritten, &new_root, &proof), "another old root");
            assert!(!verify_consistency(old, new, &old_root, &rewritten, &proof), "another new root");
            assert!(!verify_consistency(new, old, &new_root, &old_root, &proof), "sizes reversed");
        }
    }
    let one = tree.root(1);
    assert!(verify_consistency(1, 1, &one, &one, &[]) && !verify_consistency(1, 1, &one, &one, &[one]));
}

#[test]
fn a_million_events_take_twenty_hashes_to_prove_and_two_writes_an_event_to_keep() {
    let (index, size) = (123_456, 1_000_000);
    let needed = nodes_needed(|fetch| {
        inclusion_proof(index, size, fetch);
    });
    assert!(needed.len() <= 40, "{} nodes read", needed.len());
    let zeros: HashMap<Node, Hash> = needed.iter().map(|n| (*n, [0; 32])).collect();
    assert_eq!(inclusion_proof(index, size, &mut from_map(&zeros)).unwrap().len(), 20);
    let consistency = nodes_needed(|fetch| {
        consistency_proof(654_321, size, fetch);
    });
    assert!(consistency.len() <= 60, "{} nodes read", consistency.len());

    let tree = Stored::of(&entries(4096));
    assert_eq!(tree.writes, 2 * 4096 - 1, "each node once");
    assert_eq!(frontier(4096).len(), 1);
    assert_eq!(frontier(1_000_000).len(), 1_000_000u64.count_ones() as usize);
}

#[test]
fn the_nodes_a_proof_needs_are_the_ones_it_reads() {
    let tree = Stored::of(&entries(37));
    for (index, size) in [(0, 1), (5, 37), (36, 37), (16, 17)] {
        let needed = nodes_needed(|fetch| {
            inclusion_proof(index, size, fetch);
        });
        let only: HashMap<Node, Hash> = needed.iter().map(|n| (*n, tree.nodes[n])).collect();
        assert_eq!(
            inclusion_proof(index, size, &mut from_map(&only)),
            inclusion_proof(index, size, &mut from_map(&tree.nodes))
        );
    }
    assert_eq!(inclusion_proof(3, 3, &mut from_map(&tree.nodes)), None, "no leaf 3 in a tree of 3");
    assert_eq!(consistency_proof(4, 3, &mut from_map(&tree.nodes)), None);
}
