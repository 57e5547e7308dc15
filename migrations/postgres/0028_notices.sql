-- Notifications, e-mails and chat messages keep what they tell as facts (a notice, JSON) and are put into words
-- for each reader when read or sent: their language and time zone, the chat's department's language (issue 24).
-- Rows from before keep the text they were written with. An e-mail's or chat message's text is written when it
-- is sent (what went out, until the retention purge).
ALTER TABLE notifications ADD COLUMN notice TEXT;
ALTER TABLE outbound_messages ADD COLUMN notice TEXT;
ALTER TABLE outbound_messages ADD COLUMN user_id BIGINT REFERENCES users(id);
ALTER TABLE outbound_messages ADD COLUMN department TEXT;
ALTER TABLE outbound_messages ADD COLUMN link TEXT;
