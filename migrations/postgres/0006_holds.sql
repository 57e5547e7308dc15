-- Holds: staff stop work on an operation (e.g. the result is unknown and the provider was asked) and let it go
-- again, each with a recorded reason. At most one open hold per operation.
CREATE TABLE holds (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id   BIGINT NOT NULL REFERENCES operations(id),
    placed_by      BIGINT NOT NULL REFERENCES users(id),
    placed_at      TIMESTAMPTZ NOT NULL,
    reason         TEXT NOT NULL,
    released_by    BIGINT REFERENCES users(id),
    released_at    TIMESTAMPTZ,
    release_reason TEXT
);
CREATE UNIQUE INDEX holds_one_open ON holds (operation_id) WHERE released_at IS NULL;
