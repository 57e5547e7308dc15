-- The company directory (SCIM 2.0, issue 65): a directory's token is an API client of its own purpose; people and
-- groups it provisions; approvals that stop counting once their giver's access ended.
ALTER TABLE api_clients ADD COLUMN purpose TEXT NOT NULL DEFAULT 'ingestion' CHECK (purpose IN ('ingestion', 'directory'));

-- A person the directory provisioned: the ID it knows them by here (a UUID), its own ID for them (`externalId`),
-- the resource as it last sent it (the attributes kept for it: name, the enterprise extension), when it last
-- changed them, and when it deleted them (the row stays: their past actions keep their name in the trail).
ALTER TABLE users ADD COLUMN scim_id TEXT;
ALTER TABLE users ADD COLUMN scim_external_id TEXT;
ALTER TABLE users ADD COLUMN scim_resource_json TEXT;
ALTER TABLE users ADD COLUMN provisioned_at TEXT;
ALTER TABLE users ADD COLUMN scim_deleted_at TEXT;
CREATE UNIQUE INDEX users_by_scim_id ON users (scim_id);
CREATE INDEX users_by_scim_external_id ON users (scim_external_id);

CREATE TABLE scim_groups (
    id           INTEGER PRIMARY KEY,
    scim_id      TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    external_id  TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

CREATE TABLE scim_group_members (
    group_id INTEGER NOT NULL REFERENCES scim_groups(id),
    user_id  INTEGER NOT NULL REFERENCES users(id),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_by_user ON scim_group_members (user_id);

-- An approval whose giver can no longer decide (removed from the directory, disabled, no longer a manager of the
-- department) while its request still waits: kept, shown, not counted.
ALTER TABLE approvals ADD COLUMN voided_at TEXT;
ALTER TABLE approvals ADD COLUMN voided_why TEXT;
ALTER TABLE rerun_batch_decisions ADD COLUMN voided_at TEXT;
ALTER TABLE rerun_batch_decisions ADD COLUMN voided_why TEXT;
