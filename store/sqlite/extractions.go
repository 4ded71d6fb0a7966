package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT record FROM extractions WHERE tenant = ? AND episode_id = ? ORDER BY recorded_at, rowid`, tenant, episodeID)
	if err != nil {
		return nil, mapErr(fmt.Errorf("list extractions: %w", err))
	}
	defer rows.Close()
	out := []sgam.Extraction{}
	for rows.Next() {
		x, err := scanExtraction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, mapErr(rows.Err())
}

// ExtractionByPrompt implements engine.Reader.
func (s *db) ExtractionByPrompt(ctx context.Context, tenant, digest string) (sgam.Extraction, bool, error) {
	x, err := scanExtraction(s.rdb.QueryRowContext(ctx, `SELECT record FROM extractions
		WHERE tenant = ? AND prompt_digest = ? AND status <> ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1`, tenant, digest, sgam.ExtractionFailed))
	x, ok, err := found(x, err, "read extraction")
	return x, ok, mapErr(err)
}

// TokensSpent implements engine.Reader.
func (s *db) TokensSpent(ctx context.Context, tenant string, since int64) (int, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(sum(tokens), 0) FROM extractions WHERE tenant = ? AND recorded_at >= ?`, tenant, since).Scan(&n)
	if err != nil {
		return 0, mapErr(fmt.Errorf("sum tokens: %w", err))
	}
	return n, nil
}

func scanExtraction(sc scanner) (sgam.Extraction, error) {
	var x sgam.Extraction
	var body []byte
	if err := sc.Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return x, err
		}
		return x, mapErr(fmt.Errorf("read extraction: %w", err))
	}
	if err := json.Unmarshal(body, &x); err != nil {
		return x, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("a stored extraction record does not parse: %v", err), Err: err}
	}
	return x, nil
}
