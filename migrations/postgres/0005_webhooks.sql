-- Inbound webhooks: stored first (receipts, raw), processed after (events), in two separate records.

-- One row per (connector, webhook-id): the unique key is the deduplication; the raw body is purged after the
-- configured number of days, the row (and so the deduplication) stays.
CREATE TABLE webhook_receipts (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    connector    TEXT NOT NULL,
    webhook_id   TEXT NOT NULL,
    sent_at      TIMESTAMPTZ NOT NULL,
    body         TEXT,
    received_at  TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    UNIQUE (connector, webhook_id)
);
CREATE INDEX webhook_receipts_unprocessed ON webhook_receipts (processed_at, id);
CREATE INDEX webhook_receipts_by_age ON webhook_receipts (received_at);

-- What processing a receipt did: applied to a step, ignored as older than what the step has, or unmatched.
CREATE TABLE webhook_events (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    receipt_id   BIGINT NOT NULL UNIQUE REFERENCES webhook_receipts(id),
    step_id      BIGINT REFERENCES steps(id),
    version      BIGINT,
    outcome      TEXT NOT NULL CHECK (outcome IN ('applied', 'stale', 'unmatched', 'unreadable')),
    detail       TEXT NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL
);

-- The newest webhook version applied to the step: an older one never overwrites it.
ALTER TABLE steps ADD COLUMN webhook_version BIGINT;
CREATE INDEX steps_by_result_id ON steps (result_id);
