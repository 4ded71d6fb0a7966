-- Extraction records: one per attempt to extract an episode, kept with the
-- episode and deleted with it (the foreign key cascades). The whole record
-- is the JSON in record; the columns beside it are what queries select on:
-- an episode's records, a prompt already answered, tokens spent since an
-- instant.
CREATE TABLE extractions (
    tenant        TEXT    NOT NULL,
    extraction_id TEXT    NOT NULL,
    episode_id    TEXT    NOT NULL,
    recorded_at   INTEGER NOT NULL,
    status        TEXT    NOT NULL,
    prompt_digest TEXT    NOT NULL,
    tokens        INTEGER NOT NULL,
    record        TEXT    NOT NULL,
    UNIQUE (tenant, extraction_id),
    FOREIGN KEY (tenant, episode_id) REFERENCES episodes (tenant, episode_id) ON DELETE CASCADE
);
CREATE INDEX extractions_episode ON extractions (tenant, episode_id, recorded_at);
CREATE INDEX extractions_prompt ON extractions (tenant, prompt_digest, recorded_at);
CREATE INDEX extractions_spent ON extractions (tenant, recorded_at);

-- An episode's subjects: the ids a caller says it is about (a JSON array),
-- shown to the extraction model with their stored values.
ALTER TABLE episodes ADD COLUMN subjects TEXT;

-- The extraction queue: episodes to extract, recorded in the transaction
-- that captured them, until a dispatcher hands them to the workers (an
-- outbox: no crash loses one). Entries go with their episode.
CREATE TABLE extract_queue (
    tenant     TEXT    NOT NULL,
    episode_id TEXT    NOT NULL,
    again      INTEGER NOT NULL, -- 1: extract even if extracted already
    queued_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant, episode_id),
    FOREIGN KEY (tenant, episode_id) REFERENCES episodes (tenant, episode_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX extract_queue_order ON extract_queue (queued_at);

-- Token budgets of extraction, per tenant, set by the operator.
CREATE TABLE budgets (
    tenant         TEXT    PRIMARY KEY,
    tokens_per_day INTEGER NOT NULL
) WITHOUT ROWID;

-- Candidates get a third reason, recurrence: a signal of an attribute
-- under schema promote, with its count of consistent signals so far
-- (signals; 0 for the other reasons). SQLite changes a CHECK by rebuilding
-- the table.
CREATE TABLE pending_new (
    tenant         TEXT    NOT NULL,
    pending_id     TEXT    NOT NULL,
    subject        TEXT    NOT NULL,
    attribute      TEXT    NOT NULL,
    member         TEXT    NOT NULL DEFAULT '',
    value          TEXT    NOT NULL,
    valid_from     INTEGER NOT NULL,
    source         TEXT    NOT NULL,
    reason         TEXT    NOT NULL CHECK (reason IN ('review', 'sensitive', 'recurrence')),
    conflicts_with INTEGER,              -- the believed fact it disagrees with (review)
    recorded_at    INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    signals        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, pending_id),
    FOREIGN KEY (tenant, source) REFERENCES episodes (tenant, episode_id)
) WITHOUT ROWID;
INSERT INTO pending_new (tenant, pending_id, subject, attribute, member, value, valid_from, source, reason, conflicts_with, recorded_at, schema_version)
    SELECT tenant, pending_id, subject, attribute, member, value, valid_from, source, reason, conflicts_with, recorded_at, schema_version FROM pending;
DROP TABLE pending;
ALTER TABLE pending_new RENAME TO pending;
CREATE INDEX pending_key ON pending (tenant, subject, attribute);
CREATE INDEX pending_source ON pending (tenant, source);
