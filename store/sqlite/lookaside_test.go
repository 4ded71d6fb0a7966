package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	msqlite "modernc.org/sqlite"

	"github.com/sgam-dev/sgam"
)

// TestLookaside: the connections have the lookaside init sets, more than
// SQLite's default (at most 123 slots in use), and a store's reads are
// served from it.
func TestLookaside(t *testing.T) {
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "l.db"), Options{ReadConns: 1})
	require.NoError(t, err)
	defer st.Close()
	for i := range 50 {
		_, err := st.AddEpisode(t.Context(), sgam.Episode{Tenant: "acme", ID: fmt.Sprint("e", i), Session: "s1", Content: fmt.Sprint("Mira moved to Oslo in year ", 2000+i)})
		require.NoError(t, err)
	}
	for range 20 {
		hits, err := st.SearchEpisodes(t.Context(), sgam.SearchQuery{Tenant: "acme", Text: "When did Mira move to Oslo?", Limit: 40})
		require.NoError(t, err)
		require.Len(t, hits, 40)
		_, err = st.Around(t.Context(), "acme", []sgam.Episode{hits[0].Episode}, 2, time.Now())
		require.NoError(t, err)
	}
	c, err := st.d.rdb.Conn(t.Context())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Raw(func(dc any) error {
		sc := dc.(interface {
			Status(op msqlite.DBStatusOp, reset bool) (current, high int, err error)
		})
		_, used, err := sc.Status(msqlite.DBStatusLookasideUsed, false)
		require.NoError(t, err)
		_, full, err := sc.Status(msqlite.DBStatusLookasideMissFull, false)
		require.NoError(t, err)
		require.Greater(t, used, 123)
		require.Zero(t, full)
		return nil
	}))
}
