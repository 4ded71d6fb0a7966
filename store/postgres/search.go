package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
)

// tsquery is the text search query of a search: any of the terms. Terms
// are words of letters and digits (words.Terms), so none is an operator.
func tsquery(terms []string) string { return strings.Join(terms, " | ") }

// Search implements engine.Reader. ts_rank's normalization 1 divides by
// the log of the length, as BM25 favours short matching texts.
func (s *db) Search(ctx context.Context, tenant string, terms []string, knownAt int64, limit int) ([]sgam.EpisodeHit, error) {
	out := []sgam.EpisodeHit{}
	err := s.read(ctx, tenant, "search", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+episodeColumns+`, ts_rank(search, q, 1)::float8 AS score
			FROM episodes, to_tsquery('english', $2) q
			WHERE tenant_id = $1 AND search @@ q AND recorded_at <= $3
			ORDER BY score DESC, episode_id LIMIT $4`, tenant, tsquery(terms), sgam.FromMicros(knownAt), limit)
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

// reindexBatch is how many episodes one transaction of Reindex updates.
const reindexBatch = 2000

// Reindex implements engine.Driver. The tsvector is generated from the
// content, so writing the content again recomputes it (after a change of
// the text search configuration, say), in batches of (tenant_id,
// episode_id) order, each its own transaction.
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
	return done, nil
}
