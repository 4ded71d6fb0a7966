package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

func assertionOf(subject string, value int, from time.Time) sgam.Assertion {
	return sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: subject, Attribute: "a"},
		Value: json.RawMessage(fmt.Sprint(value)), ValidFrom: from, Source: "e1"}
}

// gateClock is the system clock, except that once armed its next Now
// closes entered and waits for release. A write reads the clock inside its
// transaction, so the write that reads it first holds its transaction open,
// in the middle of its commit, until the test releases it.
type gateClock struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newGateClock() *gateClock {
	return &gateClock{entered: make(chan struct{}), release: make(chan struct{})}
}

func (c *gateClock) Now() time.Time {
	if c.armed.CompareAndSwap(true, false) {
		close(c.entered)
		<-c.release
	}
	return time.Now()
}

// TestGroupCommit: Asserts that queue while another is being written are
// committed together, in one transaction (one recorded_at); when one of
// them fails, the others still succeed, each with the answer it would have
// had alone. The first Assert is held inside its transaction (it reads a
// gated clock there), so the others queue behind it: no sleep guesses
// when it got there, and the queue must hold all of them before it goes
// on.
func TestGroupCommit(t *testing.T) {
	for _, withBad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", withBad), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "g.db")
			clock := newGateClock()
			st, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock})
			require.NoError(t, err)
			defer st.Close()
			june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			_, err = st.Assert(ctx, assertionOf("taken", 1, june))
			require.NoError(t, err)

			const n = 20
			answers := make([]struct {
				res sgam.WriteResult
				err error
			}, n+1)
			var wg sync.WaitGroup
			clock.armed.Store(true)
			wg.Go(func() { answers[0].res, answers[0].err = st.Assert(ctx, assertionOf("first", 0, june)) })
			// The first leads: it took itself off the queue and holds its
			// transaction open.
			select {
			case <-clock.entered:
			case <-time.After(30 * time.Second):
				t.Fatal("the first Assert never read the clock")
			}
			require.Zero(t, st.QueuedWrites())
			for i := 1; i <= n; i++ {
				as := assertionOf(fmt.Sprintf("s%d", i), i, june)
				if withBad && i == n/2 {
					as = assertionOf("taken", 2, june) // a different value at the same valid_from: a conflict
				}
				wg.Go(func() { answers[i].res, answers[i].err = st.Assert(ctx, as) })
			}
			// The others' goroutines queue (a poll: they run on the store's
			// real connections, which a synctest bubble cannot hold).
			require.Eventually(t, func() bool { return st.QueuedWrites() == n }, 10*time.Second, time.Millisecond, "the others queue")
			close(clock.release)
			wg.Wait()

			recorded := map[time.Time]int{}
			for i, ans := range answers {
				if withBad && i == n/2 {
					require.Equal(t, sgam.Conflict, sgam.ErrorCode(ans.err))
					continue
				}
				require.NoError(t, ans.err, i)
				require.NotNil(t, ans.res.Fact, i)
				if i > 0 {
					recorded[ans.res.Fact.RecordedAt]++
				}
			}
			if withBad {
				require.Len(t, recorded, n-1, "after the group failed, each was written alone")
			} else {
				require.Len(t, recorded, 1, "the queued writes were committed in one transaction")
			}
			v, err := st.Check(ctx)
			require.NoError(t, err)
			require.Empty(t, v)
			f, err := st.Get(ctx, sgam.Key{Tenant: "acme", Subject: "taken", Attribute: "a"}, sgam.At{})
			require.NoError(t, err)
			require.JSONEq(t, "1", string(f.Value))
		})
	}
}
