-- The board's counts per event, kept as the operations move (issue 22): counting them on every render cost
-- a walk over every stalled operation of the reader's departments (100,000 at 1,000,000 operations).
-- One row per status, department, workflow and event ('' when there is none); SQLite has one writer, so the
-- triggers update the count itself. `board_count_changes` is PostgreSQL's (see its migration) and stays empty.
CREATE TABLE board_counts (
    status     TEXT NOT NULL,
    department TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    event      TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (status, department, workflow, event)
) WITHOUT ROWID;

CREATE TABLE board_count_changes (
    id         INTEGER PRIMARY KEY,
    status     TEXT NOT NULL,
    department TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    event      TEXT NOT NULL,
    n          INTEGER NOT NULL
);

INSERT INTO board_counts (status, department, workflow, event, n)
SELECT status, department, workflow, COALESCE(event, ''), COUNT(*) FROM operations
WHERE status IN ('stalled', 'on_hold') GROUP BY status, department, workflow, COALESCE(event, '');

CREATE TRIGGER board_counts_on_insert AFTER INSERT ON operations WHEN NEW.status IN ('stalled', 'on_hold')
BEGIN
    INSERT OR IGNORE INTO board_counts VALUES (NEW.status, NEW.department, NEW.workflow, COALESCE(NEW.event, ''), 0);
    UPDATE board_counts SET n = n + 1
    WHERE status = NEW.status AND department = NEW.department AND workflow = NEW.workflow AND event = COALESCE(NEW.event, '');
END;

CREATE TRIGGER board_counts_on_update AFTER UPDATE OF status, department, workflow, event ON operations
WHEN (OLD.status IN ('stalled', 'on_hold') OR NEW.status IN ('stalled', 'on_hold'))
 AND NOT (OLD.status IS NEW.status AND OLD.department IS NEW.department AND OLD.workflow IS NEW.workflow AND OLD.event IS NEW.event)
BEGIN
    UPDATE board_counts SET n = n - 1
    WHERE OLD.status IN ('stalled', 'on_hold')
      AND status = OLD.status AND department = OLD.department AND workflow = OLD.workflow AND event = COALESCE(OLD.event, '');
    INSERT OR IGNORE INTO board_counts SELECT NEW.status, NEW.department, NEW.workflow, COALESCE(NEW.event, ''), 0
    WHERE NEW.status IN ('stalled', 'on_hold');
    UPDATE board_counts SET n = n + 1
    WHERE NEW.status IN ('stalled', 'on_hold')
      AND status = NEW.status AND department = NEW.department AND workflow = NEW.workflow AND event = COALESCE(NEW.event, '');
END;

CREATE TRIGGER board_counts_on_delete AFTER DELETE ON operations WHEN OLD.status IN ('stalled', 'on_hold')
BEGIN
    UPDATE board_counts SET n = n - 1
    WHERE status = OLD.status AND department = OLD.department AND workflow = OLD.workflow AND event = COALESCE(OLD.event, '');
END;
