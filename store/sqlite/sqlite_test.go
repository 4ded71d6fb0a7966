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
	a, b := twoStores(t)
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
	_, err := b.Retract(ctx, sgam.Retraction{Key: k, At: at.Add(10 * time.Minute), Source: "e2"})
	require.NoError(t, err)
	f, err := a.Get(ctx, k, sgam.At{})
	require.NoError(t, err)
	require.Nil(t, f, "a sees b's retraction")
}

// twoStores opens two stores on one file, as two processes would.
func twoStores(t *testing.T) (a, b *sqlite.Store) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestDataCacheSeesOtherWriters: the answers a store keeps of subjects,
// attributes and schema heads (dataCache) follow commits made through
// another connection set on the same file (as another process would make
// them) and its own, forgets among them; and each is its tenant's.
func TestDataCacheSeesOtherWriters(t *testing.T) {
	ctx := t.Context()
	a, b := twoStores(t)
	at := time.Now().Add(-time.Hour)
	assert := func(s *sqlite.Store, tenant, attr string) {
		t.Helper()
		_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attr}, Value: []byte(`"x"`), ValidFrom: at, Source: "e1"})
		require.NoError(t, err)
	}
	subjects := func(s *sqlite.Store, tenant string) []string {
		t.Helper()
		out, err := s.Subjects(ctx, tenant, []string{"mira", "nobody"})
		require.NoError(t, err)
		return out
	}
	attributes := func(s *sqlite.Store, tenant string) []string {
		t.Helper()
		out, err := s.Attributes(ctx, tenant, "mira")
		require.NoError(t, err)
		return out
	}

	for range 2 { // the second read is the cache's
		require.Empty(t, subjects(a, "acme"))
		require.Empty(t, attributes(a, "acme"))
	}
	assert(b, "acme", "city")
	for range 2 {
		require.Equal(t, []string{"mira"}, subjects(a, "acme"), "a sees b's commit")
		require.Equal(t, []string{"city"}, attributes(a, "acme"))
		require.Empty(t, subjects(a, "globex"), "another tenant's subject")
		require.Empty(t, attributes(a, "globex"))
	}
	assert(a, "acme", "employer")
	for range 2 {
		require.Equal(t, []string{"city", "employer"}, attributes(a, "acme"), "and its own")
		require.Equal(t, []string{"city", "employer"}, attributes(b, "acme"))
	}
	got := attributes(a, "acme")
	got[0] = "changed"
	require.Equal(t, []string{"city", "employer"}, attributes(a, "acme"), "callers get copies")

	for range 2 {
		v, err := a.Schema(ctx, "acme")
		require.NoError(t, err)
		require.Zero(t, v.Version)
	}
	_, err := b.ApplySchema(ctx, "acme", []byte("attributes:\n  city: {memory: profile, type: string}\n  employer: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	v, err := a.Schema(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 1, v.Version, "a sees b's schema")

	_, err = b.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Subject: "mira"})
	require.NoError(t, err)
	for range 2 {
		require.Empty(t, subjects(a, "acme"), "a forgotten subject is gone from a's answers")
		require.Empty(t, attributes(a, "acme"))
	}
}
