package sqlite_test

import (
	"context"
	"database/sql"
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

func assertionOf(subject string, value int, from time.Time) sgam.Assertion {
	return sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: subject, Attribute: "a"},
		Value: json.RawMessage(fmt.Sprint(value)), ValidFrom: from, Source: "e1"}
}

// TestGroupCommit: Asserts that queue while another is being written are
// committed together, in one transaction (one recorded_at); when one of
// them fails, the others still succeed, each with the answer it would have
// had alone. Another connection holds the write lock, so that the first
// Assert waits inside its transaction while the others queue behind it.
func TestGroupCommit(t *testing.T) {
	for _, withBad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", withBad), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "g.db")
			st, err := sqlite.Open(ctx, path, sqlite.Options{})
			require.NoError(t, err)
			defer st.Close()
			june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			_, err = st.Assert(ctx, assertionOf("taken", 1, june))
			require.NoError(t, err)

			lock, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			defer lock.Close()
			lock.SetMaxOpenConns(1)
			_, err = lock.Exec("BEGIN IMMEDIATE")
			require.NoError(t, err)

			const n = 20
			answers := make([]struct {
				res sgam.WriteResult
				err error
			}, n+1)
			var wg sync.WaitGroup
			wg.Go(func() { answers[0].res, answers[0].err = st.Assert(ctx, assertionOf("first", 0, june)) })
			// The first leads: it is taken off the queue, and waits for the lock.
			require.Eventually(t, func() bool { return st.QueuedWrites() == 0 }, 5*time.Second, time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			for i := 1; i <= n; i++ {
				as := assertionOf(fmt.Sprintf("s%d", i), i, june)
				if withBad && i == n/2 {
					as = assertionOf("taken", 2, june) // a different value at the same valid_from: a conflict
				}
				wg.Go(func() { answers[i].res, answers[i].err = st.Assert(ctx, as) })
			}
			require.Eventually(t, func() bool { return st.QueuedWrites() == n }, 5*time.Second, time.Millisecond, "the others queue")
			_, err = lock.Exec("COMMIT")
			require.NoError(t, err)
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
