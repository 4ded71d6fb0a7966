package locomo_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/store/sqlite"
)

const dataPath = "../../../shared/data/locomo/locomo10.json"

// TestRunLocomo runs the retrieval evaluation end to end on the first two
// conversations of the real data (when it is there; the whole of it is
// `sgam eval locomo`, too slow under -race for every test run) and prints
// the figures; it asserts that every question was asked and a floor under
// the README's figures.
func TestRunLocomo(t *testing.T) {
	if _, err := os.Stat(dataPath); err != nil {
		t.Skip("no LoCoMo data at", dataPath)
	}
	if testing.Short() {
		t.Skip("the whole data set: not in -short")
	}
	convs, err := locomo.Load(dataPath)
	require.NoError(t, err)
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "locomo.db"), sqlite.Options{})
	require.NoError(t, err)
	defer s.Close()
	require.Len(t, convs, 10)
	convs = convs[:2]
	turns, questions := 0, 0
	for _, c := range convs {
		for _, sess := range c.Sessions {
			turns += len(sess.Turns)
		}
		for _, q := range c.Questions {
			if q.Category >= 1 && q.Category <= 4 {
				questions++
			}
		}
	}
	n, err := locomo.Capture(t.Context(), s, convs)
	require.NoError(t, err)
	require.Equal(t, turns, n)
	res, err := locomo.Run(t.Context(), s, convs, locomo.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, questions, res.Questions)
	require.NoError(t, res.All.Write(os.Stdout))
	require.Greater(t, res.All.TurnRecall(locomo.All, 10), 0.6)
}
