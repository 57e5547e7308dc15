-- An admin's emergency disable is a hold of its own: the directory's routine updates (active: true, or no
-- active at all) do not lift it; only an admin does.
ALTER TABLE users ADD COLUMN held_at TIMESTAMPTZ;
