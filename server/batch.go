package server

import (
	"context"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
)

// asserter commits the assertions of concurrent requests together (group
// commit): a store has one writer, so one transaction per request caps
// asserts at the writer's transaction rate, while AssertMany commits many
// in one. There is no timer and no background goroutine: the request that
// finds no commit running leads; it commits everything queued so far
// (its own assertion among it) and hands the lead to the first request that
// queued meanwhile. A lone request is a plain Assert.
//
// Assertions committed together share one transaction time, as if the
// concurrent requests had been applied in the order they queued. When a
// batch fails (AssertMany writes all or nothing), each of its assertions
// is run again on its own, so a request gets the answer it would have got
// alone and one bad assertion never fails another.
type asserter struct {
	st sgam.Store

	mu     sync.Mutex
	queue  []*assertJob
	leader bool // a request is committing
}

type assertJob struct {
	a       sgam.Assertion
	res     sgam.WriteResult
	err     error
	done    chan struct{} // closed with res and err set
	promote chan struct{} // closed when this request is to lead
}

// maxGroup bounds the assertions of one transaction.
const maxGroup = 256

// groupTimeout bounds a group's commit: it runs for several requests, so
// not under any one request's context.
const groupTimeout = 30 * time.Second

func (g *asserter) assert(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	j := &assertJob{a: a, done: make(chan struct{}), promote: make(chan struct{})}
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
	g.commit(ctx)
	<-j.done
	return j.res, j.err
}

// commit runs the queued assertions (at most maxGroup) and passes the lead
// on, or gives it up when nothing is queued.
func (g *asserter) commit(ctx context.Context) {
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	group := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	g.run(ctx, group)
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
}

func (g *asserter) run(ctx context.Context, group []*assertJob) {
	if len(group) > 1 {
		as := make([]sgam.Assertion, len(group))
		for i, j := range group {
			as[i] = j.a
		}
		if res, err := g.st.AssertMany(ctx, as); err == nil {
			for i, j := range group {
				j.res = res[i]
			}
			return
		}
	}
	for _, j := range group {
		j.res, j.err = g.st.Assert(ctx, j.a)
	}
}
