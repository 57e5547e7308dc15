-- A registration asks for the department's oldest other operation with its business key (ORDER BY id LIMIT 1).
-- With the id in the index the rows come in that order: without it, a plan cached while the table was small
-- walked the primary key instead, through every operation when no other one has the key.
CREATE INDEX operations_by_business_key_in_order ON operations (department, business_key, id);
DROP INDEX operations_by_business_key;
