-- Schemas are per tenant: each tenant has its own version history, and the
-- store-wide default (tenant_id '') serves every tenant that applied none.
-- The schema of an existing database becomes the default. The table stays
-- small and store-wide (a reference table under Citus); row-level security
-- lets a tenant's transaction see its own versions and the default's.
ALTER TABLE schemas ADD COLUMN tenant_id text NOT NULL DEFAULT '';
ALTER TABLE schemas DROP CONSTRAINT schemas_pkey;
ALTER TABLE schemas ADD PRIMARY KEY (tenant_id, version);
ALTER TABLE schemas ALTER COLUMN tenant_id DROP DEFAULT;
ALTER TABLE schemas ENABLE ROW LEVEL SECURITY;
ALTER TABLE schemas FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schemas
    USING (tenant_id = '' OR tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- The store's secrets: 'receipt' keys the digest a forget receipt keeps of
-- a subject (an HMAC), created by the first forget.
CREATE TABLE secrets (
    name  text  PRIMARY KEY,
    value bytea NOT NULL
);
