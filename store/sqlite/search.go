package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
)

// The full-text index (migration 0006): search_fts holds one row per
// episode, its rowid the episode's search_docs.doc, its column t the
// tenant's token. Triggers keep it; this file searches and rebuilds it.

// matchExpr is the FTS5 query of a search: the tenant's token and any of
// the terms. Terms are words of letters and digits (words.Terms), quoted
// so that none is read as an operator.
func matchExpr(n int64, terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return fmt.Sprintf("t:t%d AND (%s)", n, strings.Join(q, " OR "))
}

// Search implements engine.Reader. The ranking runs inside the index
// (the tenant's token in the match keeps other tenants' rows out of it;
// bm25 weighs that column 0, as every row of the tenant has it), and only
// the best rows are joined to their episodes, whose tenant test is the
// wall. Episodes recorded after knownAt are dropped after ranking, so
// when some were, the search runs again with a deeper cut until limit
// hits survive or the index has no more.
func (s *db) Search(ctx context.Context, tenant string, terms []string, knownAt int64, limit int) ([]sgam.EpisodeHit, error) {
	var n int64
	switch err := s.queryRow(ctx, `SELECT n FROM search_tenants WHERE tenant = ?`, tenant).Scan(&n); {
	case err == sql.ErrNoRows:
		return []sgam.EpisodeHit{}, nil
	case err != nil:
		return nil, mapErr(fmt.Errorf("search: %w", err))
	}
	match := matchExpr(n, terms)
	for depth := limit; ; depth *= 8 {
		out, ranked, err := s.search(ctx, tenant, match, knownAt, limit, depth)
		if err != nil || len(out) == limit || ranked < depth {
			return out, err
		}
	}
}

// search ranks the best depth rows of the index and returns the first
// limit of them recorded by knownAt, and how many rows were ranked.
func (s *db) search(ctx context.Context, tenant, match string, knownAt int64, limit, depth int) (out []sgam.EpisodeHit, ranked int, err error) {
	rows, err := s.query(ctx, `SELECT e.tenant, e.episode_id, e.session, e.kind, e.content, e.occurred_at, e.recorded_at, e.metadata,
			coalesce(e.idempotency_key, ''), coalesce(e.retention, ''), e.subjects, -m.rank, e.recorded_at <= ?3
		FROM (SELECT rowid, rank FROM search_fts WHERE search_fts MATCH ?2 AND rank MATCH 'bm25(0.0, 1.0)' ORDER BY rank LIMIT ?4) m
		JOIN search_docs d ON d.doc = m.rowid
		JOIN episodes e ON e.tenant = d.tenant AND e.episode_id = d.episode_id
		WHERE d.tenant = ?1
		ORDER BY m.rank`, tenant, match, knownAt, depth)
	if err != nil {
		return nil, 0, mapErr(fmt.Errorf("search: %w", err))
	}
	defer rows.Close()
	out = []sgam.EpisodeHit{}
	for rows.Next() {
		var h sgam.EpisodeHit
		var known bool
		if h.Episode, err = scanEpisode(rows, &h.Score, &known); err != nil {
			return nil, 0, mapErr(fmt.Errorf("search: %w", err))
		}
		ranked++
		if known && len(out) < limit {
			out = append(out, h)
		}
	}
	return out, ranked, mapErr(rows.Err())
}

// reindexBatch is how many episodes one transaction of Reindex indexes.
const reindexBatch = 2000

// execer is what a reindex batch runs on: the writer connection inside
// the migration's transaction, or a write transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Reindex implements engine.Driver: batches of episodes in (tenant,
// episode_id) order, each in its own write transaction, so that every
// episode is searchable throughout (by its old row or its new one).
func (s *db) Reindex(ctx context.Context, tenant string, progress func(done, total int)) (int, error) {
	var total int
	if err := s.queryRow(ctx, `SELECT count(*) FROM episodes WHERE ?1 = '' OR tenant = ?1`, tenant).Scan(&total); err != nil {
		return 0, mapErr(fmt.Errorf("reindex: %w", err))
	}
	progress(0, total)
	done := 0
	cur := [2]string{}
	for first := true; ; first = false {
		var n int
		var more bool
		err := s.writeOnly(ctx, func(t *tx) error {
			var err error
			n, more, err = reindexRange(ctx, t.s.w, tenant, &cur, first)
			return err
		})
		if err != nil {
			return done, err
		}
		done += n
		progress(min(done, total), total)
		if !more {
			break
		}
	}
	// Index rows of episodes that are gone (none, unless the file was
	// written by something other than sgam).
	err := s.writeOnly(ctx, func(t *tx) error {
		_, err := t.s.w.ExecContext(ctx, `DELETE FROM search_fts WHERE rowid IN (SELECT doc FROM search_docs d
			WHERE (?1 = '' OR d.tenant = ?1) AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.tenant = d.tenant AND e.episode_id = d.episode_id));
			DELETE FROM search_docs WHERE (?1 = '' OR tenant = ?1) AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.tenant = search_docs.tenant AND e.episode_id = search_docs.episode_id)`, tenant)
		return err
	})
	return done, mapErr(err)
}

