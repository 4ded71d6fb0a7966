-- Episode vectors (recall's second kind of evidence, when an embeddings
-- endpoint is configured): one per tenant, model and episode, derived from
-- the episode's content and deleted with it (the foreign key cascades
-- within the tenant, so forget and expiry need no statement of their own).
-- Never exported: embedding again rebuilds them.
--
-- vector is dims little-endian float32s, as on SQLite, not real[]: an
-- exact search sends every vector of the tenant and model to sgam, and
-- the server sends a bytea as it is stored, while it turns a real[] into
-- a length word and a float per element (float4send, one call each).
-- Measured on 10,000 vectors: the scan took 12 ms against 60 ms at 64
-- dimensions, 80 ms against 1 s at 1536. Rows up to 8 KB stay in the
-- table (toast_tuple_target) and are never compressed (EXTERNAL: floats
-- do not compress), so the scan reads no TOAST table up to about 2000
-- dimensions.
--
-- norm is the vector's Euclidean length (double precision, as SQLite's
-- REAL, so both stores score alike); recorded_at is the episode's (it
-- never changes once captured), so that a search at a known_at reads this
-- table alone.
--
-- The search is exact, over every vector of the tenant and model (see
-- store/postgres/embeddings.go). A tenant with millions of vectors wants
-- an approximate index instead: the pgvector extension's vector type with
-- an HNSW index (vectors there come from embedding the episodes again
-- under a new model name), which this schema does not require.
CREATE TABLE embeddings (
    tenant_id   text             NOT NULL,
    model       text             NOT NULL,
    episode_id  text             NOT NULL,
    dims        integer          NOT NULL CHECK (dims > 0),
    vector      bytea            NOT NULL CHECK (length(vector) = 4 * dims),
    norm        double precision NOT NULL CHECK (norm > 0),
    recorded_at timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, model, episode_id),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, episode_id) ON DELETE CASCADE
) WITH (toast_tuple_target = 8160);
ALTER TABLE embeddings ALTER COLUMN vector SET STORAGE EXTERNAL;
-- The foreign key's lookups when an episode is deleted, whatever the
-- model; with the model, "has this episode a vector of this model" is
-- answered from the index, without the rows (and their vectors).
CREATE INDEX embeddings_episode ON embeddings (tenant_id, episode_id, model);
ALTER TABLE embeddings ENABLE ROW LEVEL SECURITY;
ALTER TABLE embeddings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON embeddings
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- What an embedding job has left: episodes with content, oldest recorded
-- first, each looked up in embeddings' primary key.
CREATE INDEX episodes_to_embed ON episodes (recorded_at, tenant_id, episode_id) WHERE content <> '';
