-- The conversation around an episode (Around) is read in (occurred_at,
-- episode_id) order within its session: with episode_id in the index, its
-- row comparison is one index range, read as deep as it needs.
DROP INDEX episodes_session;
CREATE INDEX episodes_session ON episodes (tenant_id, session, occurred_at, episode_id);
