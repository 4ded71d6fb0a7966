package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
)

const episodeColumns = `tenant_id, episode_id, session, kind, content, occurred_at, recorded_at, metadata, coalesce(idempotency_key, ''), coalesce(retention, '')`

func scanEpisode(row pgx.Row) (sgam.Episode, error) {
	var e sgam.Episode
	var metadata *string
	if err := row.Scan(&e.Tenant, &e.ID, &e.Session, &e.Kind, &e.Content, &e.OccurredAt, &e.RecordedAt, &metadata, &e.IdempotencyKey, &e.Retention); err != nil {
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

// AddEpisode implements sgam.Store.
func (s *Store) AddEpisode(ctx context.Context, e sgam.Episode) (sgam.Episode, error) {
	explicitTime := !e.OccurredAt.IsZero()
	now := time.Now()
	if s.clock != nil {
		now = s.clock.Now()
	}
	e, err := s.limits.CheckNewEpisode(e, now)
	if err != nil {
		return e, err
	}
	// The class must be an identifier, and one the schema in force declares.
	if err := s.readGov().CheckRetention(e.Retention); err != nil {
		return e, err
	}
	if e.ID == "" && e.IdempotencyKey == "" {
		e.ID = ledger.NewEpisodeID()
	}
	var out sgam.Episode
	err = s.inTx(ctx, pgx.TxOptions{}, "add episode", func(tx pgx.Tx) error {
		in := e
		if _, err := tx.Exec(ctx, scopeSQL, in.Tenant); err != nil {
			return err
		}
		if in.IdempotencyKey != "" {
			have, err := scanEpisode(tx.QueryRow(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND idempotency_key = $2`, in.Tenant, in.IdempotencyKey))
			switch {
			case err == nil:
				if in.ID == "" {
					in.ID = have.ID
				}
				if !sameEpisode(have, in, explicitTime) {
					return sgam.Errorf(sgam.Conflict, "idempotency_key", "episode %s was already captured under idempotency key %q with different content", have.ID, in.IdempotencyKey)
				}
				out = have
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
			if in.ID == "" {
				in.ID = ledger.NewEpisodeID()
			}
		}
		have, err := scanEpisode(tx.QueryRow(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = $2 FOR NO KEY UPDATE`, in.Tenant, in.ID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			recorded, err := s.instant(ctx, tx)
			if err != nil {
				return err
			}
			in.RecordedAt = recorded
			_, err = tx.Exec(ctx, `INSERT INTO episodes (tenant_id, episode_id, session, kind, content, occurred_at, recorded_at, metadata, idempotency_key, retention)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, in.Tenant, in.ID, in.Session, in.Kind, in.Content, in.OccurredAt,
				in.RecordedAt, nullString(string(in.Metadata)), nullString(in.IdempotencyKey), nullString(in.Retention))
			if err != nil {
				return err
			}
			out = in
			return nil
		case err != nil:
			return err
		case ledger.IsPlaceholder(have):
			// A write named this episode before it was captured: fill it in,
			// keeping when the store first heard of it.
			in.RecordedAt = have.RecordedAt
			_, err = tx.Exec(ctx, `UPDATE episodes SET session = $3, kind = $4, content = $5, occurred_at = $6, metadata = $7, idempotency_key = $8, retention = $9
				WHERE tenant_id = $1 AND episode_id = $2`, in.Tenant, in.ID, in.Session, in.Kind, in.Content, in.OccurredAt,
				nullString(string(in.Metadata)), nullString(in.IdempotencyKey), nullString(in.Retention))
			out = in
			return err
		case sameEpisode(have, in, explicitTime):
			out = have
			return nil
		default:
			return sgam.Errorf(sgam.Conflict, "episode_id", "episode %s already exists with different content", in.ID)
		}
	})
	return out, err
}

// instant is the transaction time of a write that loads no fact rows.
func (s *Store) instant(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	var now time.Time
	var floor int64
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp(), (SELECT value FROM sgam_meta WHERE key = 'tx_floor')`).Scan(&now, &floor); err != nil {
		return now, err
	}
	if s.clock != nil {
		now = s.clock.Now()
	}
	us := max(sgam.Micros(now), s.txHigh.Load(), floor)
	raise(&s.txHigh, us)
	return sgam.FromMicros(us), nil
}

// sameEpisode is ledger.SameEpisode, the retention class included.
func sameEpisode(have, e sgam.Episode, explicitTime bool) bool {
	return ledger.SameEpisode(have, e, explicitTime) && have.Retention == e.Retention
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Episode implements sgam.Store.
func (s *Store) Episode(ctx context.Context, tenant, id string) (sgam.Episode, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return sgam.Episode{}, err
	}
	if err := sgam.CheckEpisodeID("episode_id", id); err != nil {
		return sgam.Episode{}, err
	}
	bt := newBatch(tenant)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = $2`, tenant, id)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return sgam.Episode{}, mapErr("get episode", err)
	}
	e, err := scanEpisode(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
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
	bt := newBatch(q.Tenant)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND ($3 = '' OR session = $3)
		ORDER BY occurred_at, episode_id LIMIT $2`, q.Tenant, limit, q.Session)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return nil, mapErr("list episodes", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, mapErr("list episodes", err)
	}
	out, err := collectEpisodes(rows)
	return out, mapErr("list episodes", err)
}
