package ingest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/queue"
)

// MaxInFlight bounds the immediate extractions a process runs at once:
// beyond it, an episode is captured and left to the workers.
const MaxInFlight = 32

// releaseTimeout bounds the write that gives an episode back to the
// workers.
const releaseTimeout = 30 * time.Second

// immediate runs immediate extractions, for what an agent's next turn
// depends on, without ever leaving an episode stranded: the episode is
// captured with its place in the durable extraction queue, in one
// transaction, as the background path captures it; the entry is held back
// from the workers while this process extracts, and cleared only by the
// commit of the extraction's record. Whatever happens in between (a model
// slower than the caller waits, a caller that goes away, a process that is
// killed), the workers find the entry and extract the episode.
//
// Each extraction runs under a deadline of its
// own (the model's worst case and a margin for the store, as a queue job
// does), not under the caller's: a caller that stops waiting gets the
// episode back as queued, and the extraction goes on. It is safe for
// concurrent use; Close ends it.
type immediate struct {
	store    Store
	x        *extract.Extractor
	deadline time.Duration // of one extraction
	hold     time.Duration // of its queue entry: the deadline, and the commit's
	slots    chan struct{}

	life   context.Context // ends at Close, cancelling what still runs
	cancel context.CancelFunc
	mu     sync.Mutex
	runs   map[ref]*run // in flight, by episode: a repeated request joins the run
	wg     sync.WaitGroup
}

type ref struct{ tenant, episode string }

// run is one extraction in flight; done closes when res and err are set.
type run struct {
	done chan struct{}
	res  extract.Result
	err  error
}

// newImmediate returns the immediate path over store, extracting with x
// (whose model must be set).
func newImmediate(store Store, x *extract.Extractor) *immediate {
	worst := x.Model().WorstCase()
	deadline := queue.DefaultJobTimeout(worst)
	life, cancel := context.WithCancel(context.Background())
	return &immediate{store: store, x: x, deadline: deadline, hold: deadline + queue.Margin(worst),
		slots: make(chan struct{}, MaxInFlight), life: life, cancel: cancel, runs: map[ref]*run{}}
}

// Extract captures e with its queue entry, extracts it, and waits for the
// extraction until ctx ends. The capture's error is returned as it is
// (nothing is stored then); a spent budget is a *extract.BudgetError,
// with the episode captured and given to the workers, which extract it
// once the budget allows (Result holds the episode); so is a store that
// failed during the extraction. A failed model call is not an error: its
// record says so.
func (p *immediate) Extract(ctx context.Context, e sgam.Episode) (Result, error) {
	ep, _, err := p.store.AddEpisodeToExtract(ctx, e, p.hold)
	if err != nil {
		return Result{}, err
	}
	out := Result{Episode: ep}
	r, ok := p.start(ref{ep.Tenant, ep.ID})
	if !ok {
		out.Queued = true
		return out, p.release(ep.Tenant, ep.ID)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		out.Queued = true
		return out, nil
	}
	if r.res.Record.ID != "" {
		rec := r.res.Record
		out.Record, out.Skipped = &rec, r.res.Skipped
		out.Queued = rec.Status == sgam.ExtractionFailed && !rec.GaveUp
		return out, nil
	}
	// No record: the extraction stopped before it had one (a budget, a
	// store that failed, a shutdown), and gave the episode back.
	out.Queued = true
	if errors.Is(r.err, context.Canceled) {
		return out, nil
	}
	return out, r.err
}

// start begins the extraction of an episode, or joins the one in flight;
// false when no slot is free.
func (p *immediate) start(k ref) (*run, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.runs[k]; ok {
		return r, true
	}
	if p.life.Err() != nil {
		return nil, false
	}
	select {
	case p.slots <- struct{}{}:
	default:
		return nil, false
	}
	r := &run{done: make(chan struct{})}
	p.runs[k] = r
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.life, p.deadline)
		r.res, r.err = p.x.Extract(ctx, k.tenant, k.episode, extract.Options{})
		cancel()
		if r.err != nil && r.res.Record.ID == "" {
			// The commit of a record settles the entry (CommitExtraction);
			// without one, the episode goes to the workers now.
			r.err = errors.Join(r.err, p.release(k.tenant, k.episode))
		}
		p.mu.Lock()
		delete(p.runs, k)
		p.mu.Unlock()
		<-p.slots
		close(r.done)
	}()
	return r, true
}

// release gives an episode's held entry to the workers at once.
func (p *immediate) release(tenant, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := p.store.QueueExtraction(ctx, tenant, []string{id}, false)
	if sgam.ErrorCode(err) == sgam.NotFound {
		return nil // forgotten meanwhile: nothing to extract
	}
	return err
}

// Close waits for the extractions in flight until ctx ends, then cancels
// the rest: they give their episodes to the workers, losing nothing. No
// extraction starts after Close.
func (p *immediate) Close(ctx context.Context) {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	p.cancel()
	<-done
}
