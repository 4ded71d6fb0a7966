-- An entry of the extraction queue is due at due_at: the dispatcher hands
-- it to the workers only then. An entry of the immediate path is due
-- later than it is queued: the process that captured it extracts it now,
-- and the workers only if that process does not commit a record first (it
-- died, or gave the episode back). Other entries are due when queued.
ALTER TABLE extract_queue ADD COLUMN due_at timestamptz;
UPDATE extract_queue SET due_at = queued_at;
ALTER TABLE extract_queue ALTER COLUMN due_at SET NOT NULL;
DROP INDEX extract_queue_order;
CREATE INDEX extract_queue_due ON extract_queue (due_at);
