-- The conversation around an episode (Around) is read in (occurred_at,
-- episode_id) order within its session. Without episode_id in the index,
-- SQLite read every earlier (or later) episode of the session and sorted
-- them to keep two: the cost of each read grew with the session's length.
DROP INDEX episodes_session;
CREATE INDEX episodes_session ON episodes (tenant, session, occurred_at, episode_id);
