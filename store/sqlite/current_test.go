package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// TestCacheIsOnAndHits guards the other cache tests against testing
// nothing: on Linux the cache is on and a repeated current read hits it.
func TestCacheIsOnAndHits(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "c.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NotNil(t, s.d.cache, "the current-read cache is off")
	k := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	_, err = s.Assert(t.Context(), sgam.Assertion{Key: k, Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
	require.NoError(t, err)
	_, err = s.Get(t.Context(), k, sgam.At{})
	require.NoError(t, err)
	f, hit := s.d.cache.lookup(k, sgam.Micros(time.Now()))
	require.True(t, hit, "the second read is a hit")
	require.Equal(t, `"Oslo"`, string(f.Value))
	f.Value[1] = 'X'
	again, _ := s.d.cache.lookup(k, sgam.Micros(time.Now()))
	require.Equal(t, `"Oslo"`, string(again.Value), "callers get copies")
}

// TestDataCacheIsOnAndHits guards TestDataCacheSeesOtherWriters against
// testing nothing: on Linux the data cache is on and holds what a read
// of subjects, attributes or a schema head found.
func TestDataCacheIsOnAndHits(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "c.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NotNil(t, s.d.data, "the data cache is off")
	_, err = s.Assert(t.Context(), sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}, Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
	require.NoError(t, err)
	_, err = s.Subjects(t.Context(), "acme", []string{"mira", "nobody"})
	require.NoError(t, err)
	_, err = s.Attributes(t.Context(), "acme", "mira")
	require.NoError(t, err)
	_, err = s.Schema(t.Context(), "acme")
	require.NoError(t, err)
	gen := s.d.data.begin()
	for k, want := range map[dataKey]any{
		{subjectKnown, "acme", "mira"}:   true,
		{subjectKnown, "acme", "nobody"}: false,
		{schemaHeadOf, "acme", ""}:       ledger.Head{},
	} {
		v, hit := s.d.data.lookup(gen, k)
		require.True(t, hit, "%v", k)
		require.Equal(t, want, v, "%v", k)
	}
	require.Len(t, s.d.data.entries, 4, "and the attributes")

	_, err = s.Forget(t.Context(), sgam.ForgetRequest{Tenant: "acme", Subject: "mira"})
	require.NoError(t, err)
	require.Empty(t, s.d.data.entries, "a forget drops the words at once, before any read")
}

// TestWALIndexViewOutlivesItsStore: two stores of one process on one file
// share the view of its -shm file; closing one leaves the other's (and
// SQLite's) locks alone, and the view's descriptor is closed only once the
// file is unlinked, when the last connection closed.
func TestWALIndexViewOutlivesItsStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	a, err := Open(t.Context(), path, Options{})
	require.NoError(t, err)
	b, err := Open(t.Context(), path, Options{})
	require.NoError(t, err)
	require.NotNil(t, a.d.cache)
	require.Same(t, a.d.cache.wal, b.d.cache.wal, "one view per -shm file")
	w := a.d.cache.wal
	require.NoError(t, a.Close())
	views.mu.Lock()
	require.Equal(t, 1, w.refs)
	require.Contains(t, views.open, w.id, "still linked: the descriptor stays open")
	views.mu.Unlock()

	k := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	_, err = b.Assert(t.Context(), sgam.Assertion{Key: k, Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
	require.NoError(t, err)
	f, err := b.Get(t.Context(), k, sgam.At{})
	require.NoError(t, err)
	require.Equal(t, `"Oslo"`, string(f.Value))

	require.NoError(t, b.Close())
	_, err = os.Stat(path + "-shm")
	require.True(t, os.IsNotExist(err), "the last connection unlinked the -shm file")
	views.mu.Lock()
	defer views.mu.Unlock()
	require.NotContains(t, views.open, w.id, "and the view was let go")
}

// TestWALIsBounded: a write burst grows the WAL; once the store is idle the
// checkpointer truncates it, and so does closing the store while another
// connection keeps the file open; the last close removes it.
func TestWALIsBounded(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "w.db")
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if os.IsNotExist(err) {
			return -1
		}
		require.NoError(t, err)
		return fi.Size()
	}
	burst := func(s *Store, from int) {
		for i := from; i < from+10; i++ {
			as := make([]sgam.Assertion, 100)
			for j := range as {
				as[j] = sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: fmt.Sprintf("s%d", j), Attribute: "a"},
					Value: []byte(fmt.Sprintf(`"%03000d"`, i)), ValidFrom: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC), Source: "e1"}
			}
			_, err := s.AssertMany(ctx, as)
			require.NoError(t, err)
		}
	}
	const limit = 1 << 20
	s, err := Open(ctx, path, Options{WALLimitMiB: 1})
	require.NoError(t, err)
	other, err := Open(ctx, path, Options{}) // another user of the file
	require.NoError(t, err)
	defer other.Close()

	// A reader holds a snapshot through each burst, as a long read would,
	// so that no checkpoint can start the WAL over meanwhile.
	hold := func() func() {
		rtx, err := other.d.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		require.NoError(t, err)
		var n int
		require.NoError(t, rtx.QueryRowContext(ctx, `SELECT count(*) FROM facts`).Scan(&n))
		return func() { require.NoError(t, rtx.Rollback()) }
	}
	release := hold()
	burst(s, 0)
	require.Greater(t, walSize(), int64(2*limit), "the burst grew the WAL")
	release()
	for range 3 { // copy, see no commit since, truncate
		s.d.ckpt.step()
	}
	require.Zero(t, walSize(), "an idle store truncates the WAL")

	release = hold()
	burst(s, 100)
	require.Greater(t, walSize(), int64(2*limit))
	release()
	require.NoError(t, s.Close())
	require.LessOrEqual(t, walSize(), int64(limit), "closing truncates the WAL while the file stays open elsewhere")

	require.NoError(t, other.Close())
	require.Equal(t, int64(-1), walSize(), "the last close removes the WAL")
}
