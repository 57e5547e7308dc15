-- The demo integration's rerun endpoint remembers each webhook-id it acted on: a repeat does nothing.
CREATE TABLE demo_rerun_receipts (
    webhook_id  TEXT PRIMARY KEY,
    received_at TEXT NOT NULL
);
