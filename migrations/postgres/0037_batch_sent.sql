-- A bulk rerun whose reruns have all gone out is "sent", and "completed" only once every member has ended
-- (issue 63).
ALTER TABLE rerun_batches DROP CONSTRAINT rerun_batches_status_check;
ALTER TABLE rerun_batches ADD CONSTRAINT rerun_batches_status_check CHECK (status IN ('previewing', 'preview',
    'draft', 'pending_approval', 'dispatching', 'paused', 'sent', 'completed', 'cancelled', 'rejected', 'expired'));
