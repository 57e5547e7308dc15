-- Who holds a dispatch's lease (one random token per claim): the write after a send checks it, so a dispatcher
-- whose lease passed to another records nothing.
ALTER TABLE dispatches ADD COLUMN lease_owner TEXT;
