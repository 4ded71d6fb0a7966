package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestReadContexts: a short read runs its statement unwatched yet still
// answers an ended context, before the statement and between its rows; a
// long read keeps the context, so that its end interrupts the statement.
func TestReadContexts(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	for i := range 5 {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: fmt.Sprint("e", i), Session: "s1", Content: "turn"})
		require.NoError(t, err)
	}

	cancellable, cancel := context.WithCancel(ctx)
	sctx, err := statementContext(cancellable)
	require.NoError(t, err)
	require.Nil(t, sctx.Done(), "a short read's statement has no watcher")
	lctx, err := statementContext(long(cancellable))
	require.NoError(t, err)
	require.NotNil(t, lctx.Done(), "a long read's statement is watched")

	rows := 0
	err = s.d.each(cancellable, "list", `SELECT episode_id FROM episodes WHERE tenant = ?`, []any{"acme"}, func(sc scanner) error {
		rows++
		cancel() // the caller gives up after the first row
		var id string
		return sc.Scan(&id)
	})
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
	require.Equal(t, 1, rows, "no row after the context ended")

	_, err = s.Episodes(cancellable, sgam.EpisodeQuery{Tenant: "acme", Limit: 10})
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "an ended context is told before the statement: %v", err)
	_, _, err = s.d.Episode(cancellable, "acme", "e1")
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
	_, err = s.d.State(cancellable, "acme", "mira", sgam.At{AsOf: time.Now(), KnownAt: time.Now()})
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
	_, err = s.Stats(cancellable, "acme")
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
}
