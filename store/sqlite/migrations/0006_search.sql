-- The full-text index of episode content (recall's evidence), kept by
-- triggers in the transaction that writes the episode, so that no write
-- path can miss it and forget or expiry deletes it with the episode.
--
-- search_fts is contentless (it holds the index, not a copy of the text)
-- with contentless_delete, so a row can be deleted by its rowid alone;
-- search_docs gives each episode a stable rowid (the episodes table has no
-- INTEGER PRIMARY KEY, and VACUUM may renumber its rowids). Column t holds
-- one token per tenant ('t' || search_tenants.n), so that a search
-- intersects with its tenant's rows inside the index instead of ranking
-- every tenant's matches; the join on search_docs.tenant is the wall.
-- The porter tokenizer stems; stop words are left out of queries
-- (package words), not out of the index.
CREATE TABLE search_tenants (
    tenant TEXT    PRIMARY KEY,
    n      INTEGER NOT NULL UNIQUE
) WITHOUT ROWID;
CREATE TABLE search_docs (
    doc        INTEGER PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    episode_id TEXT    NOT NULL,
    UNIQUE (tenant, episode_id)
);
CREATE VIRTUAL TABLE search_fts USING fts5(
    t, content,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- secure-delete: deleting a row removes its terms from the index pages at
-- once, instead of leaving them behind a delete marker until segments merge
-- (forget must leave no word of a forgotten episode in the file).
INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1);

CREATE TRIGGER episodes_search_insert AFTER INSERT ON episodes BEGIN
    INSERT OR IGNORE INTO search_tenants (tenant, n)
        VALUES (new.tenant, (SELECT coalesce(max(n), 0) + 1 FROM search_tenants));
    INSERT INTO search_docs (tenant, episode_id) VALUES (new.tenant, new.episode_id);
    INSERT INTO search_fts (rowid, t, content)
        SELECT d.doc, 't' || st.n, new.content
        FROM search_docs d, search_tenants st
        WHERE d.tenant = new.tenant AND d.episode_id = new.episode_id AND st.tenant = new.tenant;
END;

-- A placeholder filled in (the only update of content).
CREATE TRIGGER episodes_search_update AFTER UPDATE OF content ON episodes BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id);
    INSERT INTO search_fts (rowid, t, content)
        SELECT d.doc, 't' || st.n, new.content
        FROM search_docs d, search_tenants st
        WHERE d.tenant = new.tenant AND d.episode_id = new.episode_id AND st.tenant = new.tenant;
END;

CREATE TRIGGER episodes_search_delete AFTER DELETE ON episodes BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id);
    DELETE FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id;
END;

-- Existing episodes are indexed by the migration's Go step (search.go,
-- backfillSearch), in batches that report progress.
