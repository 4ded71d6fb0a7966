package recall

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// queued waits until n recalls wait on ts.
func queued(t *testing.T, ts *turns, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.waiting) == n
	}, 10*time.Second, time.Millisecond)
}

// TestTurnsInOrder: waiters get the turn in the order they came, whether
// they wait on a pipe or (none could be opened) on a channel.
func TestTurnsInOrder(t *testing.T) {
	ts := &turns{free: 1}
	ctx := context.Background()
	require.NoError(t, ts.take(ctx))
	// Waiters 0 and 2 find a waiter without a pipe among the spares, as
	// when no pipe could be opened.
	got := make(chan int, 5)
	for i := range 5 {
		w := i
		if i == 0 || i == 2 {
			ts.mu.Lock()
			ts.spare = []*waiter{{ready: make(chan struct{})}}
			ts.mu.Unlock()
		}
		go func() {
			if ts.take(ctx) == nil {
				got <- w
			}
		}()
		queued(t, ts, i+1)
	}
	for i := range 5 {
		ts.give()
		require.Equal(t, i, <-got)
	}
	ts.give()
	require.Equal(t, 1, ts.free)
	require.Empty(t, ts.waiting)
	require.NotEmpty(t, ts.spare, "the pipes are kept for the next waiters")
	for _, w := range ts.spare {
		require.NotNil(t, w.r, "a waiter without a pipe is not kept")
	}
}

// TestTurnsWaitEnds: a waiter whose context ends leaves the queue with
// Unavailable, and the turn goes to the next.
func TestTurnsWaitEnds(t *testing.T) {
	ts := &turns{free: 1}
	require.NoError(t, ts.take(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() { first <- ts.take(ctx) }()
	queued(t, ts, 1)
	second := make(chan error)
	go func() { second <- ts.take(context.Background()) }()
	queued(t, ts, 2)

	cancel()
	err := <-first
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "%v", err)
	require.ErrorIs(t, err, context.Canceled)
	queued(t, ts, 1)
	ts.give()
	require.NoError(t, <-second)
	ts.give()
	require.Equal(t, 1, ts.free)
}

// TestTurnsUnderLoad: recalls that take and give turns, some of whose
// contexts end as they wait, never hold more turns than there are, lose
// none, wake every waiter, and leave no more pipes open than the spares.
func TestTurnsUnderLoad(t *testing.T) {
	before := openFiles()
	ts := &turns{free: 2}
	var holding, most atomic.Int32
	var wg sync.WaitGroup
	for g := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				// Half wait as long as it takes: a wake lost would hang them.
				wait := time.Hour
				if g%2 == 0 {
					wait = time.Duration(rng.IntN(300)) * time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				if ts.take(ctx) == nil {
					n := holding.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
					holding.Add(-1)
					ts.give()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int32(2))
	require.Equal(t, 2, ts.free, "every turn came back")
	require.Empty(t, ts.waiting)
	require.LessOrEqual(t, len(ts.spare), maxSpare)
	if before >= 0 {
		require.LessOrEqual(t, openFiles(), before+2*len(ts.spare))
	}
}

// openFiles counts this process's open descriptors (-1 where /proc has
// none).
func openFiles() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}
