package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

// Episode vectors (migration 0007): bytea rows of little-endian float32s,
// searched exactly. The search ranks in Go (engine.Ranker) over the
// tenant's vectors of the model, which the server sends as they are
// stored. Ranking in SQL instead (the cosine as a sum over unnest of the
// two arrays, ORDER BY it LIMIT k) measured 2.6 times slower on 10,000
// vectors of 64 dimensions (133 ms against 51 ms, both over real[]; the
// sum runs as a subquery per row), and bytea made the Go side 4 times
// faster again (see the migration). A tenant with millions of vectors
// wants pgvector's HNSW index instead (an approximate search), not this
// scan.

// EpisodesToEmbed implements engine.Reader, over every tenant.
func (s *db) EpisodesToEmbed(ctx context.Context, model string, limit int) ([]sgam.Episode, error) {
	bt := newBatch(allTenants)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes e
		WHERE content <> '' AND NOT EXISTS (SELECT 1 FROM embeddings v
			WHERE v.tenant_id = e.tenant_id AND v.model = $1 AND v.episode_id = e.episode_id)
		ORDER BY recorded_at, tenant_id, episode_id LIMIT $2`, model, limit)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return nil, mapErr(fmt.Errorf("episodes to embed: %w", err))
	}
	rows, err := br.Query()
	if err != nil {
		return nil, mapErr(fmt.Errorf("episodes to embed: %w", err))
	}
	out, err := collectEpisodes(rows)
	if err != nil {
		return nil, mapErr(fmt.Errorf("episodes to embed: %w", err))
	}
	return out, nil
}

const dimsSQL = `SELECT dims FROM embeddings WHERE tenant_id = $1 AND model = $2 LIMIT 1`

// EmbeddingDims implements engine.Reader.
func (s *db) EmbeddingDims(ctx context.Context, tenant, model string) (int, bool, error) {
	bt := newBatch(tenant)
	bt.Queue(dimsSQL, tenant, model)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return 0, false, mapErr(fmt.Errorf("read vector dimension: %w", err))
	}
	var dims int
	switch err := br.QueryRow().Scan(&dims); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, mapErr(fmt.Errorf("read vector dimension: %w", err))
	}
	return dims, true, nil
}

// Nearest implements engine.Reader: the ranking, then the kept episodes.
func (s *db) Nearest(ctx context.Context, tenant, model string, q []float32, qNorm float64, knownAt int64, limit int) ([]sgam.EpisodeHit, error) {
	r := engine.NewRanker(q, qNorm, limit)
	if err := s.scanVectors(ctx, tenant, model, len(q), knownAt, r); err != nil {
		return nil, mapErr(fmt.Errorf("nearest episodes: %w", err))
	}
	top := r.Top()
	if len(top) == 0 {
		return []sgam.EpisodeHit{}, nil
	}
	ids := make([]string, len(top))
	for i, v := range top {
		ids[i] = v.EpisodeID
	}
	bt := newBatch(tenant)
	bt.Queue(`SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2)`, tenant, ids)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return nil, mapErr(fmt.Errorf("nearest episodes: %w", err))
	}
	rows, err := br.Query()
	if err != nil {
		return nil, mapErr(fmt.Errorf("nearest episodes: %w", err))
	}
	eps, err := collectEpisodes(rows)
	if err != nil {
		return nil, mapErr(fmt.Errorf("nearest episodes: %w", err))
	}
	byID := make(map[string]sgam.Episode, len(eps))
	for _, e := range eps {
		byID[e.ID] = e
	}
	hits := make([]sgam.EpisodeHit, 0, len(top))
	for _, v := range top {
		if e, ok := byID[v.EpisodeID]; ok { // else forgotten since the scan
			hits = append(hits, sgam.EpisodeHit{Episode: e, Score: v.Score})
		}
	}
	return hits, nil
}

// scanVectors feeds r every vector of tenant and model (of dims
// dimensions) whose episode was recorded by knownAt. The columns are read
// in place, in their binary wire format (a bytea is its bytes, a float8
// eight big-endian ones): nothing is allocated per row.
func (s *db) scanVectors(ctx context.Context, tenant, model string, dims int, knownAt int64, r *engine.Ranker) error {
	bt := newBatch(tenant)
	bt.Queue(`SELECT episode_id, vector, norm FROM embeddings
		WHERE tenant_id = $1 AND model = $2 AND dims = $3 AND recorded_at <= $4`,
		tenant, model, dims, sgam.FromMicros(knownAt))
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	fd := rows.FieldDescriptions()
	inPlace := len(fd) == 3 && fd[1].Format == pgx.BinaryFormatCode && fd[2].Format == pgx.BinaryFormatCode
	for rows.Next() {
		raw := rows.RawValues()
		if inPlace && len(raw[2]) == 8 {
			r.Add(raw[0], raw[1], math.Float64frombits(binary.BigEndian.Uint64(raw[2])))
			continue
		}
		var id string
		var vec []byte
		var norm float64
		if err := rows.Scan(&id, &vec, &norm); err != nil {
			return err
		}
		r.Add([]byte(id), vec, norm)
	}
	return rows.Err()
}

// LockEmbeddings implements engine.Tx: a transaction-scoped advisory lock
// of the tenant's vectors of the model (in the bigint space of the key
// locks: a collision only makes two writers wait for each other).
func (t *tx) LockEmbeddings(tenant, model string) (int, bool, error) {
	h := fnv.New64a()
	h.Write([]byte("embeddings\x1f" + tenant + "\x1f" + model))
	if _, err := t.exec("lock vectors", `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
		return 0, false, err
	}
	var dims int
	switch err := t.queryRow(dimsSQL, tenant, model).Scan(&dims); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read vector dimension: %w", err)
	}
	return dims, true, nil
}

