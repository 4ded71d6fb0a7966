package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// capturedOneByOne opens a store whose checkpointer the test steps, and
// captures n episodes of tenant acme in n commits, each of which leaves a
// segment of the full-text index.
func capturedOneByOne(t *testing.T, n int) (*Store, string) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(t.Context(), path, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	s.d.ckpt.stop <- struct{}{} // the test runs the checkpointer's steps
	for i := range n {
		_, err := s.AddEpisode(t.Context(), sgam.Episode{Tenant: "acme", ID: fmt.Sprintf("e%03d", i), Content: fmt.Sprintf("note w%d about zebras", i)})
		require.NoError(t, err)
	}
	return s, path
}

// TestIdleStoreMergesTheSearchIndex: captures one by one leave the
// full-text index in many segments, each of which a search seeks into;
// once the store is idle, the checkpointer merges them (migration 0008),
// by level and then, settled, into one segment (checkpoint.go), then
// truncates the WAL, and every episode is found as before.
func TestIdleStoreMergesTheSearchIndex(t *testing.T) {
	ctx := t.Context()
	const n = 150
	s, path := capturedOneByOne(t, n)
	segments := func() int {
		var k int
		require.NoError(t, s.d.queryRow(ctx, `SELECT count(DISTINCT segid) FROM search_fts_idx`).Scan(&k))
		return k
	}
	before := segments()
	require.Greater(t, before, 3, "one capture per commit leaves segments at several levels")
	for range settleRuns {
		s.d.ckpt.step()
	}
	require.LessOrEqual(t, segments(), 2, "an idle store merges the index by level (from %d segments)", before)
	for range 4 {
		s.d.ckpt.step()
	}
	require.Equal(t, 1, segments(), "and once settled, a small index whole")
	fi, err := os.Stat(path + "-wal")
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "and truncates the WAL once merged")
	hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "zebras", Limit: sgam.MaxSearchLimit})
	require.NoError(t, err)
	require.Len(t, hits, n)
	hits, err = s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "w77", Limit: 5})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, "e077", hits[0].Episode.ID)
}

// TestOpenMergesAnIndexLeftUnmerged: a process that captured and closed
// at once left the index in segments; a store opened on the file merges
// it while idle, before any commit of its own.
func TestOpenMergesAnIndexLeftUnmerged(t *testing.T) {
	ctx := t.Context()
	first, path := capturedOneByOne(t, 150)
	require.NoError(t, first.Close())
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	defer s.Close()
	s.d.ckpt.stop <- struct{}{} // the test runs the checkpointer's steps
	segments := func() int {
		var k int
		require.NoError(t, s.d.queryRow(ctx, `SELECT count(DISTINCT segid) FROM search_fts_idx`).Scan(&k))
		return k
	}
	require.Greater(t, segments(), 1)
	for range settleRuns + 4 {
		s.d.ckpt.step()
	}
	require.Equal(t, 1, segments())
}

// TestIdleStoreKeepsALargeIndexInLevels: an index larger than the
// checkpointer merges whole is merged by level only, and the WAL truncated
// as soon as that is done, without waiting for the store to settle.
func TestIdleStoreKeepsALargeIndexInLevels(t *testing.T) {
	ctx := t.Context()
	s, path := capturedOneByOne(t, 150)
	s.d.ckpt.wholeBlocks = 1 // every index is large
	for range settleRuns {
		s.d.ckpt.step()
	}
	require.True(t, s.d.ckpt.settled, "merged by level, it has nothing more to merge")
	fi, err := os.Stat(path + "-wal")
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "and the WAL is truncated before the store settles")
	hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "zebras", Limit: sgam.MaxSearchLimit})
	require.NoError(t, err)
	require.Len(t, hits, 150)
}

// TestCheckAfterTheIndexWasMerged: check's quick_check reads the
// full-text index through the structure FTS5 caches per connection; after
// another connection merged the index (the idle merge here; a capture's
// own merge or another process alike) a stale structure named the merged
// segments as corruption until the check revalidated it.
func TestCheckAfterTheIndexWasMerged(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), Options{ReadConns: 1})
	require.NoError(t, err)
	defer s.Close()
	s.d.ckpt.stop <- struct{}{} // the test merges when it wants
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var eps []sgam.Episode
	for i := range 600 {
		eps = append(eps, sgam.Episode{Tenant: []string{"acme", "globex"}[i%2], ID: fmt.Sprintf("e%03d", i), Kind: sgam.KindMessage,
			Content: fmt.Sprintf("note w%d about zebras %d", i%50, i), OccurredAt: base.Add(time.Duration(i) * time.Minute), RecordedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	_, err = s.Import(ctx, sgam.ImportBatch{Episodes: eps})
	require.NoError(t, err)
	v, err := s.Check(ctx) // the one reader caches the index's structure
	require.NoError(t, err)
	require.Empty(t, v)
	merged, err := s.d.ckpt.merge(false)
	require.NoError(t, err)
	require.True(t, merged)
	v, err = s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v, "a check after the index was merged elsewhere")
}

// TestSearchTenantNumbers: a search remembers its tenant's number in the
// index, but not that a tenant has none yet: an episode captured after
// (here by another process's store on the same file) is found, and a
// second tenant's number leads to its own episodes alone.
func TestSearchTenantNumbers(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "t.db")
	a, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	defer a.Close()
	b, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	defer b.Close()

	hits, err := a.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "zebras"})
	require.NoError(t, err)
	require.Empty(t, hits, "no episode yet")
	_, err = b.AddEpisode(ctx, sgam.Episode{Tenant: "globex", ID: "g1", Content: "globex keeps zebras"})
	require.NoError(t, err)
	_, err = b.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: "a1", Content: "acme keeps zebras too"})
	require.NoError(t, err)
	for range 2 { // the number read, then the number remembered
		for tenant, want := range map[string]string{"acme": "a1", "globex": "g1"} {
			hits, err := a.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: tenant, Text: "zebras"})
			require.NoError(t, err)
			require.Len(t, hits, 1, tenant)
			require.Equal(t, want, hits[0].Episode.ID, tenant)
		}
	}
	a.d.tenants.mu.Lock()
	require.Len(t, a.d.tenants.n, 2)
	a.d.tenants.mu.Unlock()
}
