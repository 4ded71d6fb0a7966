package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sgam-dev/sgam"
)

// InsertExtraction implements engine.Tx.
func (t *tx) InsertExtraction(x sgam.Extraction) error {
	body, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("store extraction: %w", err)
	}
	_, err = t.exec("store extraction", `INSERT INTO extractions (tenant, extraction_id, episode_id, recorded_at, status, prompt_digest, tokens, record)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, x.Tenant, x.ID, x.EpisodeID, sgam.Micros(x.At), x.Status, x.PromptDigest, x.TokensIn+x.TokensOut, body)
	return err
}

// Extractions implements engine.Reader.
func (s *db) Extractions(ctx context.Context, tenant, episodeID string) ([]sgam.Extraction, error) {
	out := []sgam.Extraction{}
	err := s.each(ctx, "list extractions", `SELECT record FROM extractions WHERE tenant = ? AND episode_id = ? ORDER BY recorded_at, rowid`,
		[]any{tenant, episodeID}, func(sc scanner) error {
			x, err := scanExtraction(sc)
			out = append(out, x)
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExtractionByPrompt implements engine.Reader.
func (s *db) ExtractionByPrompt(ctx context.Context, tenant, digest string) (sgam.Extraction, bool, error) {
	x, err := scanExtraction(s.queryRow(ctx, `SELECT record FROM extractions
		WHERE tenant = ? AND prompt_digest = ? AND status <> ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1`, tenant, digest, sgam.ExtractionFailed))
	x, ok, err := found(x, err, "read extraction")
	return x, ok, mapErr(err)
}

// TokensSpent implements engine.Reader.
func (s *db) TokensSpent(ctx context.Context, tenant string, since int64) (int, error) {
	var n int
	// total() is a float, which cannot overflow as sum() would: the sum
	// saturates instead. The day's extractions may be many: a long read.
	err := s.queryRow(long(ctx), `SELECT CAST(min(total(tokens), ?) AS INTEGER) FROM extractions WHERE tenant = ? AND recorded_at >= ?`,
		sgam.MaxTokenCount, tenant, since).Scan(&n)
	return n, mapRead("sum tokens", err)
}

func scanExtraction(sc scanner) (sgam.Extraction, error) {
	var x sgam.Extraction
	var body []byte
	if err := sc.Scan(&body); err != nil {
		return x, err
	}
	if err := json.Unmarshal(body, &x); err != nil {
		return x, fmt.Errorf("a stored extraction record does not parse: %w", err)
	}
	return x, nil
}

// Extracted implements engine.Tx.
func (t *tx) Extracted(tenant, id string) (bool, error) {
	var one int
	err := t.queryRow(`SELECT 1 FROM extractions WHERE tenant = ? AND episode_id = ? AND status <> ? LIMIT 1`,
		tenant, id, sgam.ExtractionFailed).Scan(&one)
	_, ok, err := found(one, err, "read extractions")
	return ok, err
}

// QueueExtraction implements engine.Tx.
func (t *tx) QueueExtraction(tenant string, ids []string, again bool, at, due int64) error {
	for _, id := range ids {
		if _, err := t.exec("queue extraction", `INSERT INTO extract_queue (tenant, episode_id, again, queued_at, due_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, episode_id) DO UPDATE SET again = max(again, excluded.again), queued_at = excluded.queued_at, due_at = excluded.due_at`,
			tenant, id, again, at, due); err != nil {
			return err
		}
	}
	return nil
}

// SettleQueued implements engine.Tx.
func (t *tx) SettleQueued(tenant, id string, ended bool, at int64) error {
	if ended {
		_, err := t.exec("settle queued extraction", `DELETE FROM extract_queue WHERE tenant = ? AND episode_id = ? AND NOT again`, tenant, id)
		return err
	}
	_, err := t.exec("settle queued extraction", `UPDATE extract_queue SET due_at = ? WHERE tenant = ? AND episode_id = ? AND due_at > ?`, at, tenant, id, at)
	return err
}

// Dequeue implements engine.Tx.
func (t *tx) Dequeue(q []sgam.QueuedExtraction) error {
	for _, e := range q {
		if _, err := t.exec("dequeue extraction", `DELETE FROM extract_queue WHERE tenant = ? AND episode_id = ? AND queued_at = ?`,
			e.Tenant, e.EpisodeID, sgam.Micros(e.QueuedAt)); err != nil {
			return err
		}
	}
	return nil
}

// SetBudget implements engine.Tx.
func (t *tx) SetBudget(tenant string, tokensPerDay int) error {
	if tokensPerDay == 0 {
		_, err := t.exec("set budget", `DELETE FROM budgets WHERE tenant = ?`, tenant)
		return err
	}
	_, err := t.exec("set budget", `INSERT INTO budgets (tenant, tokens_per_day) VALUES (?, ?)
		ON CONFLICT (tenant) DO UPDATE SET tokens_per_day = excluded.tokens_per_day`, tenant, tokensPerDay)
	return err
}

// QueuedExtractions implements engine.Reader.
func (s *db) QueuedExtractions(ctx context.Context, limit int, dueBy int64) ([]sgam.QueuedExtraction, error) {
	out := []sgam.QueuedExtraction{}
	err := s.each(ctx, "list queued extractions", `SELECT tenant, episode_id, again, queued_at, due_at FROM extract_queue WHERE due_at <= ?
		ORDER BY due_at, tenant, episode_id LIMIT ?`, []any{dueBy, limit}, func(sc scanner) error {
		var q sgam.QueuedExtraction
		var at, due int64
		err := sc.Scan(&q.Tenant, &q.EpisodeID, &q.Again, &at, &due)
		q.QueuedAt, q.DueAt = sgam.FromMicros(at), sgam.FromMicros(due)
		out = append(out, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TokensPerDay implements engine.Reader.
func (s *db) TokensPerDay(ctx context.Context, tenant string) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT tokens_per_day FROM budgets WHERE tenant = ?`, tenant).Scan(&n)
	n, _, err = found(n, err, "read budget")
	return n, mapErr(err)
}
