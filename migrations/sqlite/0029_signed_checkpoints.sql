-- Checkpoints of the audit chain signed with a key kept outside the database (domain::audit_proof), and the
-- statements by which a new key names the one it replaces. Append-only, like the events they vouch for.
CREATE TABLE audit_signed_checkpoints (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    seq       INTEGER NOT NULL,
    hash      TEXT NOT NULL,
    at        TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL,
    timestamp TEXT
);
CREATE INDEX audit_signed_checkpoints_by_seq ON audit_signed_checkpoints (seq);

CREATE TABLE audit_key_statements (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    old_key       TEXT NOT NULL,
    new_key       TEXT NOT NULL,
    at            TEXT NOT NULL,
    new_signature TEXT NOT NULL,
    old_signature TEXT
);

CREATE TRIGGER audit_signed_checkpoints_no_update BEFORE UPDATE ON audit_signed_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit_signed_checkpoints is append-only'); END;
CREATE TRIGGER audit_signed_checkpoints_no_delete BEFORE DELETE ON audit_signed_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit_signed_checkpoints is append-only'); END;
CREATE TRIGGER audit_key_statements_no_update BEFORE UPDATE ON audit_key_statements
BEGIN SELECT RAISE(ABORT, 'audit_key_statements is append-only'); END;
CREATE TRIGGER audit_key_statements_no_delete BEFORE DELETE ON audit_key_statements
BEGIN SELECT RAISE(ABORT, 'audit_key_statements is append-only'); END;
