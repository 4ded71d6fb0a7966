package recall

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

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
		r.turns = &turns{free: n}
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

// turns is the set of turns of a Recaller. A recall that has to wait
// parks on a pipe of its own, which the one that gives it the turn writes
// to, rather than on a channel. Go's scheduler looks for requests that
// arrived on the network only when a core runs out of goroutines to run,
// or else every 10 ms; a recall woken by a channel runs next on the core
// that woke it, so under full load the cores never ran out, and a request
// could wait 10–20 ms before its handler even began, while later ones
// took the turns before it. Woken through the network poller, the next
// recall is found in the same poll as the requests that arrived
// meanwhile, which then queue for their turns in the order they came
// (docs/recall.md, "Recalls at once", has the figures). A write, a poll
// and a read cost some microseconds against the milliseconds of a
// recall.
type turns struct {
	mu      sync.Mutex
	free    int       // turns no recall holds
	waiting []*waiter // first come first served
	spare   []*waiter // pipes kept for the next waiters, at most maxSpare
}

// maxSpare bounds the pipes kept between waits (two descriptors each);
// a waiter beyond them opens its own and closes it after.
const maxSpare = 32

// waiter is one recall waiting for its turn: woken by a byte on its pipe,
// or, where no pipe could be opened, by ready closing.
type waiter struct {
	r, w    *os.File
	ready   chan struct{}
	granted bool // under turns.mu: the turn is this waiter's
}

// take waits for a turn. Its error, when ctx ends first, is Unavailable.
func (t *turns) take(ctx context.Context) error {
	t.mu.Lock()
	if t.free > 0 { // a free turn means none waits: give hands turns to waiters first
		t.free--
		t.mu.Unlock()
		return nil
	}
	var w *waiter
	if n := len(t.spare); n > 0 {
		w, t.spare = t.spare[n-1], t.spare[:n-1]
	} else {
		// Opened without the lock, which give takes too; a turn may come
		// free meanwhile.
		t.mu.Unlock()
		w = newWaiter()
		t.mu.Lock()
		if t.free > 0 {
			t.free--
			kept := t.keep(w)
			t.mu.Unlock()
			if !kept {
				w.close()
			}
			return nil
		}
	}
	t.waiting = append(t.waiting, w)
	t.mu.Unlock()

	reusable := w.wait(ctx)
	t.mu.Lock()
	granted, kept := w.granted, false
	if granted && reusable {
		w.granted = false
		kept = t.keep(w)
	} else if !granted {
		t.waiting = slices.DeleteFunc(t.waiting, func(o *waiter) bool { return o == w })
	}
	t.mu.Unlock()
	if !kept {
		w.close()
	}
	if !granted {
		return &sgam.Error{Code: sgam.Unavailable, Message: "the recall did not get its turn in time: other recalls held every turn", Err: ctx.Err()}
	}
	return nil
}

// keep keeps w's pipe for the next waiter, unless maxSpare are kept
// already (or it has none); the caller closes one not kept, without the
// lock. Under t.mu.
func (t *turns) keep(w *waiter) bool {
	if w.r == nil || len(t.spare) >= maxSpare {
		return false
	}
	t.spare = append(t.spare, w)
	return true
}

// give gives a turn up: to the first waiter, or back to the free ones.
func (t *turns) give() {
	t.mu.Lock()
	if len(t.waiting) == 0 {
		t.free++
		t.mu.Unlock()
		return
	}
	w := t.waiting[0]
	t.waiting[0] = nil
	t.waiting = t.waiting[1:]
	w.granted = true
	t.mu.Unlock()
	w.wake()
}

// newWaiter opens a waiter's pipe; where the system refuses one (no
// descriptor left), or cannot poll it, the waiter waits on a channel.
func newWaiter() *waiter {
	w := &waiter{}
	if runtime.GOOS == "windows" { // its pipes are not polled
		w.ready = make(chan struct{})
		return w
	}
	var err error
	if w.r, w.w, err = os.Pipe(); err != nil {
		w.r, w.w, w.ready = nil, nil, make(chan struct{})
	}
	return w
}

// wait returns once the waiter is woken or ctx ends, and whether its pipe
// may serve another wait: it was woken by its byte, which wait read, and
// ctx set no deadline on it.
func (w *waiter) wait(ctx context.Context) (reusable bool) {
	if w.r == nil {
		select {
		case <-w.ready:
		case <-ctx.Done():
		}
		return false
	}
	stop := context.AfterFunc(ctx, func() { w.r.SetReadDeadline(time.Unix(1, 0)) })
	var b [1]byte
	n, err := w.r.Read(b[:])
	return stop() && n == 1 && err == nil
}

// wake wakes the waiter. Should the write fail, closing the pipe's end
// wakes its read all the same.
func (w *waiter) wake() {
	if w.w == nil {
		close(w.ready)
		return
	}
	if _, err := w.w.Write([]byte{1}); err != nil {
		w.w.Close()
	}
}

// close closes the waiter's pipe, if it has one.
func (w *waiter) close() {
	if w.r != nil {
		w.r.Close()
		w.w.Close()
	}
}

// turn is one recall's place among those that compute at once.
type turn struct {
	set  *turns // nil: no bound
	held bool
}

// take waits for a turn, unless one is held.
func (t *turn) take(ctx context.Context) error {
	if t.set == nil || t.held {
		return nil
	}
	if err := t.set.take(ctx); err != nil {
		return err
	}
	t.held = true
	return nil
}

// give gives the turn up, if held.
func (t *turn) give() {
	if t.held {
		t.set.give()
		t.held = false
	}
}
