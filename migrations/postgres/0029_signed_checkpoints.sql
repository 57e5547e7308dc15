-- Checkpoints of the audit chain signed with a key kept outside the database (domain::audit_proof), and the
-- statements by which a new key names the one it replaces. Append-only, like the events they vouch for.
CREATE TABLE audit_signed_checkpoints (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seq       BIGINT NOT NULL,
    hash      TEXT NOT NULL,
    at        TIMESTAMPTZ NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL,
    timestamp TEXT
);
CREATE INDEX audit_signed_checkpoints_by_seq ON audit_signed_checkpoints (seq);

CREATE TABLE audit_key_statements (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    old_key       TEXT NOT NULL,
    new_key       TEXT NOT NULL,
    at            TIMESTAMPTZ NOT NULL,
    new_signature TEXT NOT NULL,
    old_signature TEXT
);

CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER audit_signed_checkpoints_append_only BEFORE UPDATE OR DELETE ON audit_signed_checkpoints
FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER audit_signed_checkpoints_no_truncate BEFORE TRUNCATE ON audit_signed_checkpoints
FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER audit_key_statements_append_only BEFORE UPDATE OR DELETE ON audit_key_statements
FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER audit_key_statements_no_truncate BEFORE TRUNCATE ON audit_key_statements
FOR EACH STATEMENT EXECUTE FUNCTION append_only();
