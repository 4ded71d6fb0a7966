package queue_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
)

// underestimated is a model that claims to answer at once and does not:
// what a job's timeout meets when the model is slower than the bound the
// queue was given.
type underestimated struct{ llm.Model }

func (underestimated) WorstCase() time.Duration { return 0 }

// runOne queues one episode of acme, starts q, waits until its
// extraction has ended (see queue.Wait) and returns its records.
func runOne(t *testing.T, st queue.Store, q *queue.Queue, content string) []sgam.Extraction {
	t.Helper()
	ctx := context.Background()
	_, _, err := st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: content}, 0)
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = queue.Wait(wctx, st, []queue.Ref{{Tenant: "acme", EpisodeID: "e1"}}, time.Time{}, 20*time.Millisecond, nil)
	require.NoError(t, err)
	require.NoError(t, q.Stop(ctx))
	recs, err := st.Extractions(ctx, "acme", "e1")
	require.NoError(t, err)
	return recs
}

// TestJobTimeoutCountsTheAttempt: a model slower than a job's timeout.
// The timeout is not taken for a shutdown: each attempt counts, leaves a
// failed record with what its call cost, and the last gives up; the
// calls are bounded by the job's attempts. (A job cut off by its timeout
// was snoozed as if the queue were stopping, losing no attempt: the model
// was called again and again, and nothing was recorded.)
func TestJobTimeoutCountsTheAttempt(t *testing.T) {
	fake := llmtest.New(t, "m", func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Delay: time.Minute} })
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", Timeout: time.Minute, MaxAttempts: 1})
	require.NoError(t, err)
	st, path := openStore(t)
	q, err := queue.OpenSQLite(context.Background(), path, st, extract.New(st, underestimated{client}),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, JobTimeout: 300 * time.Millisecond, MaxAttempts: 2})
	require.NoError(t, err)
	recs := runOne(t, st, q, "Mira lives in Oslo.")

	require.Equal(t, 2, fake.CallCount(), "one call per attempt, two attempts")
	require.Len(t, recs, 2)
	for i, r := range recs {
		require.Equal(t, sgam.ExtractionFailed, r.Status, i)
		require.Contains(t, r.Error, "timed out", i)
		require.Positive(t, r.TokensIn, "a call cut off counts the prompt's tokens (%d)", i)
		require.Equal(t, i == 1, r.GaveUp, i)
	}
	status := queueStatus(t, path, st)
	require.Equal(t, 1, status.Failed, "the job failed for good, visibly")
}

// TestJobTimeoutDuringStop: the last attempt's timeout passes while
// Stop waits for the job. It is the job's timeout, not the shutdown's
// cancel: the job fails for good, as its record says, rather than being
// given back to run again. (It was snoozed when Stop had begun.)
func TestJobTimeoutDuringStop(t *testing.T) {
	fake := llmtest.New(t, "m", func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Delay: time.Minute} })
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", Timeout: time.Minute, MaxAttempts: 1})
	require.NoError(t, err)
	st, path := openStore(t)
	ctx := context.Background()
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, underestimated{client}),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, JobTimeout: 2 * time.Second, MaxAttempts: 1})
	require.NoError(t, err)
	_, _, err = st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "Mira lives in Oslo."}, 0)
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	require.Eventually(t, func() bool { return fake.CallCount() == 1 }, time.Minute, 5*time.Millisecond)
	require.NoError(t, q.Stop(ctx), "a soft stop waits for the job, which its timeout ends")

	recs, err := st.Extractions(ctx, "acme", "e1")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.True(t, recs[0].GaveUp)
	status := queueStatus(t, path, st)
	require.Equal(t, 1, status.Failed, "the job failed for good, visibly")
	require.Zero(t, status.Available)
}

// TestModelSlowerThanItsTimeout: with the default job timeout (the
// model client's worst case and a margin), a model slower than the
// client's own timeout is cut off by the client, which retries as it is
// configured: calls = job attempts × client attempts, and the last record
// gives up.
func TestModelSlowerThanItsTimeout(t *testing.T) {
	fake := llmtest.New(t, "m", func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Delay: time.Minute} })
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", Timeout: 200 * time.Millisecond, MaxAttempts: 2, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	st, path := openStore(t)
	q, err := queue.OpenSQLite(context.Background(), path, st, extract.New(st, client),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: 2})
	require.NoError(t, err)
	recs := runOne(t, st, q, "Mira lives in Oslo.")
	require.Equal(t, 4, fake.CallCount())
	require.Len(t, recs, 2)
	require.Equal(t, 2, recs[0].Calls)
	require.True(t, recs[1].GaveUp)
	require.Positive(t, recs[1].TokensIn)
}

// TestJobTimeoutBelowTheModelRefused: a job timeout shorter than the
// model's worst case would cut off calls the client would finish, and a
// rescue not longer than the job timeout would run a live job twice:
// both are refused, by name.
func TestJobTimeoutBelowTheModelRefused(t *testing.T) {
	client, err := llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Timeout: 10 * time.Second, MaxAttempts: 3, MaxBackoff: time.Second})
	require.NoError(t, err)
	require.Equal(t, 32*time.Second, client.WorstCase())
	st, path := openStore(t)
	x := extract.New(st, client)
	_, err = queue.OpenSQLite(context.Background(), path, st, x, queue.Config{JobTimeout: 31 * time.Second})
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Equal(t, "job_timeout", sgam.ErrorField(err))
	require.Contains(t, err.Error(), "32s")
	_, err = queue.OpenSQLite(context.Background(), path, st, x, queue.Config{JobTimeout: time.Minute, RescueAfter: time.Minute})
	require.Equal(t, "rescue_after", sgam.ErrorField(err))
	q, err := queue.OpenSQLite(context.Background(), path, st, x, queue.Config{})
	require.NoError(t, err, "the defaults fit the model")
	require.NoError(t, q.Stop(context.Background()))
}

// TestJobRowsHoldNoContent: River keeps a failed job's errors for days,
// past a forget: they name the failure's kind and status, never the
// server's message, which may quote the episode.
func TestJobRowsHoldNoContent(t *testing.T) {
	const secret = "Mira's passport number is P123456"
	fake := llmtest.New(t, "m", func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Status: 400} })
	fake.Fault(llmtest.Reply{Status: 503})
	fake.ErrorMessage = "upstream failed on input: " + secret
	client, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", MaxAttempts: 1})
	require.NoError(t, err)
	st, path := openStore(t)
	q, err := queue.OpenSQLite(context.Background(), path, st, extract.New(st, client),
		queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	recs := runOne(t, st, q, secret)
	require.Len(t, recs, 2)
	require.Contains(t, recs[1].Error, secret, "the record, which forget deletes, has the whole message")

	db, err := sql.Open("sqlite", queue.SQLitePath(path))
	require.NoError(t, err)
	defer db.Close()
	var errs string
	require.NoError(t, db.QueryRow(`SELECT errors FROM river_job`).Scan(&errs))
	require.Contains(t, errs, "model server answered 503")
	require.Contains(t, errs, "model server answered 400")
	require.NotContains(t, errs, "P123456")
	require.NotContains(t, strings.ToLower(errs), "passport")
}

// queueStatus counts the jobs of the queue beside the ledger at path.
func queueStatus(t *testing.T, path string, st queue.Store) queue.Status {
	t.Helper()
	q, err := queue.OpenSQLite(context.Background(), path, st, extract.New(st, nil), queue.Config{})
	require.NoError(t, err)
	defer q.Stop(context.Background())
	s, err := q.Status(context.Background(), "acme")
	require.NoError(t, err)
	return s
}
