-- Holds: staff stop work on an operation (e.g. the result is unknown and the provider was asked) and let it go
-- again, each with a recorded reason. At most one open hold per operation.
CREATE TABLE holds (
    id             INTEGER PRIMARY KEY,
    operation_id   INTEGER NOT NULL REFERENCES operations(id),
    placed_by      INTEGER NOT NULL REFERENCES users(id),
    placed_at      TEXT NOT NULL,
    reason         TEXT NOT NULL,
    released_by    INTEGER REFERENCES users(id),
    released_at    TEXT,
    release_reason TEXT
);
CREATE UNIQUE INDEX holds_one_open ON holds (operation_id) WHERE released_at IS NULL;
