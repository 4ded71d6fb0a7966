-- Schemas govern memory: sets, schema versions, pending candidates,
-- retention classes and the forget audit.

-- A set (cardinality many) stores each member as a key of its own: member
-- is the member's canonical JSON, '' for a single-valued attribute.
ALTER TABLE facts ADD COLUMN member TEXT NOT NULL DEFAULT '';
DROP INDEX facts_open;
DROP INDEX facts_key;
CREATE UNIQUE INDEX facts_open ON facts (tenant, subject, attribute, member) WHERE retracted_at IS NULL AND valid_to IS NULL;
CREATE INDEX facts_key ON facts (tenant, subject, attribute, member, valid_from);

-- A system actor that keeps a row without an evidence episode: 'retention'
-- when the attribute's retention outlived the row's episodes.
ALTER TABLE facts ADD COLUMN actor TEXT;

-- An episode's retention class; NULL takes the schema's episode_retention.
ALTER TABLE episodes ADD COLUMN retention TEXT;

-- Every schema applied, newest last. body is the schema's canonical JSON.
-- Fact rows carry the version they were written under (0: no schema).
CREATE TABLE schemas (
    version    INTEGER PRIMARY KEY,
    body       TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
);

-- Candidates held back from becoming facts: a different value at an equal
-- valid_from under conflict policy review, or a sensitive attribute written
-- by a source that is not user_confirmed. Confirm writes the fact, dismiss
-- deletes the candidate.
CREATE TABLE pending (
    tenant         TEXT    NOT NULL,
    pending_id     TEXT    NOT NULL,
    subject        TEXT    NOT NULL,
    attribute      TEXT    NOT NULL,
    member         TEXT    NOT NULL DEFAULT '',
    value          TEXT    NOT NULL,
    valid_from     INTEGER NOT NULL,
    source         TEXT    NOT NULL,
    reason         TEXT    NOT NULL CHECK (reason IN ('review', 'sensitive')),
    conflicts_with INTEGER,              -- the believed fact it disagrees with (review)
    recorded_at    INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    PRIMARY KEY (tenant, pending_id),
    FOREIGN KEY (tenant, source) REFERENCES episodes (tenant, episode_id)
) WITHOUT ROWID;
CREATE INDEX pending_key ON pending (tenant, subject, attribute);
CREATE INDEX pending_source ON pending (tenant, source);

-- What forget and expire deleted: who, when, what kind, how many rows and
-- their ids. Never any deleted content: a subject is kept as its SHA-256.
CREATE TABLE audit (
    tenant   TEXT    NOT NULL,
    audit_id TEXT    NOT NULL,
    actor    TEXT    NOT NULL,
    at       INTEGER NOT NULL,
    kind     TEXT    NOT NULL,
    target   TEXT    NOT NULL,
    receipt  TEXT    NOT NULL,
    PRIMARY KEY (tenant, audit_id)
);
CREATE INDEX audit_tenant ON audit (tenant, at);
