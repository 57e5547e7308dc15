-- The audit trail as a Merkle tree (issue 67, RFC 9162): its complete subtrees (a node at `level` covers the
-- 2^level events from `idx * 2^level`; level 0 holds each event's leaf hash), appended as the trail grows and
-- never changed, and how far the tree has reached with the hashes of its right edge (to append without reading).
CREATE TABLE audit_tree_nodes (
    level INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    hash  BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TRIGGER audit_tree_nodes_no_update BEFORE UPDATE ON audit_tree_nodes
BEGIN SELECT RAISE(ABORT, 'audit_tree_nodes is append-only'); END;
CREATE TRIGGER audit_tree_nodes_no_delete BEFORE DELETE ON audit_tree_nodes
BEGIN SELECT RAISE(ABORT, 'audit_tree_nodes is append-only'); END;

CREATE TABLE audit_tree (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    size     INTEGER NOT NULL,
    frontier BLOB NOT NULL
);
INSERT INTO audit_tree (id, size, frontier) VALUES (1, 0, x'');

-- A checkpoint signed since also signs the tree's root at its event (the tree's size is its sequence number).
ALTER TABLE audit_signed_checkpoints ADD COLUMN root TEXT;
