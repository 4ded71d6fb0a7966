package postgres_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newStore(t testing.TB, opts storetest.Options) sgam.Store {
	s, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{Clock: opts.Clock, Limits: opts.Limits})
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
