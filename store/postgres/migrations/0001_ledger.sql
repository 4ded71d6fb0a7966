-- The bitemporal fact ledger on PostgreSQL. Every table is keyed by
-- tenant_id first and no foreign key crosses tenants, so a tenant-distributed
-- PostgreSQL (Citus) can shard every table by tenant_id, co-located, without
-- a schema change (docs/scaling.md). Instants are timestamptz (microseconds).
-- NULL valid_to / retracted_at mean open.

CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE SEQUENCE fact_ids AS bigint MAXVALUE 9007199254740991; -- 2^53-1, safe in JSON

-- Store-wide values. tx_floor: the latest transaction time an import
-- brought in; every write happens after it.
CREATE TABLE sgam_meta (
    key   text   PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO sgam_meta (key, value) VALUES ('tx_floor', 0);

-- sgam_check raises an error unless ok: a guard a statement can evaluate on
-- the server, so that it fails the transaction before COMMIT runs.
CREATE FUNCTION sgam_check(ok boolean, message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION '%', message;
    END IF;
END $$;

CREATE TABLE episodes (
    tenant_id       text        NOT NULL,
    episode_id      text        NOT NULL,
    session         text        NOT NULL DEFAULT '',
    kind            text        NOT NULL,
    content         text        NOT NULL DEFAULT '',
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL,
    metadata        text,             -- canonical JSON object, as written
    idempotency_key text,
    PRIMARY KEY (tenant_id, episode_id)
);
CREATE UNIQUE INDEX episodes_idempotency ON episodes (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX episodes_session ON episodes (tenant_id, session, occurred_at);
CREATE INDEX episodes_occurred ON episodes (tenant_id, occurred_at);

CREATE TABLE facts (
    tenant_id      text        NOT NULL,
    fact_id        bigint      NOT NULL,
    subject        text        NOT NULL,
    attribute      text        NOT NULL,
    -- The canonical JSON text exactly as written (NULL: a tombstone), and the
    -- same as jsonb for queries. The text is kept because jsonb rewrites
    -- numbers and key order, and values must compare and export exactly.
    value_text     text,
    value          jsonb GENERATED ALWAYS AS (value_text::jsonb) STORED,
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz,
    recorded_at    timestamptz NOT NULL,
    retracted_at   timestamptz,
    supersedes     bigint,                -- provenance link, not a foreign key: forget may remove the target
    source         text,                  -- the asserting episode; NULL only for a system actor's rows
    schema_version integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, source) REFERENCES episodes (tenant_id, episode_id),
    CHECK (valid_to IS NULL OR valid_from < valid_to),
    CHECK (retracted_at IS NULL OR recorded_at <= retracted_at),
    -- Believed rows of a key never overlap in valid time.
    EXCLUDE USING gist (tenant_id WITH =, subject WITH =, attribute WITH =, tstzrange(valid_from, valid_to) WITH &&)
        WHERE (retracted_at IS NULL)
);
-- (At most one open believed row per key follows from the exclusion
-- constraint: two open windows always overlap.)
-- Every row of a key: the write path's neighbours, reads at any instant, history.
CREATE INDEX facts_key ON facts (tenant_id, subject, attribute, valid_from);
-- Facts by source episode (forget by episode, and the foreign key's checks).
CREATE INDEX facts_source ON facts (tenant_id, source);
-- Facts by id alone: ids are store-wide, and imports check that across tenants.
CREATE INDEX facts_id ON facts (fact_id);

-- Corroborating episodes: a repeat of the same value at the same valid_from
-- links its episode to the existing row. Shortened copies copy the links.
CREATE TABLE evidence (
    tenant_id   text        NOT NULL,
    fact_id     bigint      NOT NULL,
    episode_id  text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, fact_id, episode_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, episode_id)
);
CREATE INDEX evidence_episode ON evidence (tenant_id, episode_id);

-- Row-level security, as defence in depth: every transaction sets
-- sgam.tenant (set_config(..., true)), and a query that forgot its tenant
-- filter still sees only that tenant. Operations that span tenants by nature
-- (check, export and import of a whole database, a batch of several tenants)
-- set sgam.scope = 'all' instead. FORCE applies the policies to the tables'
-- owner too; a superuser or a BYPASSRLS role is not subject to them, so
-- sgam must not connect as one.
ALTER TABLE episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE episodes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON episodes
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');
ALTER TABLE facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON facts
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON evidence
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');
