-- Schemas are per tenant: each tenant has its own version history, and the
-- store-wide default (tenant '') serves every tenant that applied none. The
-- schema of an existing database becomes the default.
CREATE TABLE tenant_schemas (
    tenant     TEXT    NOT NULL, -- '' for the store default
    version    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, version)
) WITHOUT ROWID;
INSERT INTO tenant_schemas (tenant, version, body, hash, applied_at) SELECT '', version, body, hash, applied_at FROM schemas;
DROP TABLE schemas;
ALTER TABLE tenant_schemas RENAME TO schemas;

-- The store's secrets: 'receipt' keys the digest a forget receipt keeps of
-- a subject (an HMAC), created by the first forget.
CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
