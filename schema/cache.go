package schema

import (
	"fmt"
	"sync"

	"github.com/sgam-dev/sgam"
)

// Cache keeps the parsed schemas of stored versions, by hash, so that a
// reader of every request (an extractor, a recaller) parses a version
// once. It holds at most 64 and is safe for concurrent use; the zero
// value is ready.
type Cache struct {
	mu sync.Mutex
	m  map[string]*Schema
}

// Parsed returns the parsed schema of a stored version.
func (c *Cache) Parsed(sv sgam.SchemaVersion) (*Schema, error) {
	c.mu.Lock()
	s, ok := c.m[sv.Hash]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := Parse(sv.Body)
	if err != nil {
		return nil, fmt.Errorf("the stored schema version %d does not parse: %w", sv.Version, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 64 {
		c.m = map[string]*Schema{}
	}
	c.m[sv.Hash] = s
	return s, nil
}
