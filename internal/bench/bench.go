// Package bench measures the embedded store on the reference recipe's
// workload and runs the reference recipe itself in the same run, so that
// `sgam bench` can print ratios rather than wall times from different days.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/workload"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// Progress reports a phase and how far it got (done of total).
type Progress func(phase string, done, total int)

// Options select what to measure.
type Options struct {
	Dir      string // where the databases go; a temporary folder when empty
	Facts    int    // facts for the base scale (and the reference recipe)
	BigFacts int    // facts for the scale check; 0 skips it
	Reads    int    // reads per read measurement
	// Reference is the path of reference_recipe.py; Python the interpreter.
	// An empty Reference skips the reference.
	Reference, Python string
	Progress          Progress
}

// Reference is what the reference recipe printed.
type Reference struct {
	WritesPerS    float64 `json:"writes_per_s"`
	AsOfReadsPerS float64 `json:"asof_reads_per_s"`
	N             int     `json:"n"`
}

// Scale is what sgam measured with Facts facts in the store.
type Scale struct {
	Facts int `json:"facts"`
	// One fact per transaction, each replacing its subject's open value.
	SingleWritesPerS float64 `json:"single_writes_per_s"`
	// One fact per Assert from Writers goroutines at once, the same
	// workload: the store commits concurrent writes together.
	ConcurrentWritesPerS float64 `json:"concurrent_writes_per_s"`
	Writers              int     `json:"writers"`
	// AssertMany, 1,000 facts per transaction: the reference workload
	// (each fact replaces its subject's open value; 1,000 subjects) and a
	// bulk load of new keys in key order.
	BatchReplacePerS float64 `json:"batch_replace_facts_per_s"`
	BatchLoadPerS    float64 `json:"batch_load_facts_per_s"`
	// Current reads, from the cache and from SQLite (cache off).
	GetCurrentPerS    float64 `json:"get_current_per_s"`
	GetCurrentSQLPerS float64 `json:"get_current_sqlite_per_s"`
	// Reads at a past as_of (the reference's read), with latency percentiles.
	GetPastPerS float64       `json:"get_past_per_s"`
	GetPastP50  time.Duration `json:"get_past_p50_ns"`
	GetPastP99  time.Duration `json:"get_past_p99_ns"`
}

// Result is one run.
type Result struct {
	Reference *Reference `json:"reference,omitempty"`
	Base      Scale      `json:"base"`
	Big       *Scale     `json:"big,omitempty"`
}

// Run measures.
func Run(ctx context.Context, opts Options) (Result, error) {
	var res Result
	if opts.Facts <= 0 {
		opts.Facts = 100_000
	}
	if opts.Reads <= 0 {
		opts.Reads = 100_000
	}
	if opts.Progress == nil {
		opts.Progress = func(string, int, int) {}
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "sgam-bench-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		opts.Dir = dir
	}
	if opts.Reference != "" {
		opts.Progress("reference recipe (python)", 0, 1)
		ref, err := runReference(ctx, opts)
		if err != nil {
			return res, err
		}
		res.Reference = &ref
		opts.Progress("reference recipe (python)", 1, 1)
	}
	var err error
	if res.Base, err = measure(ctx, opts, opts.Facts, true); err != nil {
		return res, err
	}
	if opts.BigFacts > 0 {
		big, err := measure(ctx, opts, opts.BigFacts, false)
		if err != nil {
			return res, err
		}
		res.Big = &big
	}
	return res, nil
}

func runReference(ctx context.Context, opts Options) (Reference, error) {
	python := opts.Python
	if python == "" {
		python = "python3"
	}
	db := filepath.Join(opts.Dir, "reference.db")
	out, err := exec.CommandContext(ctx, python, opts.Reference, "bench", fmt.Sprint(opts.Facts), db).Output()
	if err != nil {
		return Reference{}, fmt.Errorf("reference recipe: %w", err)
	}
	var ref Reference
	if err := json.Unmarshal(out, &ref); err != nil {
		return Reference{}, fmt.Errorf("reference recipe printed %q: %w", out, err)
	}
	return ref, nil
}

