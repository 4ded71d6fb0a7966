package sqlite

import (
	"context"
	"database/sql"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
)

const episodeColumns = `tenant, episode_id, session, kind, content, occurred_at, recorded_at, metadata, coalesce(idempotency_key, ''), coalesce(retention, '')`

func scanEpisode(sc scanner) (sgam.Episode, error) {
	var e sgam.Episode
	var occurred, recorded int64
	var metadata []byte
	if err := sc.Scan(&e.Tenant, &e.ID, &e.Session, &e.Kind, &e.Content, &occurred, &recorded, &metadata, &e.IdempotencyKey, &e.Retention); err != nil {
		return e, err
	}
	e.OccurredAt = sgam.FromMicros(occurred)
	e.RecordedAt = sgam.FromMicros(recorded)
	if metadata != nil {
		e.Metadata = metadata
	}
	return e, nil
}

// AddEpisode implements sgam.Store.
func (s *Store) AddEpisode(ctx context.Context, e sgam.Episode) (sgam.Episode, error) {
	explicitTime := !e.OccurredAt.IsZero()
	now := s.clock.Now()
	e, err := s.limits.CheckNewEpisode(e, now)
	if err != nil {
		return e, err
	}
	if err := (ledger.Gov{}).CheckRetention(e.Retention); err != nil {
		return e, err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return e, err
	}
	defer tx.rollback()
	if e.Retention != "" {
		// The class must be one the schema in force declares.
		gov, err := s.currentGov(ctx)
		if err != nil {
			return e, err
		}
		if err := gov.CheckRetention(e.Retention); err != nil {
			return e, err
		}
	}

	if e.IdempotencyKey != "" {
		have, err := scanEpisode(s.w.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant = ?1 AND idempotency_key = ?2`, e.Tenant, e.IdempotencyKey))
		switch {
		case err == nil:
			if e.ID == "" {
				e.ID = have.ID
			}
			if !sameEpisode(have, e, explicitTime) {
				return e, sgam.Errorf(sgam.Conflict, "idempotency_key", "episode %s was already captured under idempotency key %q with different content", have.ID, e.IdempotencyKey)
			}
			return have, nil
		case err != sql.ErrNoRows:
			return e, mapErr("add episode", err)
		}
	}
	if e.ID == "" {
		e.ID = ledger.NewEpisodeID()
	}
	have, err := scanEpisode(s.w.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant = ?1 AND episode_id = ?2`, e.Tenant, e.ID))
	switch {
	case err == sql.ErrNoRows:
		recorded, err := tx.now()
		if err != nil {
			return e, err
		}
		e.RecordedAt = sgam.FromMicros(recorded)
		if _, err := s.w.ExecContext(ctx, `INSERT INTO episodes (tenant, episode_id, session, kind, content, occurred_at, recorded_at, metadata, idempotency_key, retention)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.Tenant, e.ID, e.Session, e.Kind, e.Content, sgam.Micros(e.OccurredAt),
			sgam.Micros(e.RecordedAt), nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention)); err != nil {
			return e, mapErr("add episode", err)
		}
	case err != nil:
		return e, mapErr("add episode", err)
	case ledger.IsPlaceholder(have):
		// A write named this episode before it was captured: fill it in,
		// keeping when the store first heard of it.
		e.RecordedAt = have.RecordedAt
		if _, err := s.w.ExecContext(ctx, `UPDATE episodes SET session = ?, kind = ?, content = ?, occurred_at = ?, metadata = ?, idempotency_key = ?, retention = ?
			WHERE tenant = ? AND episode_id = ?`, e.Session, e.Kind, e.Content, sgam.Micros(e.OccurredAt),
			nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention), e.Tenant, e.ID); err != nil {
			return e, mapErr("add episode", err)
		}
	case sameEpisode(have, e, explicitTime):
		return have, nil
	default:
		return e, sgam.Errorf(sgam.Conflict, "episode_id", "episode %s already exists with different content", e.ID)
	}
	if err := tx.commit(nil); err != nil {
		return e, err
	}
	return e, nil
}

// sameEpisode is ledger.SameEpisode, the retention class included.
func sameEpisode(have, e sgam.Episode, explicitTime bool) bool {
	return ledger.SameEpisode(have, e, explicitTime) && have.Retention == e.Retention
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Episode implements sgam.Store.
func (s *Store) Episode(ctx context.Context, tenant, id string) (sgam.Episode, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return sgam.Episode{}, err
	}
	if err := sgam.CheckEpisodeID("episode_id", id); err != nil {
		return sgam.Episode{}, err
	}
	e, err := scanEpisode(s.rst.episode.QueryRowContext(ctx, tenant, id))
	if err == sql.ErrNoRows {
		return e, sgam.Errorf(sgam.NotFound, "episode_id", "tenant %s has no episode %s", tenant, id)
	}
	return e, mapErr("get episode", err)
}

// Episodes implements sgam.Store.
func (s *Store) Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error) {
	q, err := q.Check()
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	query := `SELECT ` + episodeColumns + ` FROM episodes WHERE tenant = ?1 ORDER BY occurred_at, episode_id LIMIT ?2`
	args := []any{q.Tenant, limit}
	if q.Session != "" {
		query = `SELECT ` + episodeColumns + ` FROM episodes WHERE tenant = ?1 AND session = ?3 ORDER BY occurred_at, episode_id LIMIT ?2`
		args = append(args, q.Session)
	}
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, mapErr("list episodes", err)
	}
	defer rows.Close()
	out := []sgam.Episode{}
	for rows.Next() {
		e, err := scanEpisode(rows)
		if err != nil {
			return nil, mapErr("list episodes", err)
		}
		out = append(out, e)
	}
	return out, mapErr("list episodes", rows.Err())
}
