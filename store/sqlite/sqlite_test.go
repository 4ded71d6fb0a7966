package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

func newStore(t testing.TB, opts storetest.Options) sgam.Store {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sgam.db"), sqlite.Options{Clock: opts.Clock, Limits: opts.Limits, Observer: opts.Observer})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

func TestVectorConformance(t *testing.T) {
	storetest.RunVectors(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, newStore)
}

// TestCacheSeesOtherWriters: a store's current-read cache notices commits
// made through another connection set on the same file (as another process
// would make them), and a store that cannot see them is not fooled either.
func TestCacheSeesOtherWriters(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer a.Close()
	b, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer b.Close()
	k := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	at := time.Now().Add(-time.Hour)
	for i, city := range []string{"Oslo", "Bergen", "Rome", "Paris"} {
		writer := []*sqlite.Store{a, b}[i%2]
		_, err := writer.Assert(ctx, sgam.Assertion{Key: k, Value: []byte(`"` + city + `"`), ValidFrom: at.Add(time.Duration(i) * time.Minute), Source: "e1"})
		require.NoError(t, err)
		for _, reader := range []*sqlite.Store{a, b, a, b} {
			f, err := reader.Get(ctx, k, sgam.At{})
			require.NoError(t, err)
			require.Equal(t, `"`+city+`"`, string(f.Value))
		}
	}
	_, err = b.Retract(ctx, sgam.Retraction{Key: k, At: at.Add(10 * time.Minute), Source: "e2"})
	require.NoError(t, err)
	f, err := a.Get(ctx, k, sgam.At{})
	require.NoError(t, err)
	require.Nil(t, f, "a sees b's retraction")
}
