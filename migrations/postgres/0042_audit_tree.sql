-- The audit trail as a Merkle tree (issue 67, RFC 9162): its complete subtrees (a node at `level` covers the
-- 2^level events from `idx * 2^level`; level 0 holds each event's leaf hash), appended as the trail grows and
-- never changed, and how far the tree has reached with the hashes of its right edge (to append without reading).
CREATE TABLE audit_tree_nodes (
    level INTEGER NOT NULL,
    idx   BIGINT NOT NULL,
    hash  BYTEA NOT NULL,
    PRIMARY KEY (level, idx)
);
CREATE FUNCTION audit_tree_nodes_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_tree_nodes is append-only';
END;
$$;
CREATE TRIGGER audit_tree_nodes_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_tree_nodes
FOR EACH ROW EXECUTE FUNCTION audit_tree_nodes_append_only();
CREATE TRIGGER audit_tree_nodes_no_truncate BEFORE TRUNCATE ON audit_tree_nodes
FOR EACH STATEMENT EXECUTE FUNCTION audit_tree_nodes_append_only();

CREATE TABLE audit_tree (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    size     BIGINT NOT NULL,
    frontier BYTEA NOT NULL
);
INSERT INTO audit_tree (id, size, frontier) VALUES (1, 0, '\x');

-- A checkpoint signed since also signs the tree's root at its event (the tree's size is its sequence number).
ALTER TABLE audit_signed_checkpoints ADD COLUMN root TEXT;
