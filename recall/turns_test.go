package recall_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// held is a store whose searches wait until release is closed, counting
// those that began.
type held struct {
	recall.Store
	began   atomic.Int32
	release chan struct{}
}

func (h *held) SearchEpisodes(ctx context.Context, q sgam.SearchQuery) ([]sgam.EpisodeHit, error) {
	h.began.Add(1)
	<-h.release
	return h.Store.SearchEpisodes(ctx, q)
}

// slowEmbedder answers once release is closed, counting the calls that
// began.
type slowEmbedder struct {
	began   atomic.Int32
	release chan struct{}
}

func (e *slowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	e.began.Add(1)
	<-e.release
	return [][]float32{{1, 0}}, 1, nil
}

func (*slowEmbedder) Model() string { return "slow" }

// TestConcurrency: with WithConcurrency(1), a second recall waits while
// the first computes, never reaching the store, and one whose context
// ends while it waits is Unavailable; a recall waiting on the embeddings
// server gives its turn up meanwhile.
func TestConcurrency(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	w.passport("globex")
	q := recall.Query{Tenant: "acme", Question: "When is the passport renewal deadline?", Evidence: recall.EvidenceAlways}

	t.Run("in turn", func(t *testing.T) {
		st := &held{Store: w.store, release: make(chan struct{})}
		r := recall.New(st).WithClock(w.clock).WithConcurrency(1)
		first := make(chan error)
		go func() { _, err := r.Recall(w.ctx, q); first <- err }()
		require.Eventually(t, func() bool { return st.began.Load() == 1 }, 10*time.Second, time.Millisecond)

		ctx, cancel := context.WithTimeout(w.ctx, 100*time.Millisecond)
		defer cancel()
		_, err := r.Recall(ctx, recall.Query{Tenant: "globex", Question: q.Question})
		require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "did not get its turn")
		require.EqualValues(t, 1, st.began.Load(), "the waiting recall read nothing")

		close(st.release)
		require.NoError(t, <-first)
		c, err := r.Recall(w.ctx, q)
		require.NoError(t, err, "the turn was given back")
		require.NotEmpty(t, c.Evidence)
		require.EqualValues(t, 2, st.began.Load())
	})

	t.Run("not while embedding", func(t *testing.T) {
		emb := &slowEmbedder{release: make(chan struct{})}
		r := recall.New(w.store).WithClock(w.clock).WithEmbedder(emb, w.store).WithConcurrency(1)
		first := make(chan error)
		go func() { _, err := r.Recall(w.ctx, q); first <- err }()
		require.Eventually(t, func() bool { return emb.began.Load() == 1 }, 10*time.Second, time.Millisecond)

		done := make(chan error)
		go func() {
			_, err := r.Recall(w.ctx, recall.Query{Tenant: "globex", Question: q.Question})
			done <- err
		}()
		require.Eventually(t, func() bool { return emb.began.Load() == 2 }, 10*time.Second, time.Millisecond,
			"the second recall got the turn the first gave up, and reached its own embedding")
		close(emb.release)
		require.NoError(t, <-first)
		require.NoError(t, <-done)
	})
}

// TestDefaultConcurrency: a recall over SQLite computes throughout, one
// per core; one over PostgreSQL waits on round trips, two per core.
func TestDefaultConcurrency(t *testing.T) {
	require.Equal(t, runtime.GOMAXPROCS(0), recall.DefaultConcurrency(false))
	require.Equal(t, 2*runtime.GOMAXPROCS(0), recall.DefaultConcurrency(true))
}
