-- API clients, idempotency records, operations and steps (PostgreSQL).
CREATE TABLE api_clients (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ
);

CREATE TABLE api_client_departments (
    api_client_id BIGINT NOT NULL REFERENCES api_clients(id),
    department_id BIGINT NOT NULL REFERENCES departments(id),
    PRIMARY KEY (api_client_id, department_id)
);

-- One row per (client, Idempotency-Key): the request's fingerprint and, once done, the answer to replay.
CREATE TABLE idempotency_records (
    api_client_id   BIGINT NOT NULL REFERENCES api_clients(id),
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    response_status BIGINT,
    response_body   TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (api_client_id, idempotency_key)
);
CREATE INDEX idempotency_records_by_expiry ON idempotency_records (expires_at);

CREATE TABLE operations (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    process_id            TEXT NOT NULL UNIQUE,
    workflow              TEXT NOT NULL,
    workflow_version      TEXT NOT NULL,
    department            TEXT NOT NULL,
    business_key          TEXT,
    content_json          TEXT,
    content_fingerprint   TEXT,
    status                TEXT NOT NULL,
    event                 TEXT,
    failure_class         TEXT,
    possible_duplicate_of TEXT,
    registered_by         BIGINT REFERENCES api_clients(id),
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX operations_by_business_key ON operations (department, business_key);
CREATE INDEX operations_by_status ON operations (status, department, updated_at, id);

CREATE TABLE steps (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id        BIGINT NOT NULL REFERENCES operations(id),
    position            BIGINT NOT NULL,
    name                TEXT NOT NULL,
    idempotency_key     TEXT NOT NULL,
    content_fingerprint TEXT,
    state               TEXT NOT NULL,
    last_seq            BIGINT,
    result_id           TEXT,
    error_class         TEXT,
    error_message       TEXT,
    attempts            BIGINT NOT NULL DEFAULT 0,
    started_at          TIMESTAMPTZ,
    last_heartbeat_at   TIMESTAMPTZ,
    completed_at        TIMESTAMPTZ,
    updated_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (operation_id, name),
    UNIQUE (operation_id, position)
);
CREATE INDEX steps_by_idempotency_key ON steps (idempotency_key);
