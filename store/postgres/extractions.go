package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	err := s.read(ctx, tenant, "list extractions", func(tx pgx.Tx) error {
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
	err = s.read(ctx, tenant, "read extraction", func(tx pgx.Tx) error {
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
		return tx.QueryRow(ctx, `SELECT coalesce(sum(tokens), 0) FROM extractions WHERE tenant_id = $1 AND recorded_at >= $2`,
			tenant, sgam.FromMicros(since)).Scan(&n)
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
