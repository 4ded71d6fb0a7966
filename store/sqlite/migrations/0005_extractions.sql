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