// reindexRange indexes again the next batch of episodes after cur (from
// the first when first), moving cur to its last; more tells whether
// episodes are left after it.
func reindexRange(ctx context.Context, x execer, tenant string, cur *[2]string, first bool) (n int, more bool, err error) {
	// The batch's last key: the reindexBatch-th episode after cur, or the
	// very last one.
	after := `(?1 = '' OR tenant = ?1) AND (?4 OR (tenant, episode_id) > (?2, ?3))`
	var hi [2]string
	err = x.QueryRowContext(ctx, `SELECT tenant, episode_id FROM episodes WHERE `+after+`
		ORDER BY tenant, episode_id LIMIT 1 OFFSET ?5`, tenant, cur[0], cur[1], first, reindexBatch-1).Scan(&hi[0], &hi[1])
	switch {
	case err == sql.ErrNoRows:
		err = x.QueryRowContext(ctx, `SELECT tenant, episode_id FROM episodes WHERE `+after+`
			ORDER BY tenant DESC, episode_id DESC LIMIT 1`, tenant, cur[0], cur[1], first).Scan(&hi[0], &hi[1])
		if err == sql.ErrNoRows {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("reindex: %w", err)
		}
	case err != nil:
		return 0, false, fmt.Errorf("reindex: %w", err)
	default:
		more = true
	}
	in := `(?1 = '' OR e.tenant = ?1) AND (?4 OR (e.tenant, e.episode_id) > (?2, ?3)) AND (e.tenant, e.episode_id) <= (?5, ?6)`
	args := []any{tenant, cur[0], cur[1], first, hi[0], hi[1]}
	for _, q := range []string{
		`DELETE FROM search_fts WHERE rowid IN (SELECT d.doc FROM episodes e JOIN search_docs d ON d.tenant = e.tenant AND d.episode_id = e.episode_id WHERE ` + in + `)`,
		`DELETE FROM search_docs WHERE doc IN (SELECT d.doc FROM episodes e JOIN search_docs d ON d.tenant = e.tenant AND d.episode_id = e.episode_id WHERE ` + in + `)`,
		`INSERT OR IGNORE INTO search_tenants (tenant, n)
			SELECT tenant, (SELECT coalesce(max(n), 0) FROM search_tenants) + row_number() OVER (ORDER BY tenant)
			FROM (SELECT DISTINCT e.tenant FROM episodes e WHERE ` + in + ` AND e.tenant NOT IN (SELECT tenant FROM search_tenants))`,
		`INSERT INTO search_docs (tenant, episode_id) SELECT e.tenant, e.episode_id FROM episodes e WHERE ` + in + ` ORDER BY e.tenant, e.episode_id`,
		`INSERT INTO search_fts (rowid, t, content)
			SELECT d.doc, 't' || st.n, e.content FROM episodes e
			JOIN search_docs d ON d.tenant = e.tenant AND d.episode_id = e.episode_id
			JOIN search_tenants st ON st.tenant = e.tenant WHERE ` + in,
	} {
		res, err := x.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, false, fmt.Errorf("reindex: %w", err)
		}
		if strings.HasPrefix(q, "INSERT INTO search_docs") {
			c, _ := res.RowsAffected()
			n = int(c)
		}
	}
	*cur = hi
	return n, more, nil
}

// backfillSearch indexes the episodes a file had before migration 0006,
// inside the migration's transaction, telling progress as it goes.
func backfillSearch(ctx context.Context, x execer, progress func(done, total int)) error {
	var total int
	if err := x.QueryRowContext(ctx, `SELECT count(*) FROM episodes`).Scan(&total); err != nil {
		return err
	}
	if total == 0 {
		return nil
	}
	progress(0, total)
	done := 0
	cur := [2]string{}
	for first := true; ; first = false {
		n, more, err := reindexRange(ctx, x, "", &cur, first)
		if err != nil {
			return err
		}
		done += n
		progress(min(done, total), total)
		if !more {
			return nil
		}
	}
}
