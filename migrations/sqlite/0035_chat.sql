-- Decisions in the company chat (issue 50). A chat user is a Rerun Gate user only through a link: one the person made
-- on their account page (Slack), or their company sign-in's Entra ID object (Teams); a link ends (never deleted: the
-- audit trail names it) when they end it or are disabled.
CREATE TABLE chat_links (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id),
    platform     TEXT NOT NULL CHECK (platform IN ('slack', 'teams')),
    team_id      TEXT NOT NULL,
    chat_user_id TEXT NOT NULL,
    linked_at    TEXT NOT NULL,
    ended_at     TEXT
);
CREATE UNIQUE INDEX chat_links_chat_user ON chat_links (platform, team_id, chat_user_id) WHERE ended_at IS NULL;
CREATE UNIQUE INDEX chat_links_user ON chat_links (user_id, platform) WHERE ended_at IS NULL;

-- Every message posted about a rerun request or a bulk rerun, kept true: `wanted` counts its changes, `shown` the
-- one the message shows; the sender posts (no `message_ts` yet) or updates it until they are equal.
CREATE TABLE chat_posts (
    id              INTEGER PRIMARY KEY,
    platform        TEXT NOT NULL CHECK (platform IN ('slack', 'teams')),
    request_id      TEXT REFERENCES rerun_requests(id),
    batch_id        TEXT REFERENCES rerun_batches(id),
    destination     TEXT NOT NULL,
    channel         TEXT,
    message_ts      TEXT,
    wanted          INTEGER NOT NULL DEFAULT 1,
    shown           INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    failed_at       TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    CHECK ((request_id IS NULL) <> (batch_id IS NULL))
);
CREATE INDEX chat_posts_by_request ON chat_posts (request_id);
CREATE INDEX chat_posts_by_batch ON chat_posts (batch_id);
CREATE INDEX chat_posts_due ON chat_posts (next_attempt_at) WHERE shown < wanted AND failed_at IS NULL;

-- Signed interactions already received (their signature), for as long as a signature is believed: a replayed or
-- retried press is answered and decides nothing.
CREATE TABLE chat_interactions (
    signature   TEXT PRIMARY KEY,
    received_at TEXT NOT NULL
);
