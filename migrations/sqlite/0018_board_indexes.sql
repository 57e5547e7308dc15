-- The board at scale (measured with 1,000,000 operations, 100,000 stalled): its counts per event come from
-- the index alone when it holds the event. Its pages go by id; with the planner's statistics (kept by
-- `Db::optimize`, run by the housekeeping) they walk the ids instead of sorting every stalled operation.
DROP INDEX operations_by_status;
CREATE INDEX operations_by_status ON operations (status, department, event);
