package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// Assert implements sgam.FactWriter.
func (s *Store) Assert(ctx context.Context, a sgam.Assertion) (res sgam.WriteResult, err error) {
	defer s.track("Assert", s.start(), &err)
	return s.writes.write(ctx, ledger.AssertOne(s.limits, a, false))
}

// Add implements sgam.FactWriter.
func (s *Store) Add(ctx context.Context, a sgam.Assertion) (res sgam.WriteResult, err error) {
	defer s.track("Add", s.start(), &err)
	return s.writes.write(ctx, ledger.AssertOne(s.limits, a, true))
}

// Retract implements sgam.FactWriter.
func (s *Store) Retract(ctx context.Context, r sgam.Retraction) (res sgam.WriteResult, err error) {
	defer s.track("Retract", s.start(), &err)
	return s.writes.write(ctx, ledger.RetractOne(s.limits, r, false))
}

// Remove implements sgam.FactWriter.
func (s *Store) Remove(ctx context.Context, r sgam.Retraction) (res sgam.WriteResult, err error) {
	defer s.track("Remove", s.start(), &err)
	return s.writes.write(ctx, ledger.RetractOne(s.limits, r, true))
}

// AssertMany implements sgam.FactWriter.
func (s *Store) AssertMany(ctx context.Context, as []sgam.Assertion) (res []sgam.WriteResult, err error) {
	defer s.track("AssertMany", s.start(), &err)
	if len(as) == 0 {
		return nil, nil
	}
	return s.write(ctx, writeReq{build: ledger.AssertAll(s.limits, as), batch: "assertions"})
}

// writeReq is one write transaction: build turns the input into ops under
// the schemas in force; batch names the operations in errors
// ("assertions[i]"), empty for a single write; confirm is a pending
// candidate to delete in the same transaction.
type writeReq struct {
	build   ledger.Build
	batch   string
	confirm *sgam.Candidate
}

