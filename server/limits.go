package server

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sgam-dev/sgam"
)

// limiters holds one token bucket per API key.
type limiters struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	byKey map[string]*rate.Limiter
}

func newLimiters(perSecond float64) *limiters {
	if perSecond <= 0 {
		return nil
	}
	return &limiters{every: rate.Limit(perSecond), burst: max(1, int(2*perSecond)), byKey: map[string]*rate.Limiter{}}
}

// allow takes a token for key, or returns how long to wait for one.
func (l *limiters) allow(key string) (time.Duration, bool) {
	if l == nil {
		return 0, true
	}
	l.mu.Lock()
	lim := l.byKey[key]
	if lim == nil {
		lim = rate.NewLimiter(l.every, l.burst)
		l.byKey[key] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, false
	}
	return 0, true
}

// tooMany answers 429 with Retry-After in whole seconds.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	writeJSON(w, http.StatusTooManyRequests, ErrorBody{sgam.ErrorDetail{Code: sgam.Unavailable, Field: "authorization",
		Message: "this key's rate limit is spent; retry after the Retry-After seconds"}})
}
