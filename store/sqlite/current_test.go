package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestCacheIsOnAndHits guards the other cache tests against testing
// nothing: on Linux the cache is on and a repeated current read hits it.
func TestCacheIsOnAndHits(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "c.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NotNil(t, s.cache, "the current-read cache is off")
	k := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	_, err = s.Assert(t.Context(), sgam.Assertion{Key: k, Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
	require.NoError(t, err)
	_, err = s.Get(t.Context(), k, sgam.At{})
	require.NoError(t, err)
	f, hit := s.cache.lookup(k, sgam.Micros(time.Now()))
	require.True(t, hit, "the second read is a hit")
	require.Equal(t, `"Oslo"`, string(f.Value))
	f.Value[1] = 'X'
	again, _ := s.cache.lookup(k, sgam.Micros(time.Now()))
	require.Equal(t, `"Oslo"`, string(again.Value), "callers get copies")
}