// write applies the ops of req in order in one transaction at one
// transaction instant.
func (s *Store) write(ctx context.Context, req writeReq) ([]sgam.WriteResult, error) {
	if req.build.Err != nil {
		return nil, req.build.Err
	}
	var results []sgam.WriteResult
	err := s.inWrite(ctx, scope(req.build.Tenants), req.build.Tenants, func(tx Tx, govs ledger.Govs) error {
		ops, err := req.build.Ops(govs, s.now())
		if err != nil {
			return err
		}
		b := ledger.New(ops)
		b.Govs = govs
		results, err = s.apply(tx, b, req.batch, req.confirm, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// apply runs the write pipeline of b inside tx: load what its ops need,
// apply the temporal rules and the schemas' policies at the transaction's
// instant, write the outcome, and read back what the results need. more
// says that the transaction goes on after it (else a driver may send its
// commit with the last writes).
func (s *Store) apply(tx Tx, b *ledger.Batch, field string, confirm *sgam.Candidate, more bool) ([]sgam.WriteResult, error) {
	nextID, now, err := tx.LoadBatch(b, 2*len(b.Ops), confirm) // an operation inserts at most two rows
	if err != nil {
		return nil, err
	}
	for _, k := range b.PromoteKeys() {
		signals, err := tx.Signals(k)
		if err != nil {
			return nil, err
		}
		b.SetSignals(k, signals)
	}
	if refs := b.KindsNeeded(); len(refs) > 0 {
		kinds, err := tx.EpisodeKinds(refs)
		if err != nil {
			return nil, err
		}
		b.SetKinds(kinds)
	}
	if err := b.Apply(now, nextID, field); err != nil {
		return nil, err
	}
	if len(b.Pending) > 0 {
		if err := b.SettlePending(tx.FindPending); err != nil {
			return nil, err
		}
	}
	b.KeepSettled()
	last := !more && !b.NeedsReads() && len(b.Dropped) == 0
	if err := tx.FlushBatch(b, now, last); err != nil {
		return nil, err
	}
	for _, c := range b.Dropped {
		if _, err := tx.DeletePending(c.Tenant, c.ID); err != nil {
			return nil, err
		}
	}
	return b.Results(tx.ReadFact)
}

// groupCommit commits concurrent single writes together: a store has one
// writer (SQLite) or pays a commit's round trips and fsync (PostgreSQL) per
// transaction, so one transaction per write caps writes at the transaction
// rate, while a batch commits many in one. There is no timer and no
// background goroutine: the write that finds no commit running leads; it
// commits everything queued so far (its own among it) and hands the lead to
// the first write that queued meanwhile. A lone write is a plain
// transaction of its own.
//
// Writes committed together share one transaction time, as if they had
// been applied one after the other in the order they queued. When a group
// fails (a batch writes all or nothing), each of its writes runs again on
// its own, so each gets the answer it would have got alone and one bad
// write never fails another. A queued write waits for its answer whatever
// its context says: once queued, it may be committed, and an error must
// mean that nothing was written.
type groupCommit struct {
	s *Store

	mu     sync.Mutex
	queue  []*groupJob
	leader bool // a write is committing
	last   int  // the size of the last group
}

type groupJob struct {
	build   ledger.Build
	res     sgam.WriteResult
	err     error
	done    chan struct{} // closed with res and err set
	promote chan struct{} // closed when this write is to lead
}

// QueuedWrites returns how many single writes wait for the commit that is
// running to end, to be committed together (for metrics and tests).
func (s *Store) QueuedWrites() int {
	g := s.writes
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// maxGroup bounds the writes of one transaction.
const maxGroup = 256

// maxYields bounds how often a leader yields to writers about to queue.
const maxYields = 64

// groupTimeout bounds the commit of a group: it runs for several callers,
// so not under any one caller's context.
const groupTimeout = 30 * time.Second

func (g *groupCommit) write(ctx context.Context, build ledger.Build) (sgam.WriteResult, error) {
	if build.Err != nil {
		return sgam.WriteResult{}, build.Err
	}
	j := &groupJob{build: build, done: make(chan struct{}), promote: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, j)
	lead := !g.leader
	g.leader = true
	g.mu.Unlock()
	if !lead {
		select {
		case <-j.done:
			return j.res, j.err
		case <-j.promote:
		}
	}
	g.commit(ctx, j)
	<-j.done
	return j.res, j.err
}

// commit runs the queued writes (at most maxGroup) and passes the lead on,
// or gives it up when nothing is queued. own is the leader's write.
func (g *groupCommit) commit(ctx context.Context, own *groupJob) {
	// Writers that the last commit answered are likely about to queue
	// again: yield to them while the queue still grows, rather than commit
	// a few writes now and the rest in the next transaction. A lone writer
	// does not yield: that would only wake another thread for nothing.
	g.mu.Lock()
	for range maxYields {
		if g.last <= 1 && len(g.queue) <= 1 {
			break
		}
		n := len(g.queue)
		if n >= maxGroup {
			break
		}
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
		if len(g.queue) == n {
			break
		}
	}
	n := min(len(g.queue), maxGroup)
	group := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.last = n
	g.mu.Unlock()

	if len(group) > 1 || group[0] != own {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
		defer cancel()
	}
	// Whatever happens in run, even a panic, every write of the group gets
	// an answer and the lead passes on: else every later write would wait
	// for a leader that is gone.
	defer func() {
		if p := recover(); p != nil {
			for _, j := range group {
				j.res, j.err = sgam.WriteResult{}, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("write failed: %v", p)}
			}
			defer panic(p)
		}
		for _, j := range group {
			close(j.done)
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			close(g.queue[0].promote)
		} else {
			g.leader = false
			g.queue = nil
		}
		g.mu.Unlock()
	}()
	g.run(ctx, group)
}

func (g *groupCommit) run(ctx context.Context, group []*groupJob) {
	if len(group) > 1 {
		parts := make([]ledger.Build, len(group))
		for i, j := range group {
			parts[i] = j.build
		}
		joined, starts := ledger.Join(parts)
		if res, err := g.s.write(ctx, writeReq{build: joined}); err == nil {
			for i, j := range group {
				j.res = res[starts[i]]
			}
			return
		}
	}
	for _, j := range group {
		res, err := g.s.write(ctx, writeReq{build: j.build})
		if err == nil {
			j.res = res[0]
		}
		j.err = err
	}
}
