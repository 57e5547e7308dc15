-- AI generation attempts of a step: background status, cancel requested versus confirmed, usage and cost.
-- One row per generation (result ID); at most one adopted generation per step.
CREATE TABLE ai_attempts (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    step_id             BIGINT NOT NULL REFERENCES steps(id),
    result_id           TEXT NOT NULL,
    background_status   TEXT,
    cancel_requested_at TIMESTAMPTZ,
    cancel_confirmed_at TIMESTAMPTZ,
    input_tokens        BIGINT,
    output_tokens       BIGINT,
    cost_micro_yen      BIGINT,
    adopted             BOOLEAN NOT NULL DEFAULT FALSE,
    first_seen_at       TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (step_id, result_id)
);
CREATE UNIQUE INDEX ai_attempts_one_adopted ON ai_attempts (step_id) WHERE adopted;
