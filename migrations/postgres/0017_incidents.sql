-- Incident reports: what happened to which operations, what was done, and the prevention actions that follow;
-- and the known patterns people marked as already understood on a later operation (PostgreSQL).
CREATE TABLE incidents (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    department  TEXT NOT NULL,
    title       TEXT NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    impact      TEXT NOT NULL,
    cause       TEXT NOT NULL,
    response    TEXT NOT NULL,
    created_by  BIGINT NOT NULL REFERENCES users(id),
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
-- The list page: a department's incidents, newest first.
CREATE INDEX incidents_by_department ON incidents (department, occurred_at);

-- The linked operation's event and failure class are copied when linking, so that a later change of the
-- operation does not move the known-pattern match.
CREATE TABLE incident_operations (
    incident_id   BIGINT NOT NULL REFERENCES incidents(id),
    operation_id  BIGINT NOT NULL REFERENCES operations(id),
    event         TEXT,
    failure_class TEXT,
    linked_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, operation_id)
);
CREATE INDEX incident_operations_by_operation ON incident_operations (operation_id);
CREATE INDEX incident_operations_by_pattern ON incident_operations (event, failure_class);

-- done_at is set exactly while the action is done.
CREATE TABLE prevention_actions (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incident_id BIGINT NOT NULL REFERENCES incidents(id),
    description TEXT NOT NULL,
    owner_id    BIGINT NOT NULL REFERENCES users(id),
    due_on      DATE NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('open', 'done', 'dropped')),
    done_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    CHECK ((status = 'done') = (done_at IS NOT NULL))
);
CREATE INDEX prevention_actions_by_incident ON prevention_actions (incident_id);
-- Overdue actions (open, due before today) for the board.
CREATE INDEX prevention_actions_by_status_due ON prevention_actions (status, due_on);

CREATE TABLE pattern_acknowledgements (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id    BIGINT NOT NULL REFERENCES operations(id),
    incident_id     BIGINT NOT NULL REFERENCES incidents(id),
    evidence        TEXT NOT NULL,
    acknowledged_by BIGINT NOT NULL REFERENCES users(id),
    acknowledged_at TIMESTAMPTZ NOT NULL,
    UNIQUE (operation_id, incident_id)
);
