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
