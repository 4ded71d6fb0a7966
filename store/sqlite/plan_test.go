package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

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
	rows, err := s.d.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+aroundSQL(2), "acme", 2, int64(1)<<62, "e10", "e20")
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
	text := strings.Join(plan, "\n")
	require.NotContains(t, text, "TEMP B-TREE", text)
	require.Equal(t, 4, strings.Count(text, "USING INDEX episodes_session"), text)
}
