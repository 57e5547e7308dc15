-- A sign-in name as people mean it (domain::identity::sign_in_key: NFKC, case folded, no format characters), kept
-- beside the name so that a name is unique in that form and found by it. Rows from before are filled at start
-- (SQL cannot compute NFKC): see db::users::fill_username_keys.
ALTER TABLE users ADD COLUMN username_key TEXT;
CREATE INDEX users_by_name_as_meant ON users (username_key);
