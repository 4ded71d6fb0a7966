-- Episode vectors (recall's second kind of evidence, when an embeddings
-- endpoint is configured): one per tenant, model and episode, derived from
-- the episode's content and deleted with it (the foreign key cascades, so
-- forget and expiry need no statement of their own; forget's secure_delete
-- zeroes their pages too). Never exported: embedding again rebuilds them.
--
-- vector is dims little-endian float32s; norm its Euclidean length, so a
-- search divides instead of summing squares again. recorded_at is the
-- episode's (it never changes once captured): a search at a known_at reads
-- this table alone, in primary key order, and looks up only the episodes
-- it keeps. WITHOUT ROWID keeps a tenant's vectors of a model together in
-- the primary key's b-tree, which a search scans from end to end.
CREATE TABLE embeddings (
    tenant      TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    episode_id  TEXT    NOT NULL,
    dims        INTEGER NOT NULL CHECK (dims > 0),
    vector      BLOB    NOT NULL CHECK (length(vector) = 4 * dims),
    norm        REAL    NOT NULL CHECK (norm > 0),
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, model, episode_id),
    FOREIGN KEY (tenant, episode_id) REFERENCES episodes (tenant, episode_id) ON DELETE CASCADE
) WITHOUT ROWID;
-- The foreign key's lookups when an episode is deleted: by (tenant,
-- episode_id), whatever the model. It holds the model too (the primary
-- key's columns end every index of a WITHOUT ROWID table), so it answers
-- "has this episode a vector of this model" without the vectors' pages.
CREATE INDEX embeddings_episode ON embeddings (tenant, episode_id);
-- What an embedding job has left: episodes with content, oldest recorded
-- first, each looked up in embeddings' primary key. The index holds the
-- columns the walk needs, so it reads no episode row until it finds one.
CREATE INDEX episodes_to_embed ON episodes (recorded_at, tenant, episode_id) WHERE content <> '';
