package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"

	"github.com/sgam-dev/sgam"
)

// The extraction queue of a SQLite ledger is River's tables (package
// queue) in a file of their own beside it, QueuePath. Its job rows name an
// episode by tenant and id (kind sgam_extract, args {"tenant",
// "episode_id"}), and River keeps ended ones for a day or a week: past a
// forget. So forgetting episodes (or a tenant) deletes their job rows too,
// once the forget has committed (another file cannot share its
// transaction); should the queue be busy past its timeout then, Compact,
// which the forget's bytes need anyway, deletes every job row whose
// episode is gone, and rewrites the queue file as it does the ledger.

// QueuePath is the file of the extraction queue of the ledger at path.
func QueuePath(path string) string { return path + ".queue" }

// extractJobKind is River's kind of an extraction job (queue.ExtractArgs).
const extractJobKind = "sgam_extract"

// jobsGone is what a forget deletes of the queue: a tenant's job rows,
// those of some of its episodes, or all of them.
type jobsGone struct {
	tenant   string
	episodes []string
	all      bool
}

// ForgetJobs implements engine.Tx: the rows are deleted after commit.
func (t *tx) ForgetJobs(tenant string, episodes []string) error {
	if len(episodes) > 0 {
		t.jobs = append(t.jobs, jobsGone{tenant: tenant, episodes: episodes})
	}
	return nil
}

// openQueue opens the queue file of the ledger, nil when there is none
// or River never migrated it (no queue was ever opened on the ledger): it
// is never created here.
func (s *db) openQueue(ctx context.Context) (*sql.DB, error) {
	p := QueuePath(s.path)
	if _, err := os.Stat(p); err != nil {
		return nil, nil
	}
	q := url.Values{}
	q.Set("mode", "rw")
	q.Set("_txlock", "immediate")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "secure_delete(ON)")
	db, err := sql.Open("sqlite", "file:"+p+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open the queue %s: %w", p, err)
	}
	db.SetMaxOpenConns(1)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'river_job'`).Scan(&n); err != nil || n == 0 {
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("open the queue %s: %w", p, err)
		}
		return nil, nil
	}
	return db, nil
}

// forgetJobs deletes the queue's job rows of what a committed forget
// deleted. It reports no error: the forget stands, and Compact deletes
// what is left (see above).
func (s *db) forgetJobs(ctx context.Context, gone []jobsGone) {
	if len(gone) == 0 {
		return
	}
	q, err := s.openQueue(ctx)
	if err != nil || q == nil {
		return
	}
	defer q.Close()
	for _, g := range gone {
		q.ExecContext(ctx, `DELETE FROM river_job WHERE kind = ?1 AND json_extract(args, '$.tenant') = ?2
			AND (?3 OR json_extract(args, '$.episode_id') IN (SELECT value FROM json_each(?4)))`,
			extractJobKind, g.tenant, g.all, jsonList(g.episodes))
	}
}

// compactQueue deletes the queue's job rows whose episode is no longer
// in the ledger, then rewrites the queue file (VACUUM) and truncates its
// write-ahead log, so that nothing of a forgotten episode is left in it.
func (s *db) compactQueue(ctx context.Context) error {
	q, err := s.openQueue(ctx)
	if err != nil || q == nil {
		return err
	}
	defer q.Close()
	// The jobs' episodes, as [tenant, episode_id] pairs; the ledger says
	// which of them are gone, in one statement.
	var refs string
	if err := q.QueryRowContext(ctx, `SELECT coalesce(json_group_array(json_array(t, e)), '[]') FROM (SELECT DISTINCT
			json_extract(args, '$.tenant') AS t, json_extract(args, '$.episode_id') AS e FROM river_job WHERE kind = ?)`,
		extractJobKind).Scan(&refs); err != nil {
		return mapErr(fmt.Errorf("compact the queue: %w", err))
	}
	var gone string
	if err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(json_group_array(r.value), '[]') FROM json_each(?) r
			WHERE NOT EXISTS (SELECT 1 FROM episodes e WHERE e.tenant = r.value ->> 0 AND e.episode_id = r.value ->> 1)`,
		refs).Scan(&gone); err != nil {
		return mapErr(fmt.Errorf("compact the queue: %w", err))
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM river_job WHERE kind = ?1 AND EXISTS (SELECT 1 FROM json_each(?2) r
			WHERE r.value ->> 0 = json_extract(args, '$.tenant') AND r.value ->> 1 = json_extract(args, '$.episode_id'))`,
		extractJobKind, gone); err != nil {
		return mapErr(fmt.Errorf("compact the queue: %w", err))
	}
	checkpoint := func() error {
		var busy, log, done int
		err := q.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done)
		if err == nil && busy != 0 {
			err = fmt.Errorf("a reader kept its write-ahead log from being truncated")
		}
		return err
	}
	err = checkpoint()
	if err == nil {
		_, err = q.ExecContext(ctx, `VACUUM`)
	}
	if err == nil {
		err = checkpoint()
	}
	if err != nil {
		return sgam.Errorf(sgam.Unavailable, "", "compact the queue %s: %v; run compact again when the workers are idle", QueuePath(s.path), err)
	}
	return nil
}
