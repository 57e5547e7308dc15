-- The head moves with every appended event inside the INSERT itself (one statement less per audit event).
CREATE TRIGGER audit_events_move_head AFTER INSERT ON audit_events
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
END;
