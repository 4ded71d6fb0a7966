package server

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
)

// keyCache remembers keys that passed Store.Authenticate for a short
// while, so that a busy client costs one key lookup a second instead of one
// per request (the lookup was about half of a cached GET's time). It is
// keyed by the SHA-256 of the whole token, so a wrong secret never hits it;
// only successes are kept. The price is that a key revoked elsewhere keeps
// working for up to ttl.
type keyCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]cachedKey
}

type cachedKey struct {
	key   sgam.APIKey
	until time.Time
}

// maxCachedTokens bounds the cache; when full it starts over.
const maxCachedTokens = 10_000

func newKeyCache(ttl time.Duration) *keyCache {
	if ttl <= 0 {
		return nil
	}
	return &keyCache{ttl: ttl, m: map[[sha256.Size]byte]cachedKey{}}
}

func (c *keyCache) get(token string, now time.Time) (sgam.APIKey, bool) {
	if c == nil {
		return sgam.APIKey{}, false
	}
	h := sha256.Sum256([]byte(token))
	c.mu.RLock()
	e, ok := c.m[h]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return sgam.APIKey{}, false
	}
	return e.key, true
}

func (c *keyCache) put(token string, k sgam.APIKey, now time.Time) {
	if c == nil {
		return
	}
	h := sha256.Sum256([]byte(token))
	c.mu.Lock()
	if len(c.m) >= maxCachedTokens {
		clear(c.m)
	}
	c.m[h] = cachedKey{key: k, until: now.Add(c.ttl)}
	c.mu.Unlock()
}
