-- The terms of each episode (the lexemes of its tsvector), one row per
-- term, so that a search finds its candidates through a btree.
--
-- Why not the GIN index of migration 0006: under row-level security the
-- planner may use an index only for a condition whose function is
-- LEAKPROOF, and @@ (ts_match_vq) is not, so a search read every episode
-- of its tenant and tested each (103 ms for a tenant of 100,000 episodes).
-- Text equality is LEAKPROOF, so "tenant_id = $1 AND term = ANY($2)" is an
-- index condition here; a search counts its terms' rows, keeps the rarest
-- (words.Selective) and ranks only the episodes that hold them.
--
-- Kept by a trigger in the statement that writes the episode, so no write
-- path can miss it, and forget or expiry deletes it with the episode; the
-- GIN index, which no query can use, goes.
CREATE TABLE search_terms (
    tenant_id  text NOT NULL,
    term       text NOT NULL,
    episode_id text NOT NULL,
    PRIMARY KEY (tenant_id, term, episode_id)
);
ALTER TABLE search_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE search_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON search_terms
    USING (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all')
    WITH CHECK (tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all');

-- A row's terms are those of its tsvector, so deleting by them finds
-- every row in the primary key.
CREATE FUNCTION search_terms_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM search_terms
        WHERE tenant_id = OLD.tenant_id AND term = ANY (tsvector_to_array(OLD.search)) AND episode_id = OLD.episode_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO search_terms (tenant_id, term, episode_id)
        SELECT NEW.tenant_id, t, NEW.episode_id FROM unnest(tsvector_to_array(NEW.search)) t
        ON CONFLICT DO NOTHING; -- a row left by something other than sgam (sgam check names it)
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER episodes_search_terms AFTER INSERT OR DELETE OR UPDATE OF content ON episodes
    FOR EACH ROW EXECUTE FUNCTION search_terms_keep();

-- The episodes already there (every tenant's: the migration's own scope).
SELECT set_config('sgam.scope', 'all', true);
INSERT INTO search_terms (tenant_id, term, episode_id)
SELECT tenant_id, unnest(tsvector_to_array(search)), episode_id FROM episodes;

DROP INDEX episodes_search;
