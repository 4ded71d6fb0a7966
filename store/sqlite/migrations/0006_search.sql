-- The full-text index of episode content (recall's evidence), kept by
-- triggers in the transaction that writes the episode, so that no write
-- path can miss it and forget or expiry deletes it with the episode.
--
-- search_fts is contentless (it holds the index, not a copy of the text)
-- with contentless_delete, so a row can be deleted by its rowid alone.
-- search_docs gives each episode a stable rowid (the episodes table has no
-- INTEGER PRIMARY KEY, and VACUUM may renumber its rowids), and the rowids
-- of a tenant's episodes are one range: n * 2^32 + 1, + 2, ... for the
-- tenant's number n (search_tenants). A search names its tenant's range,
-- which the index seeks within, so it never reads another tenant's
-- entries; the join on search_docs.tenant is the wall besides.
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
    content,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- The index's terms with the number of rows holding each: a search leaves
-- out its commonest terms (search.go).
CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_fts, 'row');

-- secure-delete: deleting a row removes its terms from the index pages at
-- once, instead of leaving them behind a delete marker until segments merge
-- (forget must leave no word of a forgotten episode in the file).
INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1);

CREATE TRIGGER episodes_search_insert AFTER INSERT ON episodes BEGIN
    INSERT OR IGNORE INTO search_tenants (tenant, n)
        VALUES (new.tenant, (SELECT coalesce(max(n), 0) + 1 FROM search_tenants));
    INSERT INTO search_docs (doc, tenant, episode_id)
        SELECT coalesce((SELECT max(doc) FROM search_docs WHERE doc > st.n * 4294967296 AND doc < (st.n + 1) * 4294967296),
                        st.n * 4294967296) + 1, new.tenant, new.episode_id
        FROM search_tenants st WHERE st.tenant = new.tenant;
    INSERT INTO search_fts (rowid, content)
        SELECT doc, new.content FROM search_docs WHERE tenant = new.tenant AND episode_id = new.episode_id;
END;

-- A placeholder filled in (the only update of content).
CREATE TRIGGER episodes_search_update AFTER UPDATE OF content ON episodes BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id);
    INSERT INTO search_fts (rowid, content)
        SELECT doc, new.content FROM search_docs WHERE tenant = new.tenant AND episode_id = new.episode_id;
END;

CREATE TRIGGER episodes_search_delete AFTER DELETE ON episodes BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id);
    DELETE FROM search_docs WHERE tenant = old.tenant AND episode_id = old.episode_id;
END;

-- Existing episodes are indexed by the migration's Go step (search.go,
-- backfillSearch), in batches that report progress.
