-- E-mail notifications: users may have an address, and the chat outbox becomes the outbox of every outbound
-- message (chat or mail), written with the change it announces and sent after the commit.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE chat_messages RENAME TO outbound_messages;
ALTER TABLE outbound_messages ADD COLUMN channel TEXT NOT NULL DEFAULT 'chat' CHECK (channel IN ('chat', 'mail'));
ALTER TABLE outbound_messages ADD COLUMN recipient TEXT;
ALTER TABLE outbound_messages ADD COLUMN subject TEXT;
DROP INDEX chat_messages_due;
CREATE INDEX outbound_messages_due ON outbound_messages (status, next_attempt_at);
