-- The bitemporal fact ledger. Instants are INTEGER microseconds since the
-- Unix epoch, UTC. NULL valid_to / retracted_at mean open.

CREATE TABLE episodes (
    tenant          TEXT    NOT NULL,
    episode_id      TEXT    NOT NULL,
    session         TEXT    NOT NULL DEFAULT '',
    kind            TEXT    NOT NULL,
    content         TEXT    NOT NULL DEFAULT '',
    occurred_at     INTEGER NOT NULL,
    recorded_at     INTEGER NOT NULL,
    metadata        TEXT,
    idempotency_key TEXT,
    UNIQUE (tenant, episode_id)
);
CREATE UNIQUE INDEX episodes_idempotency ON episodes (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX episodes_session ON episodes (tenant, session, occurred_at);
CREATE INDEX episodes_occurred ON episodes (tenant, occurred_at);

-- Store-wide counters.
--   fact_id_floor: fact ids are allocated above both max(fact_id) and this
--     floor; whatever deletes facts raises the floor, so an id is never reused
--     and an audit record naming an id always means one row. (AUTOINCREMENT
--     would do the same but writes a page on every insert.)
--   tx_clock: the latest transaction time written. Every write happens at
--     max(clock, tx_clock), so transaction time never runs backwards across
--     the store, whatever the clocks of the processes writing to it.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('fact_id_floor', 0), ('tx_clock', 0);

CREATE TABLE facts (
    fact_id        INTEGER PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    subject        TEXT    NOT NULL,
    attribute      TEXT    NOT NULL,
    value          TEXT,               -- canonical JSON; NULL is a tombstone
    valid_from     INTEGER NOT NULL,
    valid_to       INTEGER,
    recorded_at    INTEGER NOT NULL,
    retracted_at   INTEGER,
    supersedes     INTEGER,            -- provenance link, not a foreign key: forget may remove the target
    source         TEXT,               -- the asserting episode; NULL only for a system actor's rows
    schema_version INTEGER NOT NULL DEFAULT 0,
    CHECK (valid_to IS NULL OR valid_from < valid_to),
    CHECK (retracted_at IS NULL OR recorded_at <= retracted_at),
    FOREIGN KEY (tenant, source) REFERENCES episodes (tenant, episode_id)
);
-- At most one open believed row per key.
CREATE UNIQUE INDEX facts_open ON facts (tenant, subject, attribute) WHERE retracted_at IS NULL AND valid_to IS NULL;
-- Every row of a key: the write path's neighbours, reads at any instant, history.
CREATE INDEX facts_key ON facts (tenant, subject, attribute, valid_from);
-- Facts by source episode (forget by episode, and the foreign key's checks).
CREATE INDEX facts_source ON facts (tenant, source);

-- Corroborating episodes: a repeat of the same value at the same valid_from
-- links its episode to the existing row. Shortened copies copy the links.
CREATE TABLE evidence (
    fact_id     INTEGER NOT NULL REFERENCES facts (fact_id) ON DELETE CASCADE,
    tenant      TEXT    NOT NULL,
    episode_id  TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,      -- when this link was made
    PRIMARY KEY (fact_id, episode_id),
    FOREIGN KEY (tenant, episode_id) REFERENCES episodes (tenant, episode_id)
) WITHOUT ROWID;
CREATE INDEX evidence_episode ON evidence (tenant, episode_id);
