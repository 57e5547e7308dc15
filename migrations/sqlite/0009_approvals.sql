-- Approvals by the department's owners, and the dispatch outbox row that the final approval creates in the
-- same transaction. An approval is valid until expires_at (set when approval is requested).
ALTER TABLE rerun_requests ADD COLUMN expires_at TEXT;
ALTER TABLE rerun_requests ADD COLUMN decided_at TEXT;

CREATE TABLE approvals (
    id          INTEGER PRIMARY KEY,
    request_id  TEXT NOT NULL REFERENCES rerun_requests(id),
    approver_id INTEGER NOT NULL REFERENCES users(id),
    decision    TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    comment     TEXT,
    decided_at  TEXT NOT NULL,
    UNIQUE (request_id, approver_id)
);

-- The transactional outbox: one row per approved request (its ID is the rerun ID, the webhook-id).
CREATE TABLE dispatches (
    request_id      TEXT PRIMARY KEY REFERENCES rerun_requests(id),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'unknown')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX dispatches_due ON dispatches (status, next_attempt_at);
