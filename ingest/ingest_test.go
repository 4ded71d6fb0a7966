package ingest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/store/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "i.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// TestKey: a line's key is the SHA-256 of its text, as ingest gave it
// before there was a Key: a file ingested then captures nothing new now.
func TestKey(t *testing.T) {
	line := `{"content":"Mira lives in Oslo."}`
	sum := sha256.Sum256([]byte(line))
	require.Equal(t, "ingest-sha256:"+hex.EncodeToString(sum[:]), ingest.Key("ingest", line))
	require.NotEqual(t, ingest.Key("mcp", "a", "bc"), ingest.Key("mcp", "ab", "c"), "parts are kept apart")
	require.NotEqual(t, ingest.Key("mcp", "a"), ingest.Key("ingest", "a"))
}

func TestMode(t *testing.T) {
	st := openStore(t)
	bare := ingest.New(st, nil)
	m, err := bare.Mode("")
	require.NoError(t, err)
	require.Equal(t, ingest.ModeNone, m, "without a model, capture only")
	_, err = bare.Mode("now")
	require.Equal(t, "extract", sgam.ErrorField(err))
	_, err = bare.Mode("later")
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Equal(t, "extract", sgam.ErrorField(err))

	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	in := ingest.New(st, extract.New(st, model))
	defer in.Close(context.Background())
	m, err = in.Mode("")
	require.NoError(t, err)
	require.Equal(t, ingest.ModeBackground, m, "with a model, the workers extract")
	m, err = in.Mode("now")
	require.NoError(t, err)
	require.Equal(t, ingest.ModeNow, m)
}

// TestCaptureLines: good lines go in with their place in the queue (a
// second tenant's too), bad ones are refused by line and field, a file
// read again captures nothing new, and none captures without queueing.
func TestCaptureLines(t *testing.T) {
	st := openStore(t)
	in := ingest.New(st, nil)
	file := strings.Join([]string{
		`{"episode_id":"e1","content":"Mira lives in Oslo."}`,
		`{"content":"no id: its text is its key"}`,
		``,
		`{"content":"x","subject":"mira"}`,
		`{"tenant":"globex","episode_id":"e1","content":"another tenant's"}`,
		`{"episode_id":"e2","content":"bad time","occurred_at":"yesterday"}`,
		`not JSON`,
	}, "\n")
	got, err := in.CaptureLines(context.Background(), strings.NewReader(file), "acme", ingest.ModeBackground)
	require.NoError(t, err)
	require.Equal(t, 3, got.Captured)
	require.Zero(t, got.Repeats)
	require.Len(t, got.Refs, 3)
	require.Equal(t, "globex", got.Refs[2].Tenant)
	var fields []string
	for _, b := range got.Bad {
		fields = append(fields, sgam.ErrorField(b))
	}
	require.Equal(t, []string{"line 4.subject", "line 6.occurred_at", "line 7"}, fields)

	again, err := in.CaptureLines(context.Background(), strings.NewReader(file), "acme", ingest.ModeBackground)
	require.NoError(t, err)
	require.Equal(t, 3, again.Repeats, "read again: the same episodes")
	require.Len(t, again.Refs, 3, "never extracted: queued again (one entry each)")

	none, err := in.CaptureLines(context.Background(), strings.NewReader(`{"episode_id":"e9","content":"only captured"}`), "acme", ingest.ModeNone)
	require.NoError(t, err)
	require.Equal(t, 1, none.Captured)
	require.Empty(t, none.Refs)
	_, err = in.CaptureLines(context.Background(), strings.NewReader(file), "acme", ingest.ModeNow)
	require.Equal(t, "extract", sgam.ErrorField(err))
}

// TestCaptureNowKeepsToTheBudget: a tenant whose budget is spent gets its
// episode captured and given to the workers, and an unavailable error
// that says so; no model call is made.
func TestCaptureNowKeepsToTheBudget(t *testing.T) {
	st := openStore(t)
	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	in := ingest.New(st, extract.New(st, model))
	defer in.Close(context.Background())
	ctx := context.Background()
	res, err := in.Capture(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "hello"}, ingest.ModeNow)
	require.NoError(t, err)
	require.Equal(t, sgam.ExtractionDone, res.Record.Status)
	require.False(t, res.Queued)

	require.NoError(t, st.SetBudget(ctx, "acme", 1))
	res, err = in.Capture(ctx, sgam.Episode{Tenant: "acme", ID: "e2", Content: "again"}, ingest.ModeNow)
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err))
	require.Equal(t, "extract", sgam.ErrorField(err))
	require.Contains(t, err.Error(), "episode e2 was captured")
	require.Equal(t, "e2", res.Episode.ID)
	require.True(t, res.Queued)
	require.Equal(t, 1, fake.CallCount(), "no call past the budget")
	due, err := st.QueuedExtractions(ctx, 10, true)
	require.NoError(t, err)
	require.Len(t, due, 1, "the workers extract it once the budget allows")
	require.Equal(t, "e2", due[0].EpisodeID)
}
