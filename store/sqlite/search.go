package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// The full-text index (migration 0006): search_fts holds one row per
// episode, its rowid the episode's search_docs.doc, in its tenant's range
// of rowids (tenantRange). Triggers keep it; this file searches and
// rebuilds it.

// matchExpr is the FTS5 query of a search: any of the terms. Terms are
// words of letters and digits (words.Terms), quoted so that none is read
// as an operator.
func matchExpr(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(q, " OR ")
}

// tenantRange is the rowids of tenant n's rows: (n * 2^32, (n+1) * 2^32).
func tenantRange(n int64) (lo, hi int64) { return n << 32, (n + 1) << 32 }

// Search implements engine.Reader. The ranking runs inside the index,
// within the tenant's range of rowids (the index seeks to it in every
// term's entries, so no other tenant's row is read), and only the best
// rows are joined to their episodes, whose tenant test is the wall.
// Episodes recorded after knownAt are dropped after ranking, so when some
// were, the search runs again with a deeper cut until limit hits survive
// or the index has no more. (bm25's term weights are computed over the
// whole index, every tenant's rows: see docs/recall.md.)
func (s *db) Search(ctx context.Context, tenant string, terms []string, knownAt int64, limit int) ([]sgam.EpisodeHit, error) {
	n, found, err := s.tenantNumber(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !found {
		return []sgam.EpisodeHit{}, nil
	}
	lo, hi := tenantRange(n)
	terms, err = s.selective(ctx, lo, hi, terms)
	if err != nil {
		return nil, err
	}
	match := matchExpr(terms)
	for depth := limit; ; depth *= 8 {
		out, ranked, err := s.search(ctx, tenant, match, lo, hi, knownAt, limit, depth)
		if err != nil || len(out) == limit || ranked < depth {
			return out, err
		}
	}
}

// tenantNumber returns the tenant's number in the index (search_tenants),
// and whether it has one (none before its first episode). A number, once
// given, is never changed or taken back (migration 0006: forgetting every
// episode of a tenant leaves it), so each process keeps the numbers it
// has read, and a search saves a statement.
func (s *db) tenantNumber(ctx context.Context, tenant string) (int64, bool, error) {
	s.tenants.mu.Lock()
	n, ok := s.tenants.n[tenant]
	s.tenants.mu.Unlock()
	if ok {
		return n, true, nil
	}
	switch err := s.queryRow(ctx, `SELECT n FROM search_tenants WHERE tenant = ?`, tenant).Scan(&n); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, mapRead("search", err)
	}
	s.tenants.mu.Lock()
	if s.tenants.n == nil || len(s.tenants.n) >= maxTenantNumbers {
		s.tenants.n = map[string]int64{}
	}
	s.tenants.n[tenant] = n
	s.tenants.mu.Unlock()
	return n, true, nil
}

// tenantNumbers holds the tenants' numbers read so far (tenantNumber), at
// most maxTenantNumbers of them: when full it starts over.
type tenantNumbers struct {
	mu sync.Mutex
	n  map[string]int64
}

const maxTenantNumbers = 1 << 14

// selective returns the terms worth searching for (words.Selective), by
// the rows of the tenant's range of the index (lo, hi) that hold each. A
// count stops past words.MaxRankedRows: a term that common is left out
// however much commoner it is, as on PostgreSQL. Only the tenant's rows
// count: had other tenants' words a part in which terms are kept, a word
// that only they hold would look the rarest and push the tenant's own
// terms out of its search, and whether its answer changed would tell the
// tenant whether anyone else's episodes hold that word.
func (s *db) selective(ctx context.Context, lo, hi int64, terms []string) ([]string, error) {
	count, err := s.termCounts(ctx, lo, hi, terms)
	if err != nil {
		return nil, err
	}
	rows := make([]int, len(terms))
	for i, t := range terms {
		rows[i] = count[t]
	}
	return words.Selective(terms, rows), nil
}

