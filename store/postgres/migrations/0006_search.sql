-- The full-text index of episode content (recall's evidence): a stored
-- generated tsvector, so that every write of content keeps it in the same
-- statement and it goes with the row, and a GIN index over it. A search
-- filters by tenant_id beside the match (a tenant-first GIN index would
-- need the btree_gin extension, which not every role may create; on a
-- tenant-distributed PostgreSQL each shard has its own index anyway). The
-- english configuration stems and drops stop words. Adding the column
-- computes it for every existing episode, in one table rewrite: on a large
-- store, run the upgrade in a quiet hour.
ALTER TABLE episodes ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED;
CREATE INDEX episodes_search ON episodes USING gin (search);
