package storetest

import (
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/workload"
)

var benchFacts = flag.Int("sgam.facts", 100_000, "facts preloaded into the store before the store benchmarks (a multiple of 1000)")

// Benchmark runs the shared store benchmarks on the reference recipe's
// workload (package internal/workload): a store preloaded with
// -sgam.facts facts, then one fact per transaction, AssertMany of 1,000,
// current Get and Get at a past as_of (with p50/p99 latency metrics).
// Every driver reports the same figures.
func Benchmark(b *testing.B, newStore Factory) {
	n := *benchFacts
	if n < 1000 || n%1000 != 0 {
		b.Fatalf("-sgam.facts=%d: want a positive multiple of 1000", n)
	}
	ctx := b.Context()
	store := newStore(b, Options{})
	for i := 0; i < n; i += 1000 {
		if _, err := store.AssertMany(ctx, workload.Batch(i, 1000)); err != nil {
			b.Fatal(err)
		}
	}
	next := n // the workload continues from here

	b.Run(fmt.Sprintf("AssertOne/facts=%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := store.Assert(ctx, workload.Fact(next)); err != nil {
				b.Fatal(err)
			}
			next++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "facts/s")
	})
	b.Run(fmt.Sprintf("AssertOne16Writers/facts=%d", n), func(b *testing.B) {
		// 16 writers at once, each on keys of its own, one fact per
		// transaction: what a store does for many agents writing at once.
		const writers = 16
		var wg sync.WaitGroup
		var done atomic.Int64
		start := time.Now()
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; done.Add(1) <= int64(b.N); i++ {
					a := workload.Fact(next + i)
					a.Key.Subject = fmt.Sprintf("w%d-%d", w, i%100)
					if _, err := store.Assert(ctx, a); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		next += b.N
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "facts/s")
	})
	b.Run(fmt.Sprintf("AssertMany1000/facts=%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := store.AssertMany(ctx, workload.Batch(next, 1000)); err != nil {
				b.Fatal(err)
			}
			next += 1000
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "facts/s")
	})
	b.Run(fmt.Sprintf("GetCurrent/facts=%d", n), func(b *testing.B) {
		benchGets(b, store, sgam.At{})
	})
	b.Run(fmt.Sprintf("GetPastAsOf/facts=%d", n), func(b *testing.B) {
		benchGets(b, store, sgam.At{AsOf: workload.ValidFrom(n / 2)})
	})
	// The same batches validated against a schema (a string attribute):
	// compare with AssertMany1000 of the same run.
	if _, err := store.ApplyDefaultSchema(ctx, []byte("attributes:\n  a: {memory: task, type: string, description: the workload's value}\n"), false); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("AssertMany1000Schema/facts=%d", n), func(b *testing.B) {
		for b.Loop() {
			if _, err := store.AssertMany(ctx, workload.Batch(next, 1000)); err != nil {
				b.Fatal(err)
			}
			next += 1000
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "facts/s")
	})
	// Retype every believed row of the workload (all -sgam.facts of them
	// and what the benchmarks above added): sgam migrate's rate. Later
	// iterations find nothing left to do; rows/s is the first run's.
	if _, err := store.ApplyDefaultSchema(ctx, []byte(`attributes:
  a: {memory: task, type: string}
migrations:
  - name: bang
    retype: {attribute: a, transform: "value + '!'"}
`), false); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("MigrateRetype/facts=%d", n), func(b *testing.B) {
		var rows int
		var took time.Duration
		for b.Loop() {
			reports, err := store.Migrate(ctx, sgam.MigrateOptions{BatchKeys: 20})
			if err != nil {
				b.Fatal(err)
			}
			if reports[0].Rows > 0 {
				rows, took = reports[0].Rows, reports[0].Elapsed
			}
		}
		b.ReportMetric(float64(rows), "rows")
		b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
	})
	b.Run("AssertMany1000NewKeys", func(b *testing.B) {
		fresh := newStore(b, Options{})
		i := 0
		for b.Loop() {
			batch := workload.Batch(i, 1000)
			for j := range batch {
				batch[j].Key.Subject = fmt.Sprintf("n%09d", (i+j)/10)
				batch[j].Key.Attribute = fmt.Sprintf("a%d", (i+j)%10)
			}
			if _, err := fresh.AssertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			i += 1000
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "facts/s")
	})
}

func benchGets(b *testing.B, store sgam.Store, at sgam.At) {
	ctx := b.Context()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		f, err := store.Get(ctx, workload.Key(i), at)
		lat = append(lat, time.Since(t0))
		if err != nil || f == nil {
			b.Fatalf("get %s: %v, %v", workload.Key(i), f, err)
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}
