-- Disabling a user ends every session of theirs for good: sessions are bound to this number (with the password
-- hash), and disabling moves it on, so re-enabling the user does not revive an old cookie.
ALTER TABLE users ADD COLUMN session_generation BIGINT NOT NULL DEFAULT 0;
