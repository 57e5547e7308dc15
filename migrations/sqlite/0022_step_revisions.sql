-- Every change of a step's row moves its revision on: a step event's write is a compare-and-set on it, so a
-- row remembered from this instance's last write can stand in for a fresh read (any change since refuses it).
ALTER TABLE steps ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
