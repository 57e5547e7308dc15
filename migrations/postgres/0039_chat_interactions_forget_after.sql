-- How long each received interaction is remembered (issue 64): a Slack press while its signature is believed, a
-- Teams activity while its token is (its ID is accepted once). Rows from before keep the old rule (ten minutes).
ALTER TABLE chat_interactions ADD COLUMN forget_after TIMESTAMPTZ;
