-- Extraction records: one per attempt to extract an episode, kept with the
-- episode and deleted with it (the foreign key cascades, within the
-- tenant). The whole record is the JSON in record; the columns beside it
-- are what queries select on.
CREATE TABLE extractions (
    tenant_id     text        NOT NULL,
    extraction_id text        NOT NULL,
    episode_id    text        NOT NULL,
    recorded_at   timestamptz NOT NULL,
    status        text        NOT NULL,
    prompt_digest text        NOT NULL,
    tokens        bigint      NOT NULL,
    record        text        NOT NULL,
    seq           bigserial   NOT NULL, -- insertion order, for records of one instant
    PRIMARY KEY (tenant_id, extraction_id),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, episode_id) ON DELETE CASCADE
);
CREATE INDEX extractions_episode ON extractions (tenant_id, episode_id, recorded_at);
CREATE INDEX extractions_prompt ON extractions (tenant_id, prompt_digest, recorded_at);
CREATE INDEX extractions_spent ON extractions (tenant_id, recorded_at);
ALTER TABLE extractions ENABLE ROW LEVEL SECURITY;
ALTER TABLE extractions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON extractions
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- An episode's subjects: the ids a caller says it is about, shown to the
-- extraction model with their stored values.
ALTER TABLE episodes ADD COLUMN subjects text[];

-- The extraction queue: episodes to extract, recorded in the transaction
-- that captured them, until a dispatcher hands them to the workers (an
-- outbox: no crash loses one). Entries go with their episode.
CREATE TABLE extract_queue (
    tenant_id  text        NOT NULL,
    episode_id text        NOT NULL,
    again      boolean     NOT NULL, -- extract even if extracted already
    queued_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, episode_id),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, episode_id) ON DELETE CASCADE
);
CREATE INDEX extract_queue_order ON extract_queue (queued_at);
ALTER TABLE extract_queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE extract_queue FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON extract_queue
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- Token budgets of extraction, per tenant, set by the operator.
CREATE TABLE budgets (
    tenant_id      text   PRIMARY KEY,
    tokens_per_day bigint NOT NULL
);
ALTER TABLE budgets ENABLE ROW LEVEL SECURITY;
ALTER TABLE budgets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON budgets
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- Candidates get a third reason, recurrence: a signal of an attribute
-- under schema promote, with its count of consistent signals so far
-- (signals; 0 for the other reasons).
ALTER TABLE pending ADD COLUMN signals integer NOT NULL DEFAULT 0;
ALTER TABLE pending DROP CONSTRAINT pending_reason_check;
ALTER TABLE pending ADD CONSTRAINT pending_reason_check CHECK (reason IN ('review', 'sensitive', 'recurrence'));
