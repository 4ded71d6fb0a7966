package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// gated holds the first Assert until release is closed, so that the
// requests behind it queue up and commit as one group; it counts calls.
type gated struct {
	sgam.Store
	release       chan struct{}
	once          sync.Once
	mu            sync.Mutex
	asserts, many int
}

func (g *gated) Assert(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	g.once.Do(func() { <-g.release })
	g.mu.Lock()
	g.asserts++
	g.mu.Unlock()
	return g.Store.Assert(ctx, a)
}

func (g *gated) AssertMany(ctx context.Context, as []sgam.Assertion) ([]sgam.WriteResult, error) {
	g.mu.Lock()
	g.many++
	g.mu.Unlock()
	return g.Store.AssertMany(ctx, as)
}

func assertionOf(subject string, value int, from time.Time) sgam.Assertion {
	return sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: subject, Attribute: "a"},
		Value: json.RawMessage(fmt.Sprint(value)), ValidFrom: from, Source: "e1"}
}

// TestGroupCommit: requests queued behind a running commit are committed
// together; when one of them fails, the others still succeed, each with the
// answer it would have had alone.
func TestGroupCommit(t *testing.T) {
	for _, withBad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", withBad), func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"), sqlite.Options{})
			require.NoError(t, err)
			defer st.Close()
			june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			_, err = st.Assert(ctx, assertionOf("taken", 1, june))
			require.NoError(t, err)

			g := &gated{Store: st, release: make(chan struct{})}
			a := &asserter{st: g}
			const n = 20
			type answer struct {
				res sgam.WriteResult
				err error
			}
			answers := make([]answer, n+1)
			var wg sync.WaitGroup
			wg.Go(func() { // the leader, held inside its Assert
				answers[0].res, answers[0].err = a.assert(ctx, assertionOf("first", 0, june))
			})
			require.Eventually(t, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.leader && len(a.queue) == 0 }, 5*time.Second, time.Millisecond)
			for i := 1; i <= n; i++ {
				as := assertionOf(fmt.Sprintf("s%d", i), i, june)
				if withBad && i == n/2 {
					as = assertionOf("taken", 2, june) // a different value at the same valid_from: a conflict
				}
				wg.Go(func() { answers[i].res, answers[i].err = a.assert(ctx, as) })
			}
			require.Eventually(t, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return len(a.queue) == n }, 5*time.Second, time.Millisecond)
			close(g.release)
			wg.Wait()

			for i, ans := range answers {
				if withBad && i == n/2 {
					require.Equal(t, sgam.Conflict, sgam.ErrorCode(ans.err))
					continue
				}
				require.NoError(t, ans.err, i)
				require.NotZero(t, ans.res.Fact.ID, i)
			}
			require.Equal(t, 1, g.many, "the queued requests were tried as one group")
			if withBad {
				require.Equal(t, 1+n, g.asserts, "after the group failed, each was run alone")
			} else {
				require.Equal(t, 1, g.asserts, "only the leader ran alone")
			}
			require.False(t, a.leader)
			require.Empty(t, a.queue)
			v, err := st.Check(ctx)
			require.NoError(t, err)
			require.Empty(t, v)
			f, err := st.Get(ctx, sgam.Key{Tenant: "acme", Subject: "taken", Attribute: "a"}, sgam.At{})
			require.NoError(t, err)
			require.JSONEq(t, "1", string(f.Value))
		})
	}
}
