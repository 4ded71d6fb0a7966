package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// TestRecallBench runs the recall benchmark small, for its wiring.
func TestRecallBench(t *testing.T) {
	res, err := Recall(t.Context(), RecallOptions{Dir: t.TempDir(), Episodes: 2000, Facts: 5000, Questions: 50, Capture: 500})
	require.NoError(t, err)
	require.Equal(t, 50, res.Questions)
	require.Positive(t, res.P50)
	require.Greater(t, res.EvidencePerAnswer, 1.0)
	require.Greater(t, res.FactsPerAnswer, 0.5)
	require.Positive(t, res.CaptureRatio)
	require.NotNil(t, res.Settled, "SQLite asks again once the store has settled")
	require.Positive(t, res.Settled.P50)
}

// BenchmarkRecall: one recall per op (lexical evidence on, the default
// budget) over a SQLite store of SGAM_BENCH_EPISODES episodes (default
// 10,000) and ten facts per episode. `sgam bench recall` reports the
// percentiles the README gives.
func BenchmarkRecall(b *testing.B) {
	episodes := 10_000
	if v, err := strconv.Atoi(os.Getenv("SGAM_BENCH_EPISODES")); err == nil && v > 0 {
		episodes = v
	}
	s, err := store.Open(b.Context(), filepath.Join(b.TempDir(), "recall.db"), store.Options{})
	require.NoError(b, err)
	defer s.Close()
	c, sample, err := seedRecall(b.Context(), s, episodes, 10*episodes, func(string, int, int) {})
	require.NoError(b, err)
	r := recall.New(s)
	for b.Loop() {
		if _, err := ask(b.Context(), r, c, sample); err != nil {
			b.Fatal(err)
		}
	}
}
