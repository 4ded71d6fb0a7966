-- API keys of the HTTP API and MCP server. A key is bound to one tenant and
-- one role; only the SHA-256 of its secret is stored. Keys are looked up by
-- their public id before the tenant is known, so the table is store-wide (a
-- reference table under Citus) and has no row-level security.
CREATE TABLE api_keys (
    key_id      text        PRIMARY KEY,
    tenant_id   text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    name        text        NOT NULL DEFAULT '',
    secret_hash bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);