// termCounts returns, for each term, the rows of the tenant's range of
// the index (lo, hi) that hold it, up to words.MaxRankedRows+1. The counts
// are remembered for a while (termCountTTL): they only decide which terms
// are too common to rank by, for which a count some seconds old is as
// good, and counting costs a good part of a search.
func (s *db) termCounts(ctx context.Context, lo, hi int64, terms []string) (map[string]int, error) {
	count := make(map[string]int, len(terms))
	key := func(t string) string { return strconv.FormatInt(lo, 36) + "\x00" + t }
	var missing []string
	s.terms.mu.Lock()
	if time.Since(s.terms.since) > termCountTTL || len(s.terms.n) > maxTermCounts {
		s.terms.n, s.terms.since = map[string]int{}, time.Now()
	}
	for _, t := range terms {
		if n, ok := s.terms.n[key(t)]; ok {
			count[t] = n
		} else if !slices.Contains(missing, t) {
			missing = append(missing, t)
		}
	}
	s.terms.mu.Unlock()
	if len(missing) == 0 {
		return count, nil
	}
	// One capped count per term, each a walk of the term's entries within
	// the tenant's range.
	args := []any{lo, hi, words.MaxRankedRows + 1}
	counts := make([]string, len(missing))
	for i, t := range missing {
		args = append(args, matchExpr([]string{t}))
		counts[i] = fmt.Sprintf(`SELECT %d, count(*) FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH ?%d AND rowid > ?1 AND rowid < ?2 LIMIT ?3)`, i, i+4)
	}
	read := make([]int, len(missing))
	if err := s.each(ctx, "search: term counts", strings.Join(counts, " UNION ALL "), args, func(sc scanner) error {
		var i, n int
		err := sc.Scan(&i, &n)
		if err == nil && i >= 0 && i < len(read) {
			read[i] = n
		}
		return err
	}); err != nil {
		return nil, err
	}
	s.terms.mu.Lock()
	for i, t := range missing {
		s.terms.n[key(t)] = read[i]
		count[t] = read[i]
	}
	s.terms.mu.Unlock()
	return count, nil
}

const (
	termCountTTL  = 30 * time.Second
	maxTermCounts = 1 << 16
)

// termCountCache holds recent term counts (termCounts), by the tenant's
// range and the term.
type termCountCache struct {
	mu    sync.Mutex
	n     map[string]int
	since time.Time
}

// searchSQL ranks the best ?4 rows of the index for the match ?2 within
// the tenant's range of rowids (?5, ?6) and joins them to their episodes
// (of tenant ?1), best first, with whether each was recorded by ?3.
//
// It orders by bm25() itself, not by FTS5's rank column: for ORDER BY
// rank FTS5 sorts the matching rows by a statement of its own that
// computes bm25 twice a row, and computes it again each time the rank
// of a row it returns is read. Sorted by SQLite, each row's bm25 is
// computed once. The order and the scores are the same (compared on
// 6,000 searches of `sgam bench http`'s questions); on that benchmark's
// settled 1,000,000-fact store the statement took 0.27 ms against 0.38.
// TestSearchPlan keeps the sort SQLite's.
var searchSQL = `SELECT ` + episodeColumnsIn("e") + `, -m.score, e.recorded_at <= ?3
		FROM (SELECT rowid, bm25(search_fts) score FROM search_fts WHERE search_fts MATCH ?2 AND rowid > ?5 AND rowid < ?6 ORDER BY score LIMIT ?4) m
		JOIN search_docs d ON d.doc = m.rowid
		JOIN episodes e ON e.tenant = d.tenant AND e.episode_id = d.episode_id
		WHERE d.tenant = ?1
		ORDER BY m.score`

// search ranks the best depth rows of the index and returns the first
// limit of them recorded by knownAt, and how many rows were ranked.
func (s *db) search(ctx context.Context, tenant, match string, lo, hi, knownAt int64, limit, depth int) (out []sgam.EpisodeHit, ranked int, err error) {
	out = make([]sgam.EpisodeHit, 0, min(limit, depth))
	var score float64
	var known bool
	rows := newEpisodeScanIn(tenant, nil, []any{&score, &known})
	err = s.each(ctx, "search", searchSQL, []any{tenant, match, knownAt, depth, lo, hi}, func(sc scanner) error {
		e, err := rows.scan(sc)
		if err != nil {
			return err
		}
		ranked++
		if known && len(out) < limit {
			out = append(out, sgam.EpisodeHit{Episode: e, Score: score})
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, ranked, nil
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
	if err := s.queryRow(long(ctx), `SELECT count(*) FROM episodes WHERE ?1 = '' OR tenant = ?1`, tenant).Scan(&total); err != nil {
		return 0, mapRead("reindex", err)
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
	case errors.Is(err, sql.ErrNoRows):
		err = x.QueryRowContext(ctx, `SELECT tenant, episode_id FROM episodes WHERE `+after+`
			ORDER BY tenant DESC, episode_id DESC LIMIT 1`, tenant, cur[0], cur[1], first).Scan(&hi[0], &hi[1])
		if errors.Is(err, sql.ErrNoRows) {
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
		// Each episode the next rowid of its tenant's range.
		`INSERT INTO search_docs (doc, tenant, episode_id)
			SELECT coalesce((SELECT max(doc) FROM search_docs WHERE doc > st.n * 4294967296 AND doc < (st.n + 1) * 4294967296), st.n * 4294967296)
				+ row_number() OVER (PARTITION BY e.tenant ORDER BY e.episode_id), e.tenant, e.episode_id
			FROM episodes e JOIN search_tenants st ON st.tenant = e.tenant WHERE ` + in,
		`INSERT INTO search_fts (rowid, content)
			SELECT d.doc, e.content FROM episodes e
			JOIN search_docs d ON d.tenant = e.tenant AND d.episode_id = e.episode_id WHERE ` + in,
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
