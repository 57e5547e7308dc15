//! The audit trail's Merkle tree (domain::merkle): its stored nodes, append-only like the trail, and how far it
//! has reached (`audit_tree`: the size and the hashes of its right edge).
use super::{Conn, on_conn};
use domain::merkle::{Hash, Node};
use std::collections::HashMap;

/// How far the tree has reached: its size (the events it holds, from the first) and its right edge's hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeHead {
    pub size: u64,
    pub frontier: Vec<Hash>,
}

/// The tree's head (in a write transaction, only one writer at a time moves it: `Db::begin_write`).
pub async fn head(tx: &mut Conn) -> Result<TreeHead, sqlx::Error> {
    let (size, frontier): (i64, Vec<u8>) =
        on_conn!(tx, |c| sqlx::query_as("SELECT size, frontier FROM audit_tree WHERE id = 1").fetch_one(c).await)?;
    let frontier = frontier.chunks_exact(32).map(|c| c.try_into().expect("32 bytes")).collect();
    Ok(TreeHead { size: size as u64, frontier })
}

/// The sequence numbers and hashes of the events after the tree's `size`, up to `limit` of them.
pub async fn events_after(tx: &mut Conn, size: u64, limit: i64) -> Result<Vec<(i64, String)>, sqlx::Error> {
    let sql = "SELECT seq, hash FROM audit_events WHERE seq > $1 ORDER BY seq LIMIT $2";
    on_conn!(tx, |c| sqlx::query_as(sql).bind(size as i64).bind(limit).fetch_all(c).await)
}

/// Stores new nodes and the tree's new head.
pub async fn grow(tx: &mut Conn, nodes: &[(Node, Hash)], head: &TreeHead) -> Result<(), sqlx::Error> {
    // Three values a node; a few hundred nodes a statement keeps within either engine's limit on parameters.
    for chunk in nodes.chunks(500) {
        let values: Vec<String> =
            (0..chunk.len()).map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect();
        let sql = format!("INSERT INTO audit_tree_nodes (level, idx, hash) VALUES {}", values.join(", "));
        on_conn!(tx, |c| {
            let mut query = sqlx::query(&sql);
            for (node, hash) in chunk {
                query = query.bind(node.level as i32).bind(node.index as i64).bind(hash.as_slice());
            }
            query.execute(c).await.map(drop)
        })?;
    }
    on_conn!(tx, |c| sqlx::query("UPDATE audit_tree SET size = $1, frontier = $2 WHERE id = 1")
        .bind(head.size as i64)
        .bind(head.frontier.concat())
        .execute(c)
        .await
        .map(drop))
}

/// The stored nodes among `wanted` (a proof's: a few dozen at most), in one query.
pub async fn nodes(tx: &mut Conn, wanted: &[Node]) -> Result<HashMap<Node, Hash>, sqlx::Error> {
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let pairs: Vec<String> =
        (0..wanted.len()).map(|i| format!("(level = ${} AND idx = ${})", 2 * i + 1, 2 * i + 2)).collect();
    let sql = format!("SELECT level, idx, hash FROM audit_tree_nodes WHERE {}", pairs.join(" OR "));
    let rows: Vec<(i32, i64, Vec<u8>)> = on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql);
        for node in wanted {
            query = query.bind(node.level as i32).bind(node.index as i64);
        }
        query.fetch_all(c).await
    })?;
    Ok(rows
        .into_iter()
        .filter_map(|(level, idx, hash)| {
            Some((Node { level: level as u32, index: idx as u64 }, <Hash>::try_from(hash.as_slice()).ok()?))
        })
        .collect())
}
