-- Bulk reruns: one request, one checklist and one approval for many operations with the same cause. The
-- selection is frozen as members when the batch is created; each member that makes it into the request has an
-- ordinary rerun request (batch_id set), so the dispatcher, the evidence bundle and the audit trail treat it
-- as any other. Members left out keep their reasons.
CREATE TABLE rerun_batches (
    id              TEXT PRIMARY KEY,
    department      TEXT NOT NULL,
    created_by      INTEGER NOT NULL REFERENCES users(id),
    reason          TEXT NOT NULL,
    selection_json  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('previewing', 'preview', 'draft', 'pending_approval', 'dispatching',
                        'paused', 'completed', 'cancelled', 'rejected', 'expired')),
    rate_per_minute INTEGER NOT NULL,
    -- While previewing: the look-ups' claim, so that another instance takes over after a crash.
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    submitted_at    TEXT,
    decided_at      TEXT,
    expires_at      TEXT
);
CREATE INDEX rerun_batches_by_department ON rerun_batches (department, created_at);

CREATE TABLE rerun_batch_members (
    batch_id     TEXT NOT NULL REFERENCES rerun_batches(id),
    position     INTEGER NOT NULL,
    operation_id INTEGER NOT NULL REFERENCES operations(id),
    state        TEXT NOT NULL CHECK (state IN ('waiting', 'eligible', 'done', 'blocked', 'requested', 'dropped')),
    plan_json    TEXT,
    reasons_json TEXT,
    request_id   TEXT REFERENCES rerun_requests(id),
    looked_up_at TEXT,
    PRIMARY KEY (batch_id, position),
    UNIQUE (batch_id, operation_id)
);

-- The batch's five checks, confirmed once for every member (copied into each member's checklist).
CREATE TABLE rerun_batch_checks (
    batch_id     TEXT NOT NULL REFERENCES rerun_batches(id),
    number       INTEGER NOT NULL CHECK (number BETWEEN 1 AND 5),
    confirmed_by INTEGER NOT NULL REFERENCES users(id),
    confirmed_at TEXT NOT NULL,
    comment      TEXT NOT NULL,
    cause_class  TEXT,
    cause_text   TEXT,
    PRIMARY KEY (batch_id, number)
);

CREATE TABLE rerun_batch_decisions (
    batch_id    TEXT NOT NULL REFERENCES rerun_batches(id),
    approver_id INTEGER NOT NULL REFERENCES users(id),
    decision    TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    comment     TEXT,
    decided_at  TEXT NOT NULL,
    PRIMARY KEY (batch_id, approver_id)
);

ALTER TABLE rerun_requests ADD COLUMN batch_id TEXT REFERENCES rerun_batches(id);
CREATE INDEX rerun_requests_by_batch ON rerun_requests (batch_id);
