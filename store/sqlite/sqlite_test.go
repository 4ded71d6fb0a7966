package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

func newStore(t testing.TB, opts storetest.Options) sgam.Store {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sgam.db"), sqlite.Options{Clock: opts.Clock, Limits: opts.Limits})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, newStore)
}
