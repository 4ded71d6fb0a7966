package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestSearchBackfill: a file written before the search index existed
// (migration 0006) gets every episode indexed when it is opened, with
// progress told as the backfill goes.
func TestSearchBackfill(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	// The file of an sgam before 0006.
	migrateOnlyTo = 5
	s, err := Open(ctx, path, Options{})
	migrateOnlyTo = 0
	require.NoError(t, err)
	const n = 4500 // more than two batches
	for i := range n {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: []string{"acme", "globex"}[i%2], ID: fmt.Sprintf("e%05d", i), Content: fmt.Sprintf("note number w%d about zebras", i)})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	var seen [][2]int
	s, err = Open(ctx, path, Options{Progress: func(what string, done, total int) {
		require.Equal(t, "migration 0006_search.sql", what)
		seen = append(seen, [2]int{done, total})
	}})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, [][2]int{{0, n}, {2000, n}, {4000, n}, {n, n}}, seen)
	for _, tenant := range []string{"acme", "globex"} {
		hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: tenant, Text: "zebra", Limit: sgam.MaxSearchLimit})
		require.NoError(t, err)
		require.Len(t, hits, sgam.MaxSearchLimit)
		for _, h := range hits {
			require.Equal(t, tenant, h.Episode.Tenant)
		}
	}
	hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "globex", Text: "w4499"})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, "e04499", hits[0].Episode.ID)
	hits, err = s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "w4499"})
	require.NoError(t, err)
	require.Empty(t, hits)
}
