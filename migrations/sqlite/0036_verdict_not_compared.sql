-- A record found done whose content nothing compared with the step's is a verdict of its own (issue 62):
-- "executed_not_compared". SQLite cannot change a CHECK constraint in place: the table is rebuilt, its rows,
-- their IDs and its indexes kept (nothing references it).
CREATE TABLE reconciliations_rebuilt (
    id            INTEGER PRIMARY KEY,
    step_id       INTEGER NOT NULL REFERENCES steps(id),
    connector     TEXT NOT NULL,
    verdict       TEXT NOT NULL CHECK (verdict IN ('executed', 'executed_not_compared', 'executed_mismatch',
                  'not_executed', 'in_progress', 'unknown', 'lookup_failed')),
    external_id   TEXT,
    evidence_json TEXT NOT NULL,
    asked_by      TEXT NOT NULL,
    checked_at    TEXT NOT NULL,
    records       INTEGER NOT NULL DEFAULT 0,
    recorded_by   INTEGER REFERENCES users(id)
);
INSERT INTO reconciliations_rebuilt
    (id, step_id, connector, verdict, external_id, evidence_json, asked_by, checked_at, records, recorded_by)
SELECT id, step_id, connector, verdict, external_id, evidence_json, asked_by, checked_at, records, recorded_by
FROM reconciliations;
DROP TABLE reconciliations;
ALTER TABLE reconciliations_rebuilt RENAME TO reconciliations;
CREATE INDEX reconciliations_by_step ON reconciliations (step_id, id);
CREATE INDEX reconciliations_by_time ON reconciliations (checked_at);
