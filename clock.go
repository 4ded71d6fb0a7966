package sgam

import (
	"sync"
	"time"
)

// Clock supplies transaction time. Stores take one so tests and replays can
// make recorded_at deterministic; the default is the system clock.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the system's wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that reads the system clock until Set, and the set
// instant after that. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// Set fixes the clock at t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Now returns the set instant, or the system time when none was set.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		return time.Now()
	}
	return c.now
}
