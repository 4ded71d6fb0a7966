-- Schemas govern memory: sets, schema versions, pending candidates,
-- retention classes and the forget audit.

-- A set (cardinality many) stores each member as a key of its own: member
-- is the member's canonical JSON, '' for a single-valued attribute.
ALTER TABLE facts ADD COLUMN member text NOT NULL DEFAULT '';
DO $$
DECLARE c text;
BEGIN
    SELECT conname INTO c FROM pg_constraint
     WHERE conrelid = 'facts'::regclass AND contype = 'x';
    EXECUTE format('ALTER TABLE facts DROP CONSTRAINT %I', c);
END $$;
ALTER TABLE facts ADD CONSTRAINT facts_believed_no_overlap
    EXCLUDE USING gist (tenant_id WITH =, subject WITH =, attribute WITH =, member WITH =,
                        tstzrange(valid_from, valid_to) WITH &&)
    WHERE (retracted_at IS NULL);
DROP INDEX facts_key;
CREATE INDEX facts_key ON facts (tenant_id, subject, attribute, member, valid_from);

-- A system actor that keeps a row without an evidence episode: 'retention'
-- when the attribute's retention outlived the row's episodes.
ALTER TABLE facts ADD COLUMN actor text;

-- An episode's retention class; NULL takes the schema's episode_retention.
ALTER TABLE episodes ADD COLUMN retention text;

-- Every schema applied, newest last; store-wide (a reference table under
-- Citus). body is the schema's canonical JSON. Fact rows carry the version
-- they were written under (0: no schema).
CREATE TABLE schemas (
    version    integer     PRIMARY KEY,
    body       text        NOT NULL,
    hash       text        NOT NULL,
    applied_at timestamptz NOT NULL
);

-- Candidates held back from becoming facts: a different value at an equal
-- valid_from under conflict policy review, or a sensitive attribute written
-- by a source that is not user_confirmed.
CREATE TABLE pending (
    tenant_id      text        NOT NULL,
    pending_id     text        NOT NULL,
    subject        text        NOT NULL,
    attribute      text        NOT NULL,
    member         text        NOT NULL DEFAULT '',
    value_text     text        NOT NULL,
    valid_from     timestamptz NOT NULL,
    source         text        NOT NULL,
    reason         text        NOT NULL CHECK (reason IN ('review', 'sensitive')),
    conflicts_with bigint,
    recorded_at    timestamptz NOT NULL,
    schema_version integer     NOT NULL,
    PRIMARY KEY (tenant_id, pending_id),
    FOREIGN KEY (tenant_id, source) REFERENCES episodes (tenant_id, episode_id)
);
CREATE INDEX pending_key ON pending (tenant_id, subject, attribute);
CREATE INDEX pending_source ON pending (tenant_id, source);

-- What forget and expire deleted: who, when, what kind, how many rows and
-- their ids. Never any deleted content: a subject is kept as its SHA-256.
CREATE TABLE audit (
    tenant_id text        NOT NULL,
    audit_id  text        NOT NULL,
    actor     text        NOT NULL,
    at        timestamptz NOT NULL,
    kind      text        NOT NULL,
    target    text        NOT NULL,
    receipt   text        NOT NULL,
    PRIMARY KEY (tenant_id, audit_id)
);

ALTER TABLE pending ENABLE ROW LEVEL SECURITY;
ALTER TABLE pending FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON pending
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');
ALTER TABLE audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');
