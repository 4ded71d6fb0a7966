package recall

import (
	"context"
	"runtime"

	"github.com/sgam-dev/sgam"
)

// WithConcurrency lets at most n recalls of r compute at once (n ≤ 0: no
// bound); the others wait for their turn, first come first served, until
// their context ends. A recall is CPU-bound: more at once than the cores
// run share them, and each takes as long as the slowest of its
// neighbours; taken in turn, each waits its place and then runs at full
// speed, so the slow tail of the latencies shrinks at the same throughput
// (docs/recall.md has the figures). A recall gives its turn up while it
// waits on the embeddings server, which is not computing.
func (r *Recaller) WithConcurrency(n int) *Recaller {
	r.turns = nil
	if n > 0 {
		r.turns = make(chan struct{}, n)
	}
	return r
}

// DefaultConcurrency is the bound sgam serve gives WithConcurrency. A
// recall over a store read in this process (SQLite, whose pages are in
// memory or the system's cache) computes from its start to its end: one
// per core Go runs on, as more only share the cores and SQLite's locks.
// One over a store behind a server (remote: PostgreSQL) waits on each
// round trip: twice the cores, so that one computes while another waits.
func DefaultConcurrency(remote bool) int {
	if remote {
		return 2 * runtime.GOMAXPROCS(0)
	}
	return runtime.GOMAXPROCS(0)
}

// turn is one recall's place among those that compute at once.
type turn struct {
	slots chan struct{} // nil: no bound
	held  bool
}

// take waits for a turn; a channel's waiting senders go first in, first
// out. Its error, when ctx ends first, is Unavailable.
func (t *turn) take(ctx context.Context) error {
	if t.slots == nil || t.held {
		return nil
	}
	select {
	case t.slots <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return &sgam.Error{Code: sgam.Unavailable, Message: "the recall did not get its turn in time: other recalls held every turn", Err: ctx.Err()}
	}
}

// give gives the turn up, if held.
func (t *turn) give() {
	if t.held {
		<-t.slots
		t.held = false
	}
}
