package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
)

// episodeColumns are the columns scanEpisode reads.
var episodeColumns = episodeColumnsOf("")

// episodeColumnsOf is episodeColumns of a table alias.
func episodeColumnsOf(alias string) string {
	if alias != "" {
		alias += "."
	}
	return strings.ReplaceAll(`@tenant_id, @episode_id, @session, @kind, @content, @occurred_at, @recorded_at, @metadata,
		coalesce(@idempotency_key, ''), coalesce(@retention, ''), @subjects`, "@", alias)
}

// scanEpisode scans the episodeColumns of a row, then extra.
func scanEpisode(row pgx.Row, extra ...any) (sgam.Episode, error) {
	var e sgam.Episode
	var metadata *string
	dest := append([]any{&e.Tenant, &e.ID, &e.Session, &e.Kind, &e.Content, &e.OccurredAt, &e.RecordedAt, &metadata, &e.IdempotencyKey, &e.Retention, &e.Subjects}, extra...)
	if err := row.Scan(dest...); err != nil {
		return e, err
	}
	e.OccurredAt, e.RecordedAt = e.OccurredAt.UTC(), e.RecordedAt.UTC()
	if metadata != nil {
		e.Metadata = []byte(*metadata)
	}
	return e, nil
}

func collectEpisodes(rows pgx.Rows) ([]sgam.Episode, error) {
	defer rows.Close()
	out := []sgam.Episode{}
	for rows.Next() {
		e, err := scanEpisode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// EpisodeByID implements engine.Tx: the row is locked until commit.
func (t *tx) EpisodeByID(tenant, id string) (sgam.Episode, bool, error) {
	return foundEpisode(t.queryRow(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = $2 FOR NO KEY UPDATE`, tenant, id))
}

// EpisodeByKey implements engine.Tx.
func (t *tx) EpisodeByKey(tenant, key string) (sgam.Episode, bool, error) {
	return foundEpisode(t.queryRow(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND idempotency_key = $2`, tenant, key))
}

func foundEpisode(row pgx.Row) (sgam.Episode, bool, error) {
	e, err := scanEpisode(row)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return e, false, nil
	case err != nil:
		return e, false, fmt.Errorf("read episode: %w", err)
	}
	return e, true, nil
}

// InsertEpisode implements engine.Tx.
func (t *tx) InsertEpisode(e sgam.Episode) error {
	_, err := t.exec("add episode "+e.ID, `INSERT INTO episodes (tenant_id, episode_id, session, kind, content, occurred_at, recorded_at, metadata, idempotency_key, retention, subjects)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, e.Tenant, e.ID, e.Session, e.Kind, e.Content, e.OccurredAt,
		e.RecordedAt, nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention), nullSubjects(e.Subjects))
	return err
}

// FillPlaceholder implements engine.Tx.
func (t *tx) FillPlaceholder(e sgam.Episode) error {
	_, err := t.exec("add episode "+e.ID, `UPDATE episodes SET session = $3, kind = $4, content = $5, occurred_at = $6, metadata = $7, idempotency_key = $8, retention = $9, subjects = $10
		WHERE tenant_id = $1 AND episode_id = $2`, e.Tenant, e.ID, e.Session, e.Kind, e.Content, e.OccurredAt,
		nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention), nullSubjects(e.Subjects))
	return err
}

// nullSubjects is an episode's subjects as stored: a text[], or NULL.
func nullSubjects(subjects []string) []string {
	if len(subjects) == 0 {
		return nil
	}
	return subjects
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Episode implements engine.Reader.
func (s *db) Episode(ctx context.Context, tenant, id string) (sgam.Episode, bool, error) {
	bt := newBatch(tenant)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = $2`, tenant, id)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return sgam.Episode{}, false, mapErr(fmt.Errorf("get episode: %w", err))
	}
	e, found, err := foundEpisode(br.QueryRow())
	return e, found, mapErr(err)
}

// Episodes implements engine.Reader.
func (s *db) Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error) {
	order := `occurred_at, episode_id`
	if q.Latest {
		order = `occurred_at DESC, episode_id DESC`
	}
	var before, since *time.Time
	if !q.Before.IsZero() {
		before = &q.Before
	}
	if !q.Since.IsZero() {
		since = &q.Since
	}
	bt := newBatch(q.Tenant)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND ($3 = '' OR session = $3)
		AND ($4::timestamptz IS NULL OR occurred_at < $4) AND ($5::timestamptz IS NULL OR occurred_at >= $5)
		ORDER BY `+order+` LIMIT $2`, q.Tenant, q.Limit, q.Session, before, since)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return nil, mapErr(fmt.Errorf("list episodes: %w", err))
	}
	rows, err := br.Query()
	if err != nil {
		return nil, mapErr(fmt.Errorf("list episodes: %w", err))
	}
	out, err := collectEpisodes(rows)
	if err != nil {
		return nil, mapErr(fmt.Errorf("list episodes: %w", err))
	}
	if q.Latest {
		slices.Reverse(out)
	}
	return out, nil
}

// Around implements engine.Reader: for each episode, a lateral pair of
// index scans (the n before it in its session, the n after).
func (s *db) Around(ctx context.Context, tenant string, at []sgam.Episode, n int, knownAt int64) (map[string]sgam.Window, error) {
	ids, sessions, occurred := make([]string, len(at)), make([]string, len(at)), make([]time.Time, len(at))
	for i, e := range at {
		ids[i], sessions[i], occurred[i] = e.ID, e.Session, e.OccurredAt
	}
	out := map[string]sgam.Window{}
	err := s.readEach(ctx, tenant, "episodes around", func(tx querier) error {
		rows, err := tx.Query(ctx, `SELECT t.episode_id, w.side, w.* FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS t(episode_id, session, occurred_at) CROSS JOIN LATERAL (
				(SELECT 0 AS side, `+episodeColumnsOf("x")+` FROM episodes x
				 WHERE x.tenant_id = $1 AND x.session = t.session AND (x.occurred_at, x.episode_id) < (t.occurred_at, t.episode_id) AND x.recorded_at <= $6
				 ORDER BY x.occurred_at DESC, x.episode_id DESC LIMIT $5)
				UNION ALL
				(SELECT 1, `+episodeColumnsOf("x")+` FROM episodes x
				 WHERE x.tenant_id = $1 AND x.session = t.session AND (x.occurred_at, x.episode_id) > (t.occurred_at, t.episode_id) AND x.recorded_at <= $6
				 ORDER BY x.occurred_at, x.episode_id LIMIT $5)) w`, tenant, ids, sessions, occurred, n, sgam.FromMicros(knownAt))
		if err != nil {
			return err
		}
		defer rows.Close()
		clear(out)
		for rows.Next() {
			var target string
			var side, side2 int
			e, err := scanEpisode(prefixRow{rows, []any{&target, &side, &side2}})
			if err != nil {
				return err
			}
			w := out[target]
			if side == 0 {
				w.Before = append(w.Before, e) // nearest first (engine.Reader)
			} else {
				w.After = append(w.After, e)
			}
			out[target] = w
		}
		return rows.Err()
	})
	return out, err
}

// prefixRow scans leading columns into dest before a row's own.
type prefixRow struct {
	row  pgx.Row
	dest []any
}

func (p prefixRow) Scan(dest ...any) error { return p.row.Scan(append(p.dest, dest...)...) }
