package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/refmodel"
)

// Writers and OpsPerWriter size the concurrency test.
const (
	Writers      = 16
	OpsPerWriter = 40
)

func runConcurrency(t *testing.T, newStore Factory) {
	t.Parallel()
	ctx := t.Context()
	// The system clock: commit order is decided by the store, and the test
	// learns it from the recorded_at of each accepted write.
	store := newStore(t, Options{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type accepted struct {
		key sgam.Key
		op  refmodel.Op
	}
	var mu sync.Mutex
	var ok []accepted
	var wg sync.WaitGroup
	for w := range Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range OpsPerWriter {
				tenant := []string{tenantA, tenantB}[rng.IntN(2)]
				k := key(tenant, "s", fmt.Sprintf("k%d", rng.IntN(3)))
				validFrom := base.Add(time.Duration(rng.IntN(60)) * time.Hour)
				src := fmt.Sprintf("w%d-%d", w, i)
				var res sgam.WriteResult
				var err error
				var raw []byte
				if rng.IntN(5) == 0 {
					res, err = store.Retract(ctx, sgam.Retraction{Key: k, At: validFrom, Source: src})
				} else {
					raw = jsonString(fmt.Sprintf("v%d", rng.IntN(4)))
					res, err = store.Assert(ctx, sgam.Assertion{Key: k, Value: raw, ValidFrom: validFrom, Source: src})
				}
				if err != nil {
					if sgam.ErrorCode(err) != sgam.Conflict {
						t.Errorf("writer %d op %d: %v", w, i, err)
					}
					continue
				}
				if res.NoChange {
					continue
				}
				mu.Lock()
				ok = append(ok, accepted{k, refmodel.Op{ValidFrom: sgam.Micros(validFrom), Value: raw, RecordedAt: sgam.Micros(res.Fact.RecordedAt)}})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	v, err := store.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)

	models := map[sgam.Key]*refmodel.Key{}
	var lastTx int64
	for _, a := range ok {
		if models[a.key] == nil {
			models[a.key] = &refmodel.Key{}
		}
		models[a.key].Accept(a.op)
		lastTx = max(lastTx, a.op.RecordedAt)
	}
	for k, m := range models {
		for _, kt := range []int64{lastTx, lastTx - 500, lastTx - 5000, lastTx - 50000} {
			for h := -1; h < 62; h++ {
				asOf := base.Add(time.Duration(h) * time.Hour)
				want, has := m.Value(sgam.Micros(asOf), kt)
				f, err := store.Get(ctx, k, sgam.At{AsOf: asOf, KnownAt: sgam.FromMicros(kt)})
				require.NoError(t, err)
				if !has {
					require.Nil(t, f, "%s at %s known %d", k, asOf, kt)
					continue
				}
				require.NotNil(t, f, "%s at %s known %d", k, asOf, kt)
				require.Equal(t, string(want), string(f.Value), "%s at %s known %d", k, asOf, kt)
			}
		}
	}
}
