package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestSearchBackfill: a file written before the search index existed
// (migration 0006) gets every episode indexed when it is opened, with
// progress told as the backfill goes.
func TestSearchBackfill(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	const n = 4500 // more than two batches
	for i := range n {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: []string{"acme", "globex"}[i%2], ID: fmt.Sprintf("e%05d", i), Content: fmt.Sprintf("note number w%d about zebras", i)})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	// Make it the file of an sgam before 0006.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`DROP TRIGGER episodes_search_insert; DROP TRIGGER episodes_search_update; DROP TRIGGER episodes_search_delete;
		DROP TABLE search_fts; DROP TABLE search_docs; DROP TABLE search_tenants; PRAGMA user_version = 5`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	var seen [][2]int
	s, err = sqlite.Open(ctx, path, sqlite.Options{Progress: func(what string, done, total int) {
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
