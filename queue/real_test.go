package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/internal/llamatest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// These tests run the queue's workers against llama.cpp's llama-server
// with a real model (internal/llamatest): a server slower than the
// client's timeout, one killed while it answers, one still loading its
// model. They assert what the queue guarantees whatever the model says:
// bounded attempts, failures recorded with their kind, no episode lost,
// none extracted twice, no job left behind.

// realEpisode is an episode whose prompt (under schemaFile, at
// realOccurred) this model answers in about 75 tokens, ending its answer:
// at temperature 0 and a fixed seed the answer is the same every time.
var realEpisode = sgam.Episode{Tenant: "acme", ID: "e1", Kind: sgam.KindMessage,
	Content:    "Mira: we moved to the pro plan, and I live in Oslo now.",
	OccurredAt: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}

var realRef = queue.Ref{Tenant: "acme", EpisodeID: "e1"}

// realChat starts llama-server (llamatest's --repeat-penalty lets this
// small model end its answers).
func realChat(t *testing.T) *llamatest.Server {
	return llamatest.Chat(t)
}

// realModel is a client of srv with a bounded answer and the given
// timeout and attempts.
func realModel(t *testing.T, srv *llamatest.Server, timeout time.Duration, attempts int) *llm.Client {
	t.Helper()
	m, err := llm.New(llm.Config{BaseURL: srv.URL, Model: srv.Model, MaxTokens: 192, Timeout: timeout, MaxAttempts: attempts, MaxBackoff: time.Second})
	require.NoError(t, err)
	return m
}

// waitEnded waits (at most d) until the extraction of e1 has ended since
// an instant, and returns its ending record.
func waitEnded(t *testing.T, st queue.Store, since time.Time, d time.Duration) *sgam.Extraction {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ended, err := queue.Wait(ctx, st, []queue.Ref{realRef}, since, 20*time.Millisecond, nil)
	require.NoError(t, err, "the extraction ended")
	require.NotNil(t, ended[realRef])
	return ended[realRef]
}

// logRecords logs an episode's records.
func logRecords(t *testing.T, recs []sgam.Extraction) {
	t.Helper()
	for i, r := range recs {
		t.Logf("record %d: %s, %d calls, %d+%d tokens, gave up %v, in %s: %s", i, r.Status, r.Calls, r.TokensIn, r.TokensOut, r.GaveUp,
			r.Latency.Round(time.Millisecond), r.Error)
	}
}

// requireExtractedOnce asserts that e1 has exactly one usable record, the
// last; that no row from it is a duplicate; that its job completed and no
// job is left running, waiting or failed; and that the ledger's
// invariants hold.
func requireExtractedOnce(t *testing.T, st *sqlite.Store, path string) []sgam.Extraction {
	t.Helper()
	ctx := context.Background()
	recs, err := st.Extractions(ctx, "acme", "e1")
	require.NoError(t, err)
	logRecords(t, recs)
	usable := 0
	for _, r := range recs {
		if r.Status != sgam.ExtractionFailed {
			usable++
		}
	}
	require.Equal(t, 1, usable, "extracted once")
	last := recs[len(recs)-1]
	require.NotEqual(t, sgam.ExtractionFailed, last.Status, last.Error)

	subs, err := st.SubjectsFrom(ctx, "acme", []string{"e1"}, time.Time{})
	require.NoError(t, err)
	if len(subs) > 0 {
		rows, err := st.FactsFrom(ctx, "acme", []string{"e1"}, subs, time.Time{})
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, f := range rows {
			k := fmt.Sprintf("%s %s %s %s", f.Subject, f.Attribute, f.Value, f.ValidFrom)
			require.False(t, seen[k], "no duplicate row: %s", k)
			seen[k] = true
			require.Contains(t, last.Facts, f.ID, "every row is the one extraction's")
		}
	}
	s := queueStatus(t, path, st)
	require.Equal(t, queue.Status{Completed: 1}, s, "one job, completed; none stuck or failed")
	vs, err := st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, vs)
	return recs
}

