-- API keys of the HTTP API and MCP server. A key is bound to one tenant and
-- one role; only the SHA-256 of its secret is stored. Keys are looked up by
-- their public id before the tenant is known, so the table is store-wide.
CREATE TABLE api_keys (
    key_id      TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    role        TEXT    NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    name        TEXT    NOT NULL DEFAULT '',
    secret_hash BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);
