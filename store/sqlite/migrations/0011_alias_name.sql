-- Subjects by their other names, indexed without slowing every other read.
-- The partial index of 0009 (WHERE attribute = 'alias') made SQLite's
-- planner compare each statement's "attribute = ?" with 'alias' at its
-- binding, and so prepare the statement again whenever that binding
-- changed: a point read at a past instant took five times as long. The
-- name is now a virtual column of its own, which no other statement
-- compares with a parameter, and the partial index is on it.
DROP INDEX facts_alias;
ALTER TABLE facts ADD COLUMN alias_name TEXT GENERATED ALWAYS AS (CASE WHEN attribute = 'alias' THEN member END) VIRTUAL;
CREATE INDEX facts_alias_name ON facts (tenant, alias_name) WHERE alias_name IS NOT NULL;
