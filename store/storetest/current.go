package storetest

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sgam-dev/sgam"
)

// runCurrent checks that current reads (At{}), which a store may serve from
// a cache, always equal the same read with both instants spelled out,
// while writes, retractions and clock moves (forwards and back) interleave.
func runCurrent(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	base := b.at("2026-01-01T00:00:00Z")
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		tenant := fmt.Sprintf("c%d", run)
		keys := []sgam.Key{key(tenant, "s", "x"), key(tenant, "s", "y")}
		clock := base
		for i := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 0, 1:
				k := keys[rapid.IntRange(0, 1).Draw(rt, "key")]
				vf := base.Add(time.Duration(rapid.IntRange(0, 30).Draw(rt, "valid_from")) * time.Hour)
				if rapid.Bool().Draw(rt, "retract") {
					b.store.Retract(b.ctx, sgam.Retraction{Key: k, At: vf, Source: fmt.Sprintf("e%d", i)})
				} else {
					b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: jsonString(fmt.Sprintf("v%d", i)), ValidFrom: vf, Source: fmt.Sprintf("e%d", i)})
				}
			case 2:
				clock = clock.Add(time.Duration(rapid.IntRange(1, 10).Draw(rt, "forward")) * time.Hour)
			case 3:
				clock = clock.Add(-time.Duration(rapid.IntRange(1, 10).Draw(rt, "back")) * time.Hour)
			}
			b.clock.Set(clock)
			for _, k := range keys {
				for range 2 { // the second read may come from a cache
					got, err := b.store.Get(b.ctx, k, sgam.At{})
					if err != nil {
						rt.Fatal(err)
					}
					want, err := b.store.Get(b.ctx, k, sgam.At{AsOf: clock, KnownAt: clock})
					if err != nil {
						rt.Fatal(err)
					}
					if (got == nil) != (want == nil) || (got != nil && (got.ID != want.ID || fmt.Sprint(got.Sources) != fmt.Sprint(want.Sources))) {
						rt.Fatalf("step %d, %s at %s: current read %+v, explicit read %+v", i, k, clock, got, want)
					}
				}
			}
		}
	})
}
