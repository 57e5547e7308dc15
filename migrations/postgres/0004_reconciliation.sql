-- Reconciliation results and the demo outside systems' execution log (PostgreSQL).

-- The step's content as registered: reconciliation compares it field by field with the outside record.
ALTER TABLE steps ADD COLUMN content_json TEXT;
-- The verdict of the step's latest reconciliation, kept on the step so that every step view has it.
ALTER TABLE steps ADD COLUMN latest_verdict TEXT;

-- One row per look-up of one step: append-only, the latest row is the step's current verdict.
CREATE TABLE reconciliations (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    step_id       BIGINT NOT NULL REFERENCES steps(id),
    connector     TEXT NOT NULL,
    verdict       TEXT NOT NULL CHECK (verdict IN
                  ('executed', 'executed_mismatch', 'not_executed', 'in_progress', 'unknown', 'lookup_failed')),
    external_id   TEXT,
    evidence_json TEXT NOT NULL,
    asked_by      TEXT NOT NULL,
    checked_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX reconciliations_by_step ON reconciliations (step_id, id);

-- The demo outside systems (order API, AI summary, mail, billing): what each did, once per idempotency key.
CREATE TABLE demo_executions (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    service         TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    external_id     TEXT NOT NULL UNIQUE,
    content_json    TEXT NOT NULL,
    process_id      TEXT,
    replays         BIGINT NOT NULL DEFAULT 0,
    conflicts       BIGINT NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL,
    done_at         TIMESTAMPTZ NOT NULL,
    UNIQUE (service, idempotency_key)
);
