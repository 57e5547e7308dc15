-- Chat messages about rerun requests, written with the change they announce and sent after (an outbox).
CREATE TABLE chat_messages (
    id              INTEGER PRIMARY KEY,
    text            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX chat_messages_due ON chat_messages (status, next_attempt_at);
