-- The stop switch: dispatches paused per workflow or per outside system (connector). While a pause is open,
-- approved reruns it covers wait in the outbox; nothing is lost and nothing is sent. At most one open pause per
-- workflow or connector; a closed one stays as the record of who stopped and resumed, when and why.
CREATE TABLE dispatch_pauses (
    id            INTEGER PRIMARY KEY,
    scope         TEXT NOT NULL CHECK (scope IN ('workflow', 'connector')),
    name          TEXT NOT NULL,
    paused_by     INTEGER NOT NULL REFERENCES users(id),
    paused_at     TEXT NOT NULL,
    reason        TEXT NOT NULL,
    resumed_by    INTEGER REFERENCES users(id),
    resumed_at    TEXT,
    resume_reason TEXT
);
CREATE UNIQUE INDEX dispatch_pauses_open ON dispatch_pauses (scope, name) WHERE resumed_at IS NULL;
