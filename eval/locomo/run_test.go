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

// TestRunLocomo runs the retrieval evaluation end to end on the real data
// (when it is there) and prints the figures; it asserts only that every
// question was asked and that recall finds something, the floor the
// README's figures stand on.
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
	n, err := locomo.Capture(t.Context(), s, convs)
	require.NoError(t, err)
	require.Equal(t, 5882, n)
	res, err := locomo.Run(t.Context(), s, convs, locomo.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, 1540, res.Questions)
	require.NoError(t, res.All.Write(os.Stdout))
	require.NoError(t, res.Tuned.Write(os.Stdout))
	require.NoError(t, res.Unseen.Write(os.Stdout))
	require.Greater(t, res.All.TurnRecall(locomo.All, 10), 0.4)
}
