-- A record found done whose content nothing compared with the step's is a verdict of its own (issue 62):
-- "executed_not_compared".
ALTER TABLE reconciliations DROP CONSTRAINT reconciliations_verdict_check;
ALTER TABLE reconciliations ADD CONSTRAINT reconciliations_verdict_check CHECK (verdict IN ('executed',
    'executed_not_compared', 'executed_mismatch', 'not_executed', 'in_progress', 'unknown', 'lookup_failed'));
