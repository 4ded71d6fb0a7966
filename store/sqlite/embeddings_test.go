package sqlite_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

// BenchmarkNearest: go test ./store/sqlite -run '^$' -bench Nearest
// -sgam.vectors=10000,100000 -sgam.dims=64,1536
func BenchmarkNearest(b *testing.B) {
	storetest.BenchmarkNearest(b, newStore)
}

// TestForgetErasesVectors: a vector is derived from its episode's
// content (and can give some of it away): after the episode is forgotten
// and the store compacted, its bytes are nowhere in the files.
func TestForgetErasesVectors(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sgam.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer s.Close()
	// Vectors whose encodings are markers: 16 distinct floats each.
	marked := func(seed float32) ([]float32, []byte) {
		v := make([]float32, 16)
		b := make([]byte, 0, 64)
		for i := range v {
			v[i] = seed + float32(i)*0.001
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v[i]))
		}
		return v, b
	}
	gone, goneBytes := marked(7.123)
	kept, keptBytes := marked(3.456)
	for _, id := range []string{"e1", "e2"} {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: id, Content: "content of " + id})
		require.NoError(t, err)
	}
	n, err := s.PutEmbeddings(ctx, "m", []sgam.EpisodeVector{{Tenant: "acme", EpisodeID: "e1", Vector: gone}, {Tenant: "acme", EpisodeID: "e2", Vector: kept}})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoError(t, s.Compact(ctx))
	require.True(t, bytes.Contains(fileBytes(t, path), goneBytes), "the test finds the vector at all")

	_, err = s.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e1"})
	require.NoError(t, err)
	require.NoError(t, s.Compact(ctx))
	all := fileBytes(t, path)
	require.False(t, bytes.Contains(all, goneBytes), "the forgotten episode's vector is still in the files")
	require.True(t, bytes.Contains(all, keptBytes))
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
}