// PutEmbeddings implements engine.Tx: one statement for the batch, whose
// join with episodes takes recorded_at from the episode's row, so that a
// missing (or another) episode inserts nothing.
func (t *tx) PutEmbeddings(model string, vs []engine.Vector) (int, error) {
	n := len(vs)
	tenants, ids := make([]string, n), make([]string, n)
	vectors, norms := make([][]byte, n), make([]float64, n)
	recorded := make([]*time.Time, n)
	for i, v := range vs {
		tenants[i], ids[i], vectors[i], norms[i] = v.Tenant, v.EpisodeID, engine.EncodeLE(v.Values), v.Norm
		if v.RecordedAt != 0 {
			at := sgam.FromMicros(v.RecordedAt)
			recorded[i] = &at
		}
	}
	tag, err := t.exec("store vectors", `INSERT INTO embeddings (tenant_id, model, episode_id, dims, vector, norm, recorded_at)
		SELECT e.tenant_id, $1, e.episode_id, length(v.vector) / 4, v.vector, v.norm, e.recorded_at
		FROM unnest($2::text[], $3::text[], $4::bytea[], $5::float8[], $6::timestamptz[]) AS v(tenant_id, episode_id, vector, norm, recorded_at)
		JOIN episodes e ON e.tenant_id = v.tenant_id AND e.episode_id = v.episode_id
		WHERE e.content <> '' AND (v.recorded_at IS NULL OR e.recorded_at = v.recorded_at)
		ON CONFLICT (tenant_id, model, episode_id) DO UPDATE SET
			dims = excluded.dims, vector = excluded.vector, norm = excluded.norm, recorded_at = excluded.recorded_at`,
		model, tenants, ids, vectors, norms, recorded)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// DropEmbeddings implements engine.Tx.
func (t *tx) DropEmbeddings(keep string) (int, error) {
	tag, err := t.exec("drop vectors", `DELETE FROM embeddings WHERE $1 = '' OR model <> $1`, keep)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
