package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/storetest"
)

// BenchmarkNearest: CI=true go test ./store/postgres -run '^$' -bench
// Nearest -sgam.vectors=10000 -sgam.dims=64,1536
func BenchmarkNearest(b *testing.B) {
	storetest.BenchmarkNearest(b, newStore)
}

// TestEmbeddingsRowLevelSecurity: raw SQL on the store's role sees only
// the vectors of the tenant its transaction set, and cannot write
// another tenant's.
func TestEmbeddingsRowLevelSecurity(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer s.Close()
	for _, tenant := range []string{"acme", "globex"} {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: tenant, ID: "e1", Content: "hello"})
		require.NoError(t, err)
	}
	n, err := s.PutEmbeddings(ctx, "m", []sgam.EpisodeVector{
		{Tenant: "acme", EpisodeID: "e1", Vector: []float32{1, 0}}, {Tenant: "globex", EpisodeID: "e1", Vector: []float32{0, 1}}})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	count := func(setup string) int {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		if setup != "" {
			_, err := tx.Exec(ctx, setup)
			require.NoError(t, err)
		}
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM embeddings`).Scan(&n)) // no tenant filter
		return n
	}
	require.Zero(t, count(""), "no tenant set: nothing")
	require.Equal(t, 1, count(`SELECT set_config('sgam.tenant', 'acme', true)`))
	require.Equal(t, 2, count(`SELECT set_config('sgam.scope', 'all', true)`))

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT set_config('sgam.tenant', 'acme', true)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO embeddings (tenant_id, model, episode_id, dims, vector, norm, recorded_at)
		VALUES ('globex', 'm2', 'e1', 1, '\x0000803f', 1, now())`)
	require.ErrorContains(t, err, "row-level security")
}
