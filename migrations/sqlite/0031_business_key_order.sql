-- The same index as PostgreSQL's (SQLite's index on (department, business_key) ends with the rowid already, so
-- this only keeps the two schemas alike).
CREATE INDEX operations_by_business_key_in_order ON operations (department, business_key, id);
DROP INDEX operations_by_business_key;
