-- Drills: faults injected into the demo outside systems for a period, only on a database marked as a demo or a
-- drill environment (never on a production one). Each fault's practice operation is marked with its drill,
-- everywhere it appears, and is left out of the real indicators.
CREATE TABLE database_marks (
    mark      TEXT PRIMARY KEY CHECK (mark IN ('demo', 'drill')),
    marked_at TIMESTAMPTZ NOT NULL
);
-- A database the demo was loaded into is a demo database.
INSERT INTO database_marks (mark, marked_at)
    SELECT 'demo', CURRENT_TIMESTAMP WHERE EXISTS (SELECT 1 FROM api_clients WHERE name = 'demo-integration');

CREATE TABLE drills (
    id          TEXT PRIMARY KEY,
    started_by  BIGINT NOT NULL REFERENCES users(id),
    started_at  TIMESTAMPTZ NOT NULL,
    ends_at     TIMESTAMPTZ NOT NULL,
    faults_json TEXT NOT NULL,
    note        TEXT NOT NULL,
    ended_at    TIMESTAMPTZ
);

-- Each fault's practice operation.
CREATE TABLE drill_operations (
    drill_id   TEXT NOT NULL REFERENCES drills(id),
    fault      TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (drill_id, fault)
);

ALTER TABLE operations ADD COLUMN drill_id TEXT REFERENCES drills(id);
CREATE INDEX operations_in_drills ON operations (drill_id) WHERE drill_id IS NOT NULL;
