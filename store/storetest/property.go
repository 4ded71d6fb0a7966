package storetest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/refmodel"
)

// runProperty checks the store against the reference model: random
// sequences of assertions and retractions on a few keys, in random arrival
// order, then random probes at (V, K). Each run uses fresh tenants of one
// store; every operation is mirrored, with other values, into a neighbour
// tenant that must never show through.
func runProperty(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	base := b.at("2026-01-01T00:00:00Z")
	var run atomic.Int64
	values := []string{"a", "b", "c", ""} // "" is a retraction
	rapid.Check(t, func(rt *rapid.T) {
		n := run.Add(1)
		tenant, neighbour := fmt.Sprintf("p%d", n), fmt.Sprintf("p%d-n", n)
		attrs := []string{"x", "y"}
		models := map[string]*refmodel.Key{"x": {}, "y": {}}
		clock := base.Add(time.Duration(n) * 24 * time.Hour)
		ops := rapid.IntRange(1, 30).Draw(rt, "ops")
		var lastTx int64
		for i := range ops {
			attr := attrs[rapid.IntRange(0, 1).Draw(rt, "attr")]
			value := values[rapid.IntRange(0, len(values)-1).Draw(rt, "value")]
			validFrom := base.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "valid_from")) * time.Hour)
			clock = clock.Add(time.Duration(rapid.IntRange(0, 2).Draw(rt, "tx_step")) * time.Second)
			b.clock.Set(clock)
			lastTx = sgam.Micros(clock)
			k := key(tenant, "s", attr)
			var raw []byte
			var err error
			if value == "" {
				_, err = b.store.Retract(b.ctx, sgam.Retraction{Key: k, At: validFrom, Source: fmt.Sprintf("e%d", i)})
			} else {
				raw = jsonString(value)
				_, err = b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: raw, ValidFrom: validFrom, Source: fmt.Sprintf("e%d", i)})
			}
			want := models[attr].Apply(sgam.Micros(validFrom), raw, lastTx)
			if (want == refmodel.Rejected) != (err != nil) {
				rt.Fatalf("op %d (%s=%q at %s): model says %s, store says %v", i, attr, value, validFrom, want, err)
			}
			if err != nil && sgam.ErrorCode(err) != sgam.Conflict {
				rt.Fatalf("op %d: want a conflict, got %v", i, err)
			}
			// The neighbour writes the same key with its own values.
			nk := key(neighbour, "s", attr)
			nv := jsonString("neighbour-" + value)
			b.store.Assert(b.ctx, sgam.Assertion{Key: nk, Value: nv, ValidFrom: validFrom.Add(30 * time.Minute), Source: "n"})
		}
		for range 40 {
			attr := attrs[rapid.IntRange(0, 1).Draw(rt, "probe_attr")]
			v := base.Add(time.Duration(rapid.IntRange(-1, 22).Draw(rt, "probe_v")) * time.Hour)
			kt := sgam.FromMicros(rapid.Int64Range(lastTx-int64(ops)*2_000_000, lastTx+1).Draw(rt, "probe_k"))
			want, ok := models[attr].Value(sgam.Micros(v), sgam.Micros(kt))
			f, err := b.store.Get(b.ctx, key(tenant, "s", attr), sgam.At{AsOf: v, KnownAt: kt})
			if err != nil {
				rt.Fatalf("get: %v", err)
			}
			switch {
			case !ok && f != nil:
				rt.Fatalf("%s at (%s, %s): want no value, got %s (fact %d)", attr, v, kt, f.Value, f.ID)
			case ok && f == nil:
				rt.Fatalf("%s at (%s, %s): want %s, got no value", attr, v, kt, want)
			case ok && string(f.Value) != string(want):
				rt.Fatalf("%s at (%s, %s): want %s, got %s", attr, v, kt, want, f.Value)
			}
			state, err := b.store.State(b.ctx, tenant, "s", sgam.At{AsOf: v, KnownAt: kt})
			if err != nil {
				rt.Fatalf("state: %v", err)
			}
			got := map[string]json.RawMessage{}
			for _, f := range state {
				got[f.Attribute] = f.Value
			}
			if ok != (got[attr] != nil) || (ok && string(got[attr]) != string(want)) {
				rt.Fatalf("state %s at (%s, %s): want %s, got %s", attr, v, kt, want, got[attr])
			}
		}
	})
	b.requireClean()
}
