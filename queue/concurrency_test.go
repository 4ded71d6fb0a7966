package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// moves are 200 episodes in 20 sessions: 40 people moving between cities,
// each told five times, at instants that the sessions interleave.
func moves() []sgam.Episode {
	var out []sgam.Episode
	for i := range 200 {
		out = append(out, sgam.Episode{Tenant: "acme", ID: fmt.Sprintf("e%03d", i), Session: fmt.Sprintf("s%02d", i%20),
			Content:    fmt.Sprintf("p%02d lives in c%03d.", i%40, i),
			OccurredAt: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration((i*7919)%200) * time.Hour)})
	}
	return out
}

func openStore(t *testing.T) (*sqlite.Store, string) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.ApplyDefaultSchema(context.Background(), []byte(schemaFile), false)
	require.NoError(t, err)
	return st, path
}

// TestConcurrentWorkersMatchOneInOrder: 4 workers over 200 episodes in 20
// sessions leave the ledger that one worker extracting them in order
// leaves: the same value and sources for every key at every instant.
func TestConcurrentWorkersMatchOneInOrder(t *testing.T) {
	ctx := context.Background()
	fake := llmtest.New(t, "m", script)
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	eps := moves()

	one, _ := openStore(t)
	x := extract.New(one, model)
	for _, e := range eps {
		_, err := one.AddEpisode(ctx, e)
		require.NoError(t, err)
		_, err = x.Extract(ctx, "acme", e.ID, extract.Options{})
		require.NoError(t, err)
	}

	four, path := openStore(t)
	q, err := queue.OpenSQLite(ctx, path, four, extract.New(four, model), queue.Config{Workers: 4, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	var refs []queue.Ref
	for _, e := range eps {
		_, _, err := four.AddEpisodeToExtract(ctx, e, 0)
		require.NoError(t, err)
		refs = append(refs, queue.Ref{Tenant: "acme", EpisodeID: e.ID})
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = queue.Wait(wctx, four, refs, time.Time{}, 20*time.Millisecond, nil)
	require.NoError(t, err)
	require.NoError(t, q.Stop(ctx))

	for p := range 40 {
		k := sgam.Key{Tenant: "acme", Subject: fmt.Sprintf("p%02d", p), Attribute: "city"}
		for _, e := range eps {
			for _, at := range []time.Time{e.OccurredAt, e.OccurredAt.Add(-time.Microsecond), e.OccurredAt.Add(time.Minute)} {
				a, err := one.Get(ctx, k, sgam.At{AsOf: at})
				require.NoError(t, err)
				b, err := four.Get(ctx, k, sgam.At{AsOf: at})
				require.NoError(t, err)
				require.Equal(t, factView(a), factView(b), "%s at %s", k, at)
			}
		}
	}
	for _, s := range []*sqlite.Store{one, four} {
		v, err := s.Check(ctx)
		require.NoError(t, err)
		require.Empty(t, v)
	}
}

// factView is what a read answers, without the row's ids and
// transaction times (which depend on the order of the writes).
func factView(f *sgam.Fact) string {
	if f == nil {
		return "none"
	}
	to := "open"
	if f.ValidTo != nil {
		to = f.ValidTo.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s [%s, %s) from %s", f.Value, f.ValidFrom.Format(time.RFC3339), to, strings.Join(f.Sources, ","))
}

// TestBudgetDefers: a spent budget holds a tenant's jobs (another tenant's
// go on), losing none; raising it lets them finish.
func TestBudgetDefers(t *testing.T) {
	ctx := context.Background()
	fake := llmtest.New(t, "m", script)
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	st, path := openStore(t)
	const maxAttempts = 2
	q, err := queue.OpenSQLite(ctx, path, st, extract.New(st, model), queue.Config{Workers: 2, PollInterval: 20 * time.Millisecond,
		BudgetRecheck: 50 * time.Millisecond, MaxAttempts: maxAttempts})
	require.NoError(t, err)
	require.NoError(t, st.SetBudget(ctx, "acme", 1))
	var acme, other []queue.Ref
	for i := range 10 {
		for _, tenant := range []string{"acme", "globex"} {
			e, _, err := st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: tenant, ID: fmt.Sprintf("e%d", i), Content: fmt.Sprintf("p%d lives in c%d.", i, i)}, 0)
			require.NoError(t, err)
			ref := queue.Ref{Tenant: tenant, EpisodeID: e.ID}
			if tenant == "acme" {
				acme = append(acme, ref)
			} else {
				other = append(other, ref)
			}
		}
	}
	require.NoError(t, q.Start(ctx))
	defer q.Stop(ctx)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = queue.Wait(wctx, st, other, time.Time{}, 20*time.Millisecond, nil)
	require.NoError(t, err, "the other tenant's jobs run")

	// acme had 1 token: its first extraction spends it, the rest wait,
	// each looking again every BudgetRecheck (a River snooze). Wait until
	// every acme job that has not ended has looked more often than
	// MaxAttempts allows attempts: a snooze costs no attempt. (A bounded
	// poll, not fake time: River works the jobs on the real queue file,
	// which a synctest bubble cannot hold.)
	require.Eventually(t, func() bool {
		jobs, err := queue.Jobs(ctx, q, queue.ExtractArgs{}.Kind())
		require.NoError(t, err)
		n := 0
		for _, j := range jobs {
			var a queue.ExtractArgs
			require.NoError(t, json.Unmarshal(j.EncodedArgs, &a))
			if a.Tenant != "acme" {
				continue
			}
			n++
			var meta struct {
				Snoozes int `json:"snoozes"`
			}
			require.NoError(t, json.Unmarshal(j.Metadata, &meta))
			if j.State != rivertype.JobStateCompleted && meta.Snoozes <= maxAttempts {
				return false
			}
		}
		return n == len(acme)
	}, 30*time.Second, 20*time.Millisecond, "every waiting acme job rechecked its budget more than %d times", maxAttempts)
	done := 0
	for _, r := range acme {
		rec, err := queue.Ended(ctx, st, r, time.Time{})
		require.NoError(t, err)
		if rec != nil {
			done++
		}
	}
	require.LessOrEqual(t, done, 2, "at most the extractions in flight when the budget ran out")
	b, err := st.Budget(ctx, "acme")
	require.NoError(t, err)
	require.True(t, b.Exhausted())
	st0, err := q.Status(ctx, "acme")
	require.NoError(t, err)
	require.Zero(t, st0.Failed, "nothing failed or was lost")

	require.NoError(t, st.SetBudget(ctx, "acme", 1_000_000))
	ended, err := queue.Wait(wctx, st, acme, time.Time{}, 20*time.Millisecond, nil)
	require.NoError(t, err)
	for _, r := range acme {
		require.Equal(t, sgam.ExtractionDone, ended[r].Status)
	}
	require.Equal(t, 20, fake.CallCount())
}
