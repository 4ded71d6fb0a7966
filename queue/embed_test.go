package queue_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestMain stops the throwaway PostgreSQL server of TestEmbedJobPostgres.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// logBuffer collects a queue's logs, safe for its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// roundCounter is a queue's store that counts the dispatcher's rounds:
// the dispatcher asks for the due queued episodes once a round.
type roundCounter struct {
	vectorStore
	rounds atomic.Int64
}

func (r *roundCounter) QueuedExtractions(ctx context.Context, limit int, dueOnly bool) ([]sgam.QueuedExtraction, error) {
	if dueOnly {
		r.rounds.Add(1)
	}
	return r.vectorStore.QueuedExtractions(ctx, limit, dueOnly)
}

// await waits until the dispatcher has run n more rounds: a bounded poll,
// not fake time, since the dispatcher runs beside River's client on the
// real queue file, which a synctest bubble cannot hold.
func (r *roundCounter) await(t *testing.T, n int64) {
	t.Helper()
	target := r.rounds.Load() + n
	require.Eventually(t, func() bool { return r.rounds.Load() >= target }, 30*time.Second, 10*time.Millisecond,
		"the dispatcher ran %d more rounds", n)
}

func embedder(t *testing.T, fake *llmtest.Server, model string, tweak ...func(*llm.EmbedConfig)) *llm.EmbedClient {
	t.Helper()
	cfg := llm.EmbedConfig{BaseURL: fake.URL, Model: model}
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := llm.NewEmbedder(cfg)
	require.NoError(t, err)
	return e
}

// vectorStore is a queue's store that keeps vectors, as both stores do.
type vectorStore interface {
	queue.Store
	sgam.Embeddings
}

func startQueue(t *testing.T, path string, st vectorStore, x *extract.Extractor, e llm.Embedder, logs *logBuffer) *queue.Queue {
	t.Helper()
	cfg := queue.Config{Workers: 2, PollInterval: 50 * time.Millisecond, Embedder: e, Embeddings: st}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	q, err := queue.Open(t.Context(), path, st, x, cfg)
	require.NoError(t, err)
	require.NoError(t, q.Start(t.Context()))
	return q
}

func nearest(t *testing.T, st sgam.VectorSearch, tenant, model, question string, limit int) []string {
	t.Helper()
	hits, err := st.NearestEpisodes(t.Context(), sgam.VectorQuery{Tenant: tenant, Model: model, Vector: llmtest.Embedding(model, question, 64), Limit: limit})
	require.NoError(t, err)
	ids := []string{}
	for _, h := range hits {
		require.Equal(t, tenant, h.Episode.Tenant)
		ids = append(ids, h.Episode.ID)
	}
	return ids
}

func allEmbedded(t *testing.T, st sgam.Embeddings, model string) func() bool {
	return func() bool {
		left, err := st.EpisodesToEmbed(t.Context(), model, 1)
		require.NoError(t, err)
		return len(left) == 0
	}
}

