-- Bulk reruns in stages (issue 66): the stages a batch was approved with (its canary plan, JSON; NULL: all at
-- once), the stage it is sending, each member's stage and what the outside systems showed of its re-run steps
-- once asked again after the settle time; one row per stage started, with its verdict and who resumed after a
-- failed one.
ALTER TABLE rerun_batches ADD COLUMN stages_json TEXT;
ALTER TABLE rerun_batches ADD COLUMN stage INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rerun_batch_members ADD COLUMN stage INTEGER;
ALTER TABLE rerun_batch_members ADD COLUMN verified_json TEXT;
ALTER TABLE rerun_batch_members ADD COLUMN verified_at TEXT;

CREATE TABLE rerun_batch_stages (
    batch_id      TEXT NOT NULL REFERENCES rerun_batches(id),
    stage         INTEGER NOT NULL,
    size          INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    -- Every rerun of the stage reported: the settle time runs from here.
    reported_at   TEXT,
    verdict       TEXT CHECK (verdict IN ('passed', 'failed')),
    verdict_at    TEXT,
    failures_json TEXT,
    resumed_by    INTEGER REFERENCES users(id),
    resumed_at    TEXT,
    resume_reason TEXT,
    PRIMARY KEY (batch_id, stage)
);

-- A failed stage trips the stop switch itself: a pause set by the system names it instead of a person.
CREATE TABLE dispatch_pauses_new (
    id               INTEGER PRIMARY KEY,
    scope            TEXT NOT NULL CHECK (scope IN ('workflow', 'connector')),
    name             TEXT NOT NULL,
    paused_by        INTEGER REFERENCES users(id),
    paused_by_system TEXT,
    paused_at        TEXT NOT NULL,
    reason           TEXT NOT NULL,
    resumed_by       INTEGER REFERENCES users(id),
    resumed_at       TEXT,
    resume_reason    TEXT,
    set_for          TEXT,
    CHECK ((paused_by IS NULL) <> (paused_by_system IS NULL))
);
INSERT INTO dispatch_pauses_new (id, scope, name, paused_by, paused_at, reason, resumed_by, resumed_at, resume_reason,
                                 set_for)
    SELECT id, scope, name, paused_by, paused_at, reason, resumed_by, resumed_at, resume_reason, set_for
    FROM dispatch_pauses;
DROP TABLE dispatch_pauses;
ALTER TABLE dispatch_pauses_new RENAME TO dispatch_pauses;
CREATE UNIQUE INDEX dispatch_pauses_open ON dispatch_pauses (scope, name) WHERE resumed_at IS NULL;

-- A drill of a bulk rerun's stages stalls a group of practice operations for one fault: a row per operation.
CREATE TABLE drill_operations_new (
    drill_id   TEXT NOT NULL REFERENCES drills(id),
    fault      TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (drill_id, process_id)
);
INSERT INTO drill_operations_new (drill_id, fault, process_id) SELECT drill_id, fault, process_id FROM drill_operations;
DROP TABLE drill_operations;
ALTER TABLE drill_operations_new RENAME TO drill_operations;
CREATE INDEX drill_operations_by_process ON drill_operations (process_id);
