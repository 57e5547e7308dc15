-- A key rotation's statement names the last event the old key's signer vouched for: its memory carries over.
ALTER TABLE audit_key_statements ADD COLUMN vouched_seq BIGINT;
ALTER TABLE audit_key_statements ADD COLUMN vouched_hash TEXT;
