-- Rerun requests and their checklists. The request ID is also the webhook-id and Idempotency-Key of its
-- dispatch. At most one open request per operation.
CREATE TABLE rerun_requests (
    id               TEXT PRIMARY KEY,
    operation_id     INTEGER NOT NULL REFERENCES operations(id),
    requested_by     INTEGER NOT NULL REFERENCES users(id),
    reason           TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('draft', 'pending_approval', 'approved', 'rejected', 'expired',
                         'cancelled', 'dispatched', 'succeeded', 'failed')),
    plan_json        TEXT NOT NULL,
    workflow_version TEXT NOT NULL,
    verdicts_hash    TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    submitted_at     TEXT
);
CREATE UNIQUE INDEX rerun_requests_one_open ON rerun_requests (operation_id)
    WHERE status IN ('draft', 'pending_approval', 'approved', 'dispatched');

-- The five checks of a request: what the system found, and who confirmed it with what comment.
CREATE TABLE checklist_items (
    request_id   TEXT NOT NULL REFERENCES rerun_requests(id),
    number       INTEGER NOT NULL CHECK (number BETWEEN 1 AND 5),
    holds        INTEGER NOT NULL,
    evidence     TEXT NOT NULL,
    confirmed_by INTEGER REFERENCES users(id),
    confirmed_at TEXT,
    comment      TEXT,
    cause_class  TEXT,
    cause_text   TEXT,
    PRIMARY KEY (request_id, number)
);
