-- Bulk reruns in stages (issue 66): the stages a batch was approved with (its canary plan, JSON; NULL: all at
-- once), the stage it is sending, each member's stage and what the outside systems showed of its re-run steps
-- once asked again after the settle time; one row per stage started, with its verdict and who resumed after a
-- failed one.
ALTER TABLE rerun_batches ADD COLUMN stages_json TEXT;
ALTER TABLE rerun_batches ADD COLUMN stage BIGINT NOT NULL DEFAULT 0;
ALTER TABLE rerun_batch_members ADD COLUMN stage BIGINT;
ALTER TABLE rerun_batch_members ADD COLUMN verified_json TEXT;
ALTER TABLE rerun_batch_members ADD COLUMN verified_at TIMESTAMPTZ;

CREATE TABLE rerun_batch_stages (
    batch_id      TEXT NOT NULL REFERENCES rerun_batches(id),
    stage         BIGINT NOT NULL,
    size          BIGINT NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    -- Every rerun of the stage reported: the settle time runs from here.
    reported_at   TIMESTAMPTZ,
    verdict       TEXT CHECK (verdict IN ('passed', 'failed')),
    verdict_at    TIMESTAMPTZ,
    failures_json TEXT,
    resumed_by    BIGINT REFERENCES users(id),
    resumed_at    TIMESTAMPTZ,
    resume_reason TEXT,
    PRIMARY KEY (batch_id, stage)
);

-- A failed stage trips the stop switch itself: a pause set by the system names it instead of a person.
ALTER TABLE dispatch_pauses ALTER COLUMN paused_by DROP NOT NULL;
ALTER TABLE dispatch_pauses ADD COLUMN paused_by_system TEXT;
ALTER TABLE dispatch_pauses ADD CONSTRAINT dispatch_pauses_one_pauser CHECK ((paused_by IS NULL) <> (paused_by_system IS NULL));

-- A drill of a bulk rerun's stages stalls a group of practice operations for one fault: a row per operation.
ALTER TABLE drill_operations DROP CONSTRAINT drill_operations_pkey;
ALTER TABLE drill_operations ADD PRIMARY KEY (drill_id, process_id);
CREATE INDEX drill_operations_by_process ON drill_operations (process_id);
