package locomo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
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

// TestEmbedAndCompare embeds the episodes of a small data set with a
// fake endpoint, says what that cost, and compares lexical with fused
// retrieval on the same questions.
func TestEmbedAndCompare(t *testing.T) {
	convs, err := locomo.Load(miniPath)
	require.NoError(t, err)
	s := miniStore(t, convs)
	fake := llmtest.New(t, "chat", nil)
	emb, err := llm.NewEmbedder(llm.EmbedConfig{BaseURL: fake.URL, Model: "fake-embed", MaxRetries: -1})
	require.NoError(t, err)
	var progress []int
	cost, err := locomo.Embed(t.Context(), s, emb, 12, func(done, total int) {
		require.Equal(t, 12, total)
		progress = append(progress, done)
	})
	require.NoError(t, err)
	require.Equal(t, []int{12}, progress)
	require.Equal(t, "fake-embed", cost.Model)
	require.Equal(t, 12, cost.Episodes)
	require.Equal(t, 12, fake.EmbedInputCount())
	require.Positive(t, cost.Tokens, "the server's count")
	require.GreaterOrEqual(t, cost.TimeMS, int64(0))
	again, err := locomo.Embed(t.Context(), s, emb, 12, nil)
	require.NoError(t, err)
	require.Zero(t, again.Episodes, "every episode has its vector already")

	lexical, err := locomo.Run(t.Context(), s, convs, locomo.RunOptions{})
	require.NoError(t, err)
	lexical.Search = "lexical"
	fused, err := locomo.Run(t.Context(), s, convs, locomo.RunOptions{Embedder: emb, Vectors: s})
	require.NoError(t, err)
	fused.Search = "lexical+vector (fake-embed)"
	require.Equal(t, 8, fused.Questions)
	var buf bytes.Buffer
	require.NoError(t, locomo.WriteComparison(&buf, lexical, fused))
	t.Log("\n" + buf.String())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 7)
	require.Regexp(t, `^\s+all\s+lexical\s+8\s`, lines[1])
	require.Regexp(t, `^\s+lexical\+vector \(fake-embed\)\s+8\s`, lines[2])
	require.Regexp(t, `1-5 \(tuned on\)\s+lexical\s+8\s`, lines[3])
	require.Regexp(t, `6-10 \(unseen\)\s+lexical\s+0(\s+-){7}$`, lines[5])
}
