-- The board's counts per event, kept as the operations move (issue 22): counting them on every render cost
-- a walk over every stalled operation of the reader's departments (100,000 at 1,000,000 operations).
-- One row per status, department, workflow and event ('' when there is none). Writers only append changes
-- (+1/-1) to `board_count_changes`: updating a shared count in place would make transactions that move
-- several operations (a bulk rerun) wait on each other's count rows, in any order, and deadlock. The reader
-- adds the changes to the counts; `Db::fold_board_counts` folds them in every few seconds.
CREATE TABLE board_counts (
    status     TEXT NOT NULL,
    department TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    event      TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (status, department, workflow, event)
);

CREATE TABLE board_count_changes (
    id         BIGSERIAL PRIMARY KEY,
    status     TEXT NOT NULL,
    department TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    event      TEXT NOT NULL,
    n          BIGINT NOT NULL
);

INSERT INTO board_counts (status, department, workflow, event, n)
SELECT status, department, workflow, COALESCE(event, ''), COUNT(*) FROM operations
WHERE status IN ('stalled', 'on_hold') GROUP BY status, department, workflow, COALESCE(event, '');

CREATE FUNCTION board_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.status, OLD.department, OLD.workflow, OLD.event)
        IS NOT DISTINCT FROM (NEW.status, NEW.department, NEW.workflow, NEW.event) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status IN ('stalled', 'on_hold') THEN
        INSERT INTO board_count_changes (status, department, workflow, event, n)
        VALUES (OLD.status, OLD.department, OLD.workflow, COALESCE(OLD.event, ''), -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status IN ('stalled', 'on_hold') THEN
        INSERT INTO board_count_changes (status, department, workflow, event, n)
        VALUES (NEW.status, NEW.department, NEW.workflow, COALESCE(NEW.event, ''), 1);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER board_counts_kept AFTER INSERT OR DELETE OR UPDATE OF status, department, workflow, event ON operations
FOR EACH ROW EXECUTE FUNCTION board_counts_change();
