-- The head moves with every appended event inside the INSERT itself (one statement less per audit event).
CREATE FUNCTION audit_events_move_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER audit_events_move_head AFTER INSERT ON audit_events
FOR EACH ROW EXECUTE FUNCTION audit_events_move_head();
