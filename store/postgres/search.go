package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// tsquery is the text search query of a search: any of the terms. Terms
// are words of letters and digits (words.Terms), so none is an operator.
func tsquery(terms []string) string { return strings.Join(terms, " | ") }

// Search implements engine.Reader, in three steps (two statements): count
// the tenant's episodes that hold each term (search_terms, migration 0008;
// a count stops past words.MaxRankedRows, all Selective needs to know),
// keep the rarest terms (words.Selective), and rank the episodes that hold
// them. Every step reads the tenant's rows through a btree, so a search
// costs about the rows its terms hold, not the tenant's episodes.
// ts_rank's normalization 1 divides by the log of the length, as BM25
// favours short matching texts.
func (s *db) Search(ctx context.Context, tenant string, terms []string, knownAt int64, limit int) ([]sgam.EpisodeHit, error) {
	out := []sgam.EpisodeHit{}
	err := s.readEach(ctx, tenant, "search", func(tx querier) error {
		selective, err := selectiveTerms(ctx, tx, tenant, terms)
		if err != nil || len(selective) == 0 {
			return err
		}
		// Each candidate's episode by its primary key, in a LATERAL ...
		// LIMIT 1 that the planner keeps an index probe: as a join, before
		// the tables' first ANALYZE, it may hash the tenant's episodes.
		rows, err := tx.Query(ctx, `SELECT `+episodeColumnsOf("e")+`, ts_rank(e.search, q, 1)::float8 AS score
			FROM (SELECT DISTINCT episode_id FROM search_terms
				WHERE tenant_id = $1 AND term = ANY (tsvector_to_array(to_tsvector('english', $5)))) c
			CROSS JOIN LATERAL (SELECT * FROM episodes x WHERE x.tenant_id = $1 AND x.episode_id = c.episode_id LIMIT 1) e,
			to_tsquery('english', $2) q
			WHERE e.search @@ q AND e.recorded_at <= $3
			ORDER BY score DESC, e.episode_id LIMIT $4`,
			tenant, tsquery(selective), sgam.FromMicros(knownAt), limit, strings.Join(selective, " "))
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var h sgam.EpisodeHit
			if h.Episode, err = scanEpisode(rows, &h.Score); err != nil {
				return err
			}
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, err
}

// selectiveTerms returns the terms worth searching for (words.Selective),
// by the tenant's episodes that hold each term's lexemes (none for a stop
// word). A count stops past words.MaxRankedRows: a term that common is
// left out however much commoner it is.
func selectiveTerms(ctx context.Context, tx querier, tenant string, terms []string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT q.i, coalesce(sum(c.n), 0)::bigint
		FROM unnest($2::text[]) WITH ORDINALITY AS q(term, i)
		LEFT JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', q.term))) l(lexeme) ON true
		LEFT JOIN LATERAL (SELECT count(*) AS n FROM (SELECT 1 FROM search_terms s
			WHERE s.tenant_id = $1 AND s.term = l.lexeme LIMIT $3) x) c ON true
		GROUP BY q.i`, tenant, terms, words.MaxRankedRows+1)
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(terms))
	for rows.Next() {
		var i, n int64
		if err := rows.Scan(&i, &n); err != nil {
			rows.Close()
			return nil, err
		}
		counts[i-1] = int(n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return words.Selective(terms, counts), nil
}

// reindexBatch is how many episodes one transaction of Reindex updates.
const reindexBatch = 2000

// Reindex implements engine.Driver. The tsvector is generated from the
// content, so writing the content again recomputes it (after a change of
// the text search configuration, say), and the trigger its terms, in
// batches of (tenant_id, episode_id) order, each its own transaction.
func (s *db) Reindex(ctx context.Context, tenant string, progress func(done, total int)) (int, error) {
	var total int
	err := s.read(ctx, tenant, "reindex", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM episodes WHERE $1 = '' OR tenant_id = $1`, tenant).Scan(&total)
	})
	if err != nil {
		return 0, err
	}
	progress(0, total)
	done := 0
	var cur [2]string
	for first := true; ; first = false {
		var n int
		var last []string
		err := s.inTx(ctx, pgx.TxOptions{}, "reindex", func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
				return err
			}
			// The batch's last key is read in the database's own order
			// (its collation), which the next batch continues from.
			err := tx.QueryRow(ctx, `WITH batch AS (
				SELECT tenant_id, episode_id FROM episodes
				WHERE ($1 = '' OR tenant_id = $1) AND ($4 OR (tenant_id, episode_id) > ($2, $3))
				ORDER BY tenant_id, episode_id LIMIT $5 FOR NO KEY UPDATE),
			upd AS (
				UPDATE episodes e SET content = e.content FROM batch b
				WHERE e.tenant_id = b.tenant_id AND e.episode_id = b.episode_id RETURNING 1)
			SELECT (SELECT count(*) FROM upd), coalesce(max(ARRAY[tenant_id, episode_id]), ARRAY['', ''])
			FROM batch`, tenant, cur[0], cur[1], first, reindexBatch).Scan(&n, &last)
			return err
		})
		if err != nil {
			return done, err
		}
		if n == 0 {
			break
		}
		cur = [2]string{last[0], last[1]}
		done += n
		progress(min(done, total), total)
		if n < reindexBatch {
			break
		}
	}
	// Writing the content again replaced each episode's terms of its old
	// tsvector with those of its new one; terms that were not either (of
	// an episode that is gone, or written by something other than sgam:
	// what sgam check reports) go here.
	err = s.inTx(ctx, pgx.TxOptions{}, "reindex", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM search_terms t WHERE ($1 = '' OR t.tenant_id = $1) AND NOT EXISTS (
			SELECT 1 FROM episodes e WHERE e.tenant_id = t.tenant_id AND e.episode_id = t.episode_id AND t.term = ANY (tsvector_to_array(e.search)))`, tenant)
		return err
	})
	return done, err
}
