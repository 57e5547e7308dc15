-- Inbound webhooks: stored first (receipts, raw), processed after (events), in two separate records.

-- One row per (connector, webhook-id): the unique key is the deduplication; the raw body is purged after the
-- configured number of days, the row (and so the deduplication) stays.
CREATE TABLE webhook_receipts (
    id           INTEGER PRIMARY KEY,
    connector    TEXT NOT NULL,
    webhook_id   TEXT NOT NULL,
    sent_at      TEXT NOT NULL,
    body         TEXT,
    received_at  TEXT NOT NULL,
    processed_at TEXT,
    UNIQUE (connector, webhook_id)
);
CREATE INDEX webhook_receipts_unprocessed ON webhook_receipts (processed_at, id);
CREATE INDEX webhook_receipts_by_age ON webhook_receipts (received_at);

-- What processing a receipt did: applied to a step, ignored as older than what the step has, or unmatched.
CREATE TABLE webhook_events (
    id           INTEGER PRIMARY KEY,
    receipt_id   INTEGER NOT NULL UNIQUE REFERENCES webhook_receipts(id),
    step_id      INTEGER REFERENCES steps(id),
    version      INTEGER,
    outcome      TEXT NOT NULL CHECK (outcome IN ('applied', 'stale', 'unmatched', 'unreadable')),
    detail       TEXT NOT NULL,
    processed_at TEXT NOT NULL
);

-- The newest webhook version applied to the step: an older one never overwrites it.
ALTER TABLE steps ADD COLUMN webhook_version INTEGER;
CREATE INDEX steps_by_result_id ON steps (result_id);
