-- Keys this installation makes for itself at first use, shared by every instance (hex text on both engines).
-- `audit_name`: the HMAC key of the hash a failed sign-in of an unknown name leaves in the audit trail.
CREATE TABLE instance_keys (
    name TEXT PRIMARY KEY,
    key_hex TEXT NOT NULL
);
