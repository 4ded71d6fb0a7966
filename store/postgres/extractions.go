package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
)

// InsertExtraction implements engine.Tx.
func (t *tx) InsertExtraction(x sgam.Extraction) error {
	body, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("store extraction: %w", err)
	}
	_, err = t.exec("store extraction", `INSERT INTO extractions (tenant_id, extraction_id, episode_id, recorded_at, status, prompt_digest, tokens, record)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, x.Tenant, x.ID, x.EpisodeID, x.At, x.Status, x.PromptDigest, x.TokensIn+x.TokensOut, string(body))
	return err
}

// Extractions implements engine.Reader.
func (s *db) Extractions(ctx context.Context, tenant, episodeID string) ([]sgam.Extraction, error) {
	var out []sgam.Extraction
	err := s.readEach(ctx, tenant, "list extractions", func(tx querier) error {
		rows, err := tx.Query(ctx, `SELECT record FROM extractions WHERE tenant_id = $1 AND episode_id = $2 ORDER BY recorded_at, seq`, tenant, episodeID)
		if err != nil {
			return err
		}
		bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		out = make([]sgam.Extraction, 0, len(bodies))
		for _, b := range bodies {
			x, err := parseExtraction(b)
			if err != nil {
				return err
			}
			out = append(out, x)
		}
		return nil
	})
	return out, err
}

// ExtractionByPrompt implements engine.Reader.
func (s *db) ExtractionByPrompt(ctx context.Context, tenant, digest string) (x sgam.Extraction, found bool, err error) {
	err = s.readEach(ctx, tenant, "read extraction", func(tx querier) error {
		var body string
		err := tx.QueryRow(ctx, `SELECT record FROM extractions WHERE tenant_id = $1 AND prompt_digest = $2 AND status <> $3
			ORDER BY recorded_at DESC, seq DESC LIMIT 1`, tenant, digest, sgam.ExtractionFailed).Scan(&body)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		x, err = parseExtraction(body)
		found = err == nil
		return err
	})
	return x, found, err
}

// TokensSpent implements engine.Reader.
func (s *db) TokensSpent(ctx context.Context, tenant string, since int64) (int, error) {
	var n int64
	err := s.read(ctx, tenant, "sum tokens", func(tx pgx.Tx) error {
		// sum(bigint) is numeric, which cannot overflow: the sum saturates.
		return tx.QueryRow(ctx, `SELECT least(coalesce(sum(tokens), 0), $3)::bigint FROM extractions WHERE tenant_id = $1 AND recorded_at >= $2`,
			tenant, sgam.FromMicros(since), sgam.MaxTokenCount).Scan(&n)
	})
	return int(n), err
}

func parseExtraction(body string) (sgam.Extraction, error) {
	var x sgam.Extraction
	if err := json.Unmarshal([]byte(body), &x); err != nil {
		return x, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("a stored extraction record does not parse: %v", err), Err: err}
	}
	return x, nil
}

// Extracted implements engine.Tx.
func (t *tx) Extracted(tenant, id string) (bool, error) {
	var one int
	err := t.queryRow(`SELECT 1 FROM extractions WHERE tenant_id = $1 AND episode_id = $2 AND status <> $3 LIMIT 1`, tenant, id, sgam.ExtractionFailed).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// QueueExtraction implements engine.Tx.
func (t *tx) QueueExtraction(tenant string, ids []string, again bool, at, due int64) error {
	_, err := t.exec("queue extraction", `INSERT INTO extract_queue (tenant_id, episode_id, again, queued_at, due_at) SELECT $1, id, $3, $4, $5 FROM unnest($2::text[]) AS id
		ON CONFLICT (tenant_id, episode_id) DO UPDATE SET again = extract_queue.again OR excluded.again, queued_at = excluded.queued_at, due_at = excluded.due_at`,
		tenant, ids, again, sgam.FromMicros(at), sgam.FromMicros(due))
	return err
}

// SettleQueued implements engine.Tx.
func (t *tx) SettleQueued(tenant, id string, ended bool, at int64) error {
	if ended {
		_, err := t.exec("settle queued extraction", `DELETE FROM extract_queue WHERE tenant_id = $1 AND episode_id = $2 AND NOT again`, tenant, id)
		return err
	}
	_, err := t.exec("settle queued extraction", `UPDATE extract_queue SET due_at = $3 WHERE tenant_id = $1 AND episode_id = $2 AND due_at > $3`,
		tenant, id, sgam.FromMicros(at))
	return err
}

// Dequeue implements engine.Tx.
func (t *tx) Dequeue(q []sgam.QueuedExtraction) error {
	tenants, ids, ats := make([]string, len(q)), make([]string, len(q)), make([]time.Time, len(q))
	for i, e := range q {
		tenants[i], ids[i], ats[i] = e.Tenant, e.EpisodeID, e.QueuedAt
	}
	_, err := t.exec("dequeue extraction", `DELETE FROM extract_queue q USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS d(tenant_id, episode_id, queued_at)
		WHERE q.tenant_id = d.tenant_id AND q.episode_id = d.episode_id AND q.queued_at = d.queued_at`, tenants, ids, ats)
	return err
}

// SetBudget implements engine.Tx.
func (t *tx) SetBudget(tenant string, tokensPerDay int) error {
	if tokensPerDay == 0 {
		_, err := t.exec("set budget", `DELETE FROM budgets WHERE tenant_id = $1`, tenant)
		return err
	}
	_, err := t.exec("set budget", `INSERT INTO budgets (tenant_id, tokens_per_day) VALUES ($1, $2)
		ON CONFLICT (tenant_id) DO UPDATE SET tokens_per_day = excluded.tokens_per_day`, tenant, tokensPerDay)
	return err
}

// QueuedExtractions implements engine.Reader.
func (s *db) QueuedExtractions(ctx context.Context, limit int, dueBy int64) ([]sgam.QueuedExtraction, error) {
	var out []sgam.QueuedExtraction
	err := s.read(ctx, "", "list queued extractions", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, episode_id, again, queued_at, due_at FROM extract_queue WHERE due_at <= $1
			ORDER BY due_at, tenant_id, episode_id LIMIT $2`, sgam.FromMicros(dueBy), limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.QueuedExtraction, error) {
			var q sgam.QueuedExtraction
			err := r.Scan(&q.Tenant, &q.EpisodeID, &q.Again, &q.QueuedAt, &q.DueAt)
			q.QueuedAt, q.DueAt = q.QueuedAt.UTC(), q.DueAt.UTC()
			return q, err
		})
		return err
	})
	if out == nil {
		out = []sgam.QueuedExtraction{}
	}
	return out, err
}

// TokensPerDay implements engine.Reader.
func (s *db) TokensPerDay(ctx context.Context, tenant string) (int, error) {
	var n int64
	err := s.read(ctx, tenant, "read budget", func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT tokens_per_day FROM budgets WHERE tenant_id = $1`, tenant).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			n = 0
			return nil
		}
		return err
	})
	return int(n), err
}
