-- Maker ≠ checker (QUALITY 11): who prepared a rerun never decides on it. A rerun request's makers started it,
-- confirmed one of its checks, submitted it or recorded a manual verdict its plan rests on; a bulk rerun's
-- created (which starts its preview), requested, confirmed or submitted it (its members' requests have their own).
CREATE TABLE rerun_request_makers (
    request_id TEXT NOT NULL REFERENCES rerun_requests(id),
    user_id    INTEGER NOT NULL REFERENCES users(id),
    part       TEXT NOT NULL CHECK (part IN ('started', 'confirmed_check', 'submitted', 'recorded_verdict')),
    at         TEXT NOT NULL,
    PRIMARY KEY (request_id, user_id, part)
);
CREATE TABLE rerun_batch_makers (
    batch_id TEXT NOT NULL REFERENCES rerun_batches(id),
    user_id  INTEGER NOT NULL REFERENCES users(id),
    part     TEXT NOT NULL CHECK (part IN ('created', 'requested', 'confirmed_check', 'submitted')),
    at       TEXT NOT NULL,
    PRIMARY KEY (batch_id, user_id, part)
);

-- Who recorded a manual verdict (its `asked_by` names them as `manual:<username>`).
ALTER TABLE reconciliations ADD COLUMN recorded_by INTEGER REFERENCES users(id);
UPDATE reconciliations SET recorded_by = (SELECT u.id FROM users u WHERE 'manual:' || u.username = reconciliations.asked_by)
    WHERE connector = 'manual';

-- What the data written so far says: the requests' and bulk reruns' starters, the confirmed checks, and every
-- other part the audit trail names (submissions, bulk requests), so that a request waiting for approval
-- at the upgrade keeps its makers from deciding on it.
INSERT OR IGNORE INTO rerun_request_makers (request_id, user_id, part, at)
    SELECT id, requested_by, 'started', created_at FROM rerun_requests;
INSERT OR IGNORE INTO rerun_request_makers (request_id, user_id, part, at)
    SELECT request_id, confirmed_by, 'confirmed_check', confirmed_at FROM checklist_items WHERE confirmed_by IS NOT NULL;
INSERT OR IGNORE INTO rerun_request_makers (request_id, user_id, part, at)
    SELECT json_extract(e.after_json, '$.rerun_id'), CAST(e.actor_id AS INTEGER), 'submitted', e.at
    FROM audit_events e
    WHERE e.action = 'rerun_request.submitted' AND e.actor_kind = 'user'
      AND json_extract(e.after_json, '$.rerun_id') IN (SELECT id FROM rerun_requests)
      AND CAST(e.actor_id AS INTEGER) IN (SELECT id FROM users);
INSERT OR IGNORE INTO rerun_batch_makers (batch_id, user_id, part, at)
    SELECT id, created_by, 'created', created_at FROM rerun_batches;
INSERT OR IGNORE INTO rerun_batch_makers (batch_id, user_id, part, at)
    SELECT batch_id, confirmed_by, 'confirmed_check', confirmed_at FROM rerun_batch_checks;
INSERT OR IGNORE INTO rerun_batch_makers (batch_id, user_id, part, at)
    SELECT e.object_id, CAST(e.actor_id AS INTEGER),
           CASE e.action WHEN 'rerun_batch.requested' THEN 'requested' ELSE 'submitted' END,
           e.at
    FROM audit_events e
    WHERE e.action IN ('rerun_batch.requested', 'rerun_batch.submitted')
      AND e.actor_kind = 'user' AND e.object_type = 'rerun_batch'
      AND e.object_id IN (SELECT id FROM rerun_batches)
      AND CAST(e.actor_id AS INTEGER) IN (SELECT id FROM users);
