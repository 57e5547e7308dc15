-- AI generation attempts of a step: background status, cancel requested versus confirmed, usage and cost.
-- One row per generation (result ID); at most one adopted generation per step.
CREATE TABLE ai_attempts (
    id                  INTEGER PRIMARY KEY,
    step_id             INTEGER NOT NULL REFERENCES steps(id),
    result_id           TEXT NOT NULL,
    background_status   TEXT,
    cancel_requested_at TEXT,
    cancel_confirmed_at TEXT,
    input_tokens        INTEGER,
    output_tokens       INTEGER,
    cost_micro_yen      INTEGER,
    adopted             INTEGER NOT NULL DEFAULT 0,
    first_seen_at       TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (step_id, result_id)
);
CREATE UNIQUE INDEX ai_attempts_one_adopted ON ai_attempts (step_id) WHERE adopted;
