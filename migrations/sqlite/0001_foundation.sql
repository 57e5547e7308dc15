-- People, departments and the audit trail core (SQLite).
CREATE TABLE departments (
    id         INTEGER PRIMARY KEY,
    code       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    disabled_at   TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE user_roles (
    user_id INTEGER NOT NULL REFERENCES users(id),
    role    TEXT NOT NULL CHECK (role IN ('staff', 'manager', 'auditor', 'admin')),
    PRIMARY KEY (user_id, role)
);

CREATE TABLE user_departments (
    user_id       INTEGER NOT NULL REFERENCES users(id),
    department_id INTEGER NOT NULL REFERENCES departments(id),
    PRIMARY KEY (user_id, department_id)
);

-- Failed sign-ins, kept in the database so that throttling holds across server instances.
CREATE TABLE sign_in_failures (
    id       INTEGER PRIMARY KEY,
    username TEXT NOT NULL,
    ip       TEXT NOT NULL,
    at       TEXT NOT NULL
);
CREATE INDEX sign_in_failures_by_username ON sign_in_failures (username, at);
CREATE INDEX sign_in_failures_by_ip ON sign_in_failures (ip, at);

CREATE TABLE audit_events (
    seq         INTEGER PRIMARY KEY,
    at          TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT,
    actor_label TEXT NOT NULL,
    action      TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    department  TEXT,
    before_json TEXT,
    after_json  TEXT,
    reason      TEXT,
    request_id  TEXT,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE
);
CREATE INDEX audit_events_by_object ON audit_events (object_type, object_id);
CREATE INDEX audit_events_by_department ON audit_events (department, seq);

CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;

-- The newest event's sequence number and hash: serialises appends and lets verification find a cut-off tail.
CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
