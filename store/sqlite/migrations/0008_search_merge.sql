-- The full-text index merges its segments when the store is idle (the
-- checkpointer's merge, checkpoint.go): a search seeks into every segment
-- for each of its terms, so fewer segments make it faster (at 100,000
-- episodes, 18 segments took a recall about 10% longer than 2). usermerge
-- 2 lets that merge join any two segments of one level, where the default
-- waits for four; captures still merge in their own commits as before
-- (automerge, unchanged), and the largest segments are rewritten only
-- when another of their size joins them.
INSERT INTO search_fts (search_fts, rank) VALUES ('usermerge', 2);
