-- The audit page filters by actor, action and time and pages by sequence number; and it shows whether the
-- chain is intact, checked from where the last check stopped (not from the start on every view).
CREATE INDEX audit_events_by_actor ON audit_events (actor_label, seq);
CREATE INDEX audit_events_by_action ON audit_events (action, seq);
CREATE INDEX audit_events_by_time ON audit_events (at);
CREATE TABLE audit_checkpoint (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    seq        BIGINT NOT NULL,
    hash       TEXT NOT NULL,
    checked_at TIMESTAMPTZ NOT NULL
);
