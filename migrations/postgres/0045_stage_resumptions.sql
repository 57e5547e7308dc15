-- Resuming a bulk rerun after a failed stage takes the batch's own quorum of fresh decisions (as many managers as
-- its approval did, none of its makers): each decision is kept here until enough are given.
CREATE TABLE rerun_batch_stage_resumptions (
    batch_id   TEXT NOT NULL REFERENCES rerun_batches(id),
    stage      BIGINT NOT NULL,
    user_id    BIGINT NOT NULL REFERENCES users(id),
    reason     TEXT NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (batch_id, stage, user_id)
);
