-- A bulk rerun whose reruns have all gone out is "sent", and "completed" only once every member has ended
-- (issue 63). SQLite cannot change a CHECK constraint in place, and other tables refer to this one: the table is
-- rebuilt by SQLite's own procedure, its rows and indexes kept (the migrations run with foreign keys off, and
-- `db::sqlite::migrate` checks every reference afterwards).
CREATE TABLE rerun_batches_rebuilt (
    id              TEXT PRIMARY KEY,
    department      TEXT NOT NULL,
    created_by      INTEGER NOT NULL REFERENCES users(id),
    reason          TEXT NOT NULL,
    selection_json  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('previewing', 'preview', 'draft', 'pending_approval', 'dispatching',
                        'paused', 'sent', 'completed', 'cancelled', 'rejected', 'expired')),
    rate_per_minute INTEGER NOT NULL,
    -- While previewing: the look-ups' claim, so that another instance takes over after a crash.
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    submitted_at    TEXT,
    decided_at      TEXT,
    expires_at      TEXT
);
INSERT INTO rerun_batches_rebuilt (id, department, created_by, reason, selection_json, status, rate_per_minute,
    lease_until, created_at, updated_at, submitted_at, decided_at, expires_at)
SELECT id, department, created_by, reason, selection_json, status, rate_per_minute,
    lease_until, created_at, updated_at, submitted_at, decided_at, expires_at
FROM rerun_batches;
DROP TABLE rerun_batches;
ALTER TABLE rerun_batches_rebuilt RENAME TO rerun_batches;
CREATE INDEX rerun_batches_by_department ON rerun_batches (department, created_at);