// TestRealTimeouts: a client timeout far below what the server needs
// (50 ms for a prompt it reads in seconds). Each job attempt makes the
// client's attempts, no more, each cut off and recorded as a timeout
// with the prompt's estimated tokens; the job fails for good only after
// the queue's attempts, visibly, and nothing is written or lost. Retried
// with a sane timeout, the episode is extracted.
func TestRealTimeouts(t *testing.T) {
	ctx := context.Background()
	srv := realChat(t)
	st, path := openStore(t)
	const jobAttempts, clientAttempts = 2, 2
	fast := realModel(t, srv, 50*time.Millisecond, clientAttempts)
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, fast), queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: jobAttempts})
	require.NoError(t, err)
	_, queued, err := st.AddEpisodeToExtract(ctx, realEpisode, 0)
	require.NoError(t, err)
	require.True(t, queued)
	require.NoError(t, q.Start(ctx))
	ended := waitEnded(t, st, time.Time{}, time.Minute)
	// River ends the job once its worker has returned, after the record.
	var jobs []*rivertype.JobRow
	require.Eventually(t, func() bool {
		jobs, err = queue.Jobs(ctx, q, queue.ExtractArgs{}.Kind())
		require.NoError(t, err)
		return len(jobs) == 1 && jobs[0].FinalizedAt != nil
	}, 10*time.Second, 20*time.Millisecond, "the job ends")
	require.NoError(t, q.Stop(ctx))

	require.Equal(t, sgam.ExtractionFailed, ended.Status)
	require.True(t, ended.GaveUp)
	recs, err := st.Extractions(ctx, "acme", "e1")
	require.NoError(t, err)
	logRecords(t, recs)
	require.Len(t, recs, jobAttempts, "one record per job attempt")
	for i, r := range recs {
		require.Equal(t, sgam.ExtractionFailed, r.Status)
		require.Equal(t, clientAttempts, r.Calls, "the client's attempts, no more")
		require.Contains(t, r.Error, "timed out", "the record says timeout")
		require.Contains(t, r.Error, "50ms")
		require.Positive(t, r.TokensIn, "a call cut off counts its prompt")
		require.Equal(t, i == jobAttempts-1, r.GaveUp, "only the last attempt gives up")
		require.Empty(t, r.Accepted)
	}
	require.Len(t, jobs, 1)
	require.Equal(t, rivertype.JobStateDiscarded, jobs[0].State, "failed for good after the queue's attempts")
	require.Equal(t, jobAttempts, jobs[0].Attempt)
	require.Len(t, jobs[0].Errors, jobAttempts)
	for _, e := range jobs[0].Errors {
		require.Contains(t, e.Error, "timed out", "the job says timeout")
	}
	require.Equal(t, queue.Status{Failed: 1}, queueStatus(t, path, st), "visible as failed")
	subs, err := st.SubjectsFrom(ctx, "acme", []string{"e1"}, time.Time{})
	require.NoError(t, err)
	require.Empty(t, subs, "nothing written")
	_, err = st.Episode(ctx, "acme", "e1")
	require.NoError(t, err, "the episode is kept")
	b, err := st.Budget(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, recs[0].TokensIn+recs[0].TokensOut+recs[1].TokensIn+recs[1].TokensOut, b.SpentToday, "what the cut-off calls may have cost counts")

	// With a sane timeout, sgam ingest retry extracts it.
	sane := realModel(t, srv, 3*time.Minute, 2)
	q, err = queue.OpenSQLite(ctx, path, st, extract.New(st, sane), queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: jobAttempts})
	require.NoError(t, err)
	since := time.Now()
	n, err := q.Retry(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, q.Start(ctx))
	ended = waitEnded(t, st, since, 90*time.Second)
	require.NoError(t, q.Stop(ctx))
	require.NotEqual(t, sgam.ExtractionFailed, ended.Status, ended.Error)
	recs = requireExtractedOnce(t, st, path)
	require.Len(t, recs, jobAttempts+1)
	require.Equal(t, 1, recs[jobAttempts].Calls, "answered at its first call")
}

