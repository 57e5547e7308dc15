-- Risk indicators, threshold crossings and review sign-offs (SQLite).

-- Refused registrations the indicators count (they change nothing else, so no audit event records them).
CREATE TABLE api_refusals (
    id            INTEGER PRIMARY KEY,
    api_client_id INTEGER NOT NULL REFERENCES api_clients(id),
    department    TEXT,
    kind          TEXT NOT NULL CHECK (kind IN ('missing_process_id', 'idempotency_key_mismatch')),
    at            TEXT NOT NULL
);
CREATE INDEX api_refusals_by_time ON api_refusals (at);

-- How many records the outside system held for the key: more than one is a double send.
ALTER TABLE reconciliations ADD COLUMN records INTEGER NOT NULL DEFAULT 0;
UPDATE reconciliations SET records = COALESCE(json_extract(evidence_json, '$.records'), 0);
CREATE INDEX reconciliations_by_time ON reconciliations (checked_at);
CREATE INDEX rerun_requests_by_decision ON rerun_requests (decided_at);

-- One row per crossing; at most one open (not cleared) per department, indicator and period.
CREATE TABLE threshold_crossings (
    id           INTEGER PRIMARY KEY,
    department   TEXT NOT NULL,
    indicator    TEXT NOT NULL,
    period_kind  TEXT NOT NULL CHECK (period_kind IN ('week', 'month')),
    period_start TEXT NOT NULL,
    value        REAL NOT NULL,
    threshold    REAL NOT NULL,
    crossed_at   TEXT NOT NULL,
    cleared_at   TEXT
);
CREATE UNIQUE INDEX threshold_crossings_one_open
    ON threshold_crossings (department, indicator, period_kind, period_start) WHERE cleared_at IS NULL;
CREATE INDEX threshold_crossings_by_time ON threshold_crossings (department, crossed_at);

CREATE TABLE review_signoffs (
    id           INTEGER PRIMARY KEY,
    department   TEXT NOT NULL,
    period_kind  TEXT NOT NULL CHECK (period_kind IN ('week', 'month')),
    period_start TEXT NOT NULL,
    signed_by    INTEGER NOT NULL REFERENCES users(id),
    signed_at    TEXT NOT NULL,
    comment      TEXT NOT NULL,
    UNIQUE (department, period_kind, period_start)
);
