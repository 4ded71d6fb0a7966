package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestSearchPlan: the search's best rows are sorted by SQLite, by their
// bm25 computed once a row, not by FTS5's rank (searchSQL); the join to
// the episodes keeps their order with no second sort.
func TestSearchPlan(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Session: "s1", Content: "turn"})
	require.NoError(t, err)
	lo, hi := tenantRange(1)
	text := explain(t, s, searchSQL, "acme", matchExpr([]string{"turn"}), int64(1)<<62, 40, lo, hi)
	require.Equal(t, 1, strings.Count(text, "USE TEMP B-TREE FOR ORDER BY"), text)
	require.Contains(t, text, "SEARCH e USING INDEX sqlite_autoindex_episodes_1", text)
}

// TestAroundPlan: each side of Around is a seek of episodes_session in
// the order it returns, so that it reads as many rows as it keeps
// however long the session is, with no sort of the session's episodes.
func TestAroundPlan(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	for i := range 50 {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: fmt.Sprintf("e%02d", i), Session: "s1", Content: "turn"})
		require.NoError(t, err)
	}
	text := explain(t, s, aroundSQL(2), "acme", 2, int64(1)<<62, "e10", "s1", int64(10), "e20", "s1", int64(20))
	require.NotContains(t, text, "TEMP B-TREE", text)
	require.Equal(t, 4, strings.Count(text, "USING INDEX episodes_session"), text)
}

// explain returns the lines of a statement's query plan.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	rows, err := s.d.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}