// slotBusy reports whether the server is working on a request (its
// /slots endpoint).
func slotBusy(t *testing.T, srv *llamatest.Server) bool {
	resp, err := http.Get(strings.TrimSuffix(srv.URL, "/v1") + "/slots")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if json.NewDecoder(resp.Body).Decode(&slots) != nil {
		return false
	}
	for _, s := range slots {
		if s.IsProcessing {
			return true
		}
	}
	return false
}

// TestRealServerKilledMidAnswer: the server is killed (SIGKILL) while it
// works on the extraction's request, and started again. The request that
// died is retried (by the client or the queue), the episode is extracted
// once, with no duplicate row, and its job completes: none is left
// running or failed.
func TestRealServerKilledMidAnswer(t *testing.T) {
	ctx := context.Background()
	srv := realChat(t)
	st, path := openStore(t)
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, realModel(t, srv, 3*time.Minute, 3)),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	_, _, err = st.AddEpisodeToExtract(ctx, realEpisode, 0)
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	defer q.Stop(ctx)

	require.Eventually(t, func() bool { return slotBusy(t, srv) }, time.Minute, 10*time.Millisecond, "the request reaches the server")
	time.Sleep(300 * time.Millisecond) // into the prompt or the answer
	recs, err := st.Extractions(ctx, "acme", "e1")
	require.NoError(t, err)
	require.Empty(t, recs, "the request is in flight: no answer yet")
	srv.Kill()
	killed := time.Now()
	srv.Start()
	t.Logf("the server was down for %s", time.Since(killed).Round(time.Millisecond))

	ended := waitEnded(t, st, time.Time{}, 2*time.Minute)
	require.NotEqual(t, sgam.ExtractionFailed, ended.Status, ended.Error)
	require.NoError(t, q.Stop(ctx))
	recs = requireExtractedOnce(t, st, path)
	// The request that died cost a call: a failed record of it, or a
	// retry within the client's attempts.
	calls := 0
	for _, r := range recs {
		calls += r.Calls
		if r.Status == sgam.ExtractionFailed {
			require.False(t, r.GaveUp, "not given up: %s", r.Error)
			require.Regexp(t, "unreachable|answered 503|EOF|reset", r.Error)
		}
	}
	require.GreaterOrEqual(t, calls, 2, "the killed request and the one answered")
}

// TestRealServerLoading: the queue's workers start while the server is
// still loading its model (it answers 503, or refuses connections): the
// client retries with backoff, the queue too, and once the model is
// ready the episode is extracted, once, with nothing failed for good.
func TestRealServerLoading(t *testing.T) {
	ctx := context.Background()
	srv := realChat(t)
	srv.Kill()
	st, path := openStore(t)
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, realModel(t, srv, 3*time.Minute, 4)),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	_, _, err = st.AddEpisodeToExtract(ctx, realEpisode, 0)
	require.NoError(t, err)
	srv.StartLoading()
	require.NoError(t, q.Start(ctx))
	defer q.Stop(ctx)

	ended := waitEnded(t, st, time.Time{}, 2*time.Minute)
	require.NotEqual(t, sgam.ExtractionFailed, ended.Status, ended.Error)
	require.NoError(t, q.Stop(ctx))
	recs := requireExtractedOnce(t, st, path)
	calls := 0
	for _, r := range recs {
		calls += r.Calls
		if r.Status == sgam.ExtractionFailed {
			require.False(t, r.GaveUp, "not given up: %s", r.Error)
			require.Regexp(t, "unreachable|answered 503", r.Error)
		}
	}
	require.GreaterOrEqual(t, calls, 2, "the first call came while the server loaded, and was retried")
}
