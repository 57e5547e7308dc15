-- A pause belongs to the departments whose owner set it (a JSON array of department codes; empty when an admin
-- who owns none of them set it): only their owners, or an admin, resume it. Pauses set before this column
-- existed (NULL) belong to every department they concern, as they did then.
ALTER TABLE dispatch_pauses ADD COLUMN set_for TEXT;