// TestEmbedJob: episodes of two tenants are extracted and embedded in the
// background, each vector under its episode's tenant; a 429 is retried by
// River; a forgotten episode's vector goes with it; a new model embeds
// every episode again from its content, with no extraction call, and the
// old model's vectors go once it is done.
func TestEmbedJob(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "e.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.ApplyDefaultSchema(ctx, []byte(schemaFile), false)
	require.NoError(t, err)
	fake := llmtest.New(t, "m", script)
	chat, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	x := extract.New(st, chat)

	tenants := []string{"acme", "globex"}
	since := time.Now().Add(-time.Second)
	var refs []queue.Ref
	for i := range 40 {
		e, _, err := st.AddEpisodeToExtract(ctx, sgam.Episode{Tenant: tenants[i%2], ID: fmt.Sprintf("e%03d", i), Content: fmt.Sprintf("p%03d lives in c%03d.", i, i)}, 0)
		require.NoError(t, err)
		refs = append(refs, queue.Ref{Tenant: e.Tenant, EpisodeID: e.ID})
	}
	// No retry in the client: the 429 fails the job's first attempt, and
	// River retries it (after a second).
	fake.FaultEmbed(llmtest.EmbedReply{Status: 429})
	q := startQueue(t, path, st, x, embedder(t, fake, "emb-1", func(c *llm.EmbedConfig) { c.MaxRetries = -1 }), nil)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = queue.Wait(wctx, st, refs, since, 50*time.Millisecond, nil)
	require.NoError(t, err)
	require.Eventually(t, allEmbedded(t, st, "emb-1"), 30*time.Second, 50*time.Millisecond)
	require.NoError(t, q.Stop(ctx))
	require.Equal(t, 2, fake.EmbedCallCount(), "the refused request, then one of all 40 episodes")
	require.Equal(t, 80, fake.EmbedInputCount())
	chatCalls := fake.CallCount()
	require.Equal(t, 40, chatCalls)

	require.Equal(t, "e004", nearest(t, st, "acme", "emb-1", "who lives in c004?", 3)[0], "the episode that shares the most words first")
	require.Equal(t, "e005", nearest(t, st, "globex", "emb-1", "who lives in c005?", 3)[0])
	require.NotContains(t, nearest(t, st, "globex", "emb-1", "who lives in c004?", 20), "e004", "acme's episode is not globex's")

	_, err = st.Forget(ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e004"})
	require.NoError(t, err)
	require.NotContains(t, nearest(t, st, "acme", "emb-1", "who lives in c004?", 20), "e004", "its vector went with it")

	// Another model: everything is embedded again, nothing extracted.
	q = startQueue(t, path, st, x, embedder(t, fake, "emb-2"), nil)
	require.Eventually(t, allEmbedded(t, st, "emb-2"), 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return len(nearest(t, st, "acme", "emb-1", "c006", 1)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the old model's vectors go after the full pass")
	require.NoError(t, q.Stop(ctx))
	require.Equal(t, chatCalls, fake.CallCount(), "no extraction call")
	require.Equal(t, 80+39, fake.EmbedInputCount(), "the 39 episodes left, once each")
	require.Equal(t, "e006", nearest(t, st, "acme", "emb-2", "who lives in c006?", 3)[0])
	for _, c := range fake.EmbedCalls()[2:] {
		require.Equal(t, "emb-2", c.Model)
	}
}

// TestEmbedFailures: what no retry mends ends the job, logged without the
// key, and pauses the dispatcher; a text the server refuses is tried at
// half its length, and passed over when even its beginning is refused.
func TestEmbedFailures(t *testing.T) {
	open := func(t *testing.T, contents ...string) (*sqlite.Store, string, *extract.Extractor) {
		path := filepath.Join(t.TempDir(), "f.db")
		st, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		for i, c := range contents {
			_, err := st.AddEpisode(t.Context(), sgam.Episode{Tenant: "acme", ID: fmt.Sprintf("e%d", i), Content: c})
			require.NoError(t, err)
		}
		return st, path, extract.New(st, nil)
	}
	// paused checks that the embedding job is not inserted again while the
	// dispatcher runs ten more rounds, each of which would insert it were
	// it not paused (episodes are left without a vector).
	paused := func(t *testing.T, q *queue.Queue, rounds *roundCounter) {
		t.Helper()
		rounds.await(t, 10)
		jobs, err := queue.Jobs(t.Context(), q, queue.EmbedArgs{}.Kind())
		require.NoError(t, err)
		require.Len(t, jobs, 1, "paused: not inserted again")
	}

	t.Run("refused key", func(t *testing.T) {
		st, path, x := open(t, "one", "two", "three")
		fake := llmtest.New(t, "m", nil)
		fake.APIKey = "sk-right"
		logs := &logBuffer{}
		rounds := &roundCounter{vectorStore: st}
		q := startQueue(t, path, rounds, x, embedder(t, fake, "emb", func(c *llm.EmbedConfig) { c.APIKey = "sk-wrong-secret" }), logs)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "embedding failed") }, 10*time.Second, 20*time.Millisecond)
		paused(t, q, rounds)
		require.Equal(t, 1, strings.Count(logs.String(), "embedding failed"))
		require.NoError(t, q.Stop(t.Context()))
		require.Contains(t, logs.String(), "401")
		require.NotContains(t, logs.String(), "sk-wrong-secret")
		left, err := st.EpisodesToEmbed(t.Context(), "emb", 10)
		require.NoError(t, err)
		require.Len(t, left, 3)
	})

	t.Run("wrong number of vectors", func(t *testing.T) {
		st, path, x := open(t, "one", "two", "three")
		fake := llmtest.New(t, "m", nil)
		fake.FaultEmbed(llmtest.EmbedReply{Vectors: 1})
		logs := &logBuffer{}
		rounds := &roundCounter{vectorStore: st}
		q := startQueue(t, path, rounds, x, embedder(t, fake, "emb"), logs)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "embedding failed") }, 10*time.Second, 20*time.Millisecond)
		paused(t, q, rounds)
		require.Equal(t, 1, strings.Count(logs.String(), "embedding failed"))
		require.NoError(t, q.Stop(t.Context()))
		require.Contains(t, logs.String(), "1 vectors for 3 texts")
		require.Equal(t, 1, fake.EmbedCallCount())
	})

	t.Run("slower than the job timeout", func(t *testing.T) {
		// A batch the server answers after the job's timeout: each attempt
		// counts and the job gives up, rather than being snoozed to send the
		// same batch again at once, forever.
		st, path, x := open(t, "one", "two")
		fake := llmtest.New(t, "m", nil)
		fake.FaultEmbed(llmtest.EmbedReply{Delay: time.Minute}, llmtest.EmbedReply{Delay: time.Minute})
		q, err := queue.Open(t.Context(), path, st, x, queue.Config{Workers: 1, PollInterval: 50 * time.Millisecond,
			JobTimeout: 300 * time.Millisecond, MaxAttempts: 1, Embedder: embedder(t, fake, "emb"), Embeddings: st})
		require.NoError(t, err)
		require.NoError(t, q.Start(t.Context()))
		var gaveUp *rivertype.JobRow
		require.Eventually(t, func() bool {
			jobs, err := queue.Jobs(t.Context(), q, queue.EmbedArgs{}.Kind())
			require.NoError(t, err)
			if len(jobs) == 0 {
				return false
			}
			gaveUp = jobs[0]
			return gaveUp.State == rivertype.JobStateDiscarded
		}, 10*time.Second, 20*time.Millisecond, "the job gave up")
		require.NoError(t, q.Stop(t.Context()))
		require.Len(t, gaveUp.Errors, 1)
		require.Contains(t, gaveUp.Errors[0].Error, "timeout passed before a batch was stored")
		require.LessOrEqual(t, fake.EmbedCallCount(), 3, "one call an attempt, and a job inserted again by the dispatcher")
	})

	t.Run("refused texts", func(t *testing.T) {
		long := strings.Repeat("word ", 800) // 4000 bytes
		st, path, x := open(t, "short one", long, "short two", strings.Repeat("bad ", 512))
		fake := llmtest.New(t, "m", nil)
		ok := llmtest.EmbedReply{}
		refused := llmtest.EmbedReply{Status: 400}
		fake.FaultEmbed(
			refused,     // the batch
			ok,          // e0
			refused, ok, // e1, then its first half
			ok,               // e2
			refused, refused, // e3 (2048 bytes), then its first half (1024): passed over
		)
		logs := &logBuffer{}
		rounds := &roundCounter{vectorStore: st}
		q := startQueue(t, path, rounds, x, embedder(t, fake, "emb"), logs)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "passed episodes over") }, 10*time.Second, 20*time.Millisecond)
		paused(t, q, rounds)
		require.NoError(t, q.Stop(t.Context()))
		calls := fake.EmbedCalls()
		require.Len(t, calls, 7, "paused after the pass: no job again")
		require.Equal(t, []string{long[:2000]}, calls[3].Input, "half of the refused text, on a rune boundary")
		require.Contains(t, logs.String(), "embedded by its beginning")
		require.Contains(t, logs.String(), `"episode_id":"e3"`)
		left, err := st.EpisodesToEmbed(t.Context(), "emb", 10)
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, "e3", left[0].ID)
		require.Equal(t, []string{"e1"}, nearest(t, st, "acme", "emb", "word word", 1))
	})
}

// TestEmbedJobPostgres: the job on PostgreSQL, where River's tables share
// the ledger's database and every transaction is scoped by row-level
// security: one batch holds episodes of two tenants.
func TestEmbedJobPostgres(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	st, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer st.Close()
	for i := range 30 {
		_, err := st.AddEpisode(ctx, sgam.Episode{Tenant: []string{"acme", "globex"}[i%2], ID: fmt.Sprintf("e%03d", i), Content: fmt.Sprintf("p%03d lives in c%03d.", i, i)})
		require.NoError(t, err)
	}
	fake := llmtest.New(t, "m", nil)
	q := startQueue(t, url, st, extract.New(st, nil), embedder(t, fake, "emb"), nil)
	require.Eventually(t, allEmbedded(t, st, "emb"), 30*time.Second, 50*time.Millisecond)
	require.NoError(t, q.Stop(ctx))
	require.Equal(t, 1, fake.EmbedCallCount(), "one batch of both tenants")
	require.Equal(t, "e007", nearest(t, st, "globex", "emb", "who lives in c007?", 3)[0])
	require.NotContains(t, nearest(t, st, "acme", "emb", "who lives in c007?", 30), "e007")
}