// measure fills a store with n facts and measures every figure at that
// size. With singleFromEmpty, single-fact writes build the store from empty
// as the reference does; otherwise the store is bulk-loaded and single
// writes continue from there.
func measure(ctx context.Context, opts Options, n int, singleFromEmpty bool) (Scale, error) {
	sc := Scale{Facts: n}
	open := func(name string, o sqlite.Options) (*sqlite.Store, error) {
		path := filepath.Join(opts.Dir, fmt.Sprintf("%s-%d.db", name, n))
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		return sqlite.Open(ctx, path, o)
	}
	label := func(s string) string { return fmt.Sprintf("%s (%d facts)", s, n) }

	// AssertMany, the reference workload.
	s, err := open("batch", sqlite.Options{})
	if err != nil {
		return sc, err
	}
	defer s.Close()
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		if _, err := s.AssertMany(ctx, workload.Batch(i, min(1000, n-i))); err != nil {
			return sc, err
		}
		opts.Progress(label("AssertMany, replacing"), i+1000, n)
	}
	sc.BatchReplacePerS = perSecond(n, time.Since(start))

	// Single-fact transactions.
	single := s
	from := n
	count := min(n, 20_000)
	if singleFromEmpty {
		if single, err = open("single", sqlite.Options{}); err != nil {
			return sc, err
		}
		defer single.Close()
		from, count = 0, n
	}
	start = time.Now()
	for i := from; i < from+count; i++ {
		if _, err := single.Assert(ctx, workload.Fact(i)); err != nil {
			return sc, err
		}
		if i%1000 == 0 {
			opts.Progress(label("one fact per transaction"), i-from, count)
		}
	}
	sc.SingleWritesPerS = perSecond(count, time.Since(start))

	// The same workload from Writers goroutines, each taking the next fact.
	sc.Writers = Writers
	from += count
	if sc.ConcurrentWritesPerS, err = concurrent(ctx, single, from, count, func(done int) {
		opts.Progress(label(fmt.Sprintf("one fact per Assert, %d writers", Writers)), done, count)
	}); err != nil {
		return sc, err
	}

	// Reads, on the bulk-loaded store.
	sc.GetCurrentPerS, _, _, err = reads(ctx, s, opts, label("current Get, cached"), sgam.At{})
	if err != nil {
		return sc, err
	}
	nocache, err := sqlite.Open(ctx, filepath.Join(opts.Dir, fmt.Sprintf("batch-%d.db", n)), sqlite.Options{NoCache: true})
	if err != nil {
		return sc, err
	}
	defer nocache.Close()
	sc.GetCurrentSQLPerS, _, _, err = reads(ctx, nocache, opts, label("current Get, SQLite"), sgam.At{})
	if err != nil {
		return sc, err
	}
	sc.GetPastPerS, sc.GetPastP50, sc.GetPastP99, err = reads(ctx, s, opts, label("Get at a past as_of"), sgam.At{AsOf: workload.ValidFrom(n / 2)})
	if err != nil {
		return sc, err
	}

	// AssertMany, a bulk load of new keys in key order.
	load, err := open("load", sqlite.Options{})
	if err != nil {
		return sc, err
	}
	defer load.Close()
	start = time.Now()
	for i := 0; i < n; i += 1000 {
		b := workload.Batch(i, min(1000, n-i))
		for j := range b {
			b[j].Key.Subject = fmt.Sprintf("n%09d", (i+j)/10)
			b[j].Key.Attribute = fmt.Sprintf("a%d", (i+j)%10)
		}
		if _, err := load.AssertMany(ctx, b); err != nil {
			return sc, err
		}
		opts.Progress(label("AssertMany, loading new keys"), i+1000, n)
	}
	sc.BatchLoadPerS = perSecond(n, time.Since(start))
	return sc, nil
}

// Writers is how many goroutines write at once in the concurrent measure.
const Writers = 16

// concurrent writes facts [from, from+n) of the workload from Writers
// goroutines, one fact per Assert, and returns facts/s.
func concurrent(ctx context.Context, s *sqlite.Store, from, n int, progress func(int)) (float64, error) {
	var next atomic.Int64
	next.Store(int64(from))
	errs := make(chan error, Writers)
	start := time.Now()
	var wg sync.WaitGroup
	for range Writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= from+n {
					return
				}
				if _, err := s.Assert(ctx, workload.Fact(i)); err != nil {
					errs <- err
					return
				}
				if (i-from)%1000 == 0 {
					progress(i - from)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return perSecond(n, time.Since(start)), nil
}

// reads runs opts.Reads Gets round-robin over the workload's subjects and
// returns reads/s and latency percentiles.
func reads(ctx context.Context, s *sqlite.Store, opts Options, phase string, at sgam.At) (float64, time.Duration, time.Duration, error) {
	lat := make([]time.Duration, opts.Reads)
	start := time.Now()
	for i := range opts.Reads {
		t0 := time.Now()
		f, err := s.Get(ctx, workload.Key(i), at)
		if err != nil {
			return 0, 0, 0, err
		}
		if f == nil {
			return 0, 0, 0, fmt.Errorf("%s: no value for %s", phase, workload.Key(i))
		}
		lat[i] = time.Since(t0)
		if i%10_000 == 0 {
			opts.Progress(phase, i, opts.Reads)
		}
	}
	rate := perSecond(opts.Reads, time.Since(start))
	slices.Sort(lat)
	return rate, lat[len(lat)/2], lat[len(lat)*99/100], nil
}

func perSecond(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
