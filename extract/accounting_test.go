package extract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

// TestAnswerTooLargeIsRecorded: an answer over 1 MiB leaves a failed
// record with the answer cut and marked, and what the call cost; it is
// the model's fault, not the caller's (no Invalid), and no retry is worth
// asking for. (The record refused the answer: no record, no tokens
// counted, the caller told its input was bad, and every retry paid
// again.)
func TestAnswerTooLargeIsRecorded(t *testing.T) {
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(nil))
	e.fake.Fault(llmtest.Reply{Content: `{"updates":[],"pad":"` + strings.Repeat("x", 2<<20) + `"}`})
	_, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "Mira lives in Oslo."})
	require.NoError(t, err)
	res, err := e.x.Extract(e.ctx, "acme", "e1", extract.Options{})
	require.Error(t, err)
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "the model's fault, not the caller's")
	require.False(t, sgam.Retryable(err))
	recs, err := e.store.Extractions(e.ctx, "acme", "e1")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, res.Record.ID, r.ID)
	require.Equal(t, sgam.ExtractionFailed, r.Status)
	require.True(t, r.GaveUp)
	require.True(t, r.RawOutputCut)
	require.Len(t, r.RawOutput, llm.MaxAnswerBytes)
	require.Contains(t, r.Error, "too_large")
	require.Positive(t, r.TokensIn)
	require.Positive(t, r.TokensOut)
	require.Equal(t, 1, e.fake.CallCount())
	b, err := e.store.Budget(e.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, r.TokensIn+r.TokensOut, b.SpentToday, "counted")
}

// TestLyingUsageCannotBreakTheBudget: a server that reports
// 9223372036854775807 + 1 tokens, twice, neither wraps the tenant's day
// negative nor makes later extractions and budget reads fail: the counts
// are sgam's estimates, marked in the record. (The first wrapped the day
// to -9223372036854775808 spent, so that no budget was ever reached; the
// second made every later extraction fail with an integer overflow.)
func TestLyingUsageCannotBreakTheBudget(t *testing.T) {
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(nil))
	lie := json.RawMessage(`{"prompt_tokens":9223372036854775807,"completion_tokens":1}`)
	e.fake.Fault(llmtest.Reply{Updates: []llmtest.Update{}, Usage: lie}, llmtest.Reply{Updates: []llmtest.Update{}, Usage: lie})
	for _, id := range []string{"e1", "e2", "e3"} {
		_, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "acme", ID: id, Content: "Nothing to remember in " + id + "."})
		require.NoError(t, err)
		res, err := e.x.Extract(e.ctx, "acme", id, extract.Options{})
		require.NoError(t, err, id)
		require.Equal(t, sgam.ExtractionDone, res.Record.Status)
		require.Less(t, res.Record.TokensIn, 100_000, id)
		if id != "e3" {
			require.Contains(t, strings.Join(res.Record.Warnings, "\n"), "sgam's estimate is counted")
		}
	}
	b, err := e.store.Budget(e.ctx, "acme")
	require.NoError(t, err)
	require.Positive(t, b.SpentToday)
	require.Less(t, b.SpentToday, 300_000)
	require.NoError(t, e.store.SetBudget(e.ctx, "acme", b.SpentToday))
	b, err = e.store.Budget(e.ctx, "acme")
	require.NoError(t, err)
	require.True(t, b.Exhausted(), "the budget is reached, as the tokens were spent")
}
