package sqlite

import (
	"slices"
	"sync"
)

// dataCache remembers the answers of the reads every recall makes that
// depend on the stored rows alone, not on an instant: whether a subject
// has a believed row (Subjects), a subject's attributes (Attributes) and
// a tenant's schema head (SchemaHead). A store is read far more often
// than it is written, and an agent asks about the same subjects again and
// again. An answer holds while the database has not changed, as told by
// the WAL-index header (as for currentCache): a commit by this process or
// by any other drops them all, so a cached answer is always the one SQL
// would give. It holds words looked up as subjects (a question's, and
// an episode's when extraction looks its words up), subject and attribute
// names and schema versions: a forget or an expiry in this process drops
// them at once (dropAll), one in another process at this process's next
// read of them.
type dataCache struct {
	wal *walIndex

	mu      sync.RWMutex
	seen    walHeader // the header the entries are valid for
	gen     uint64    // bumped whenever entries are dropped
	entries map[dataKey]any
}

// dataKey names one cached answer: a read (kind) of a tenant's, with its
// argument.
type dataKey struct {
	kind   dataKind
	tenant string
	arg    string
}

type dataKind uint8

const (
	subjectKnown dataKind = iota // arg: a subject; bool
	subjectAttrs                 // arg: a subject and the limit; []string
	schemaHeadOf                 // arg: none; ledger.Head
)

// maxDataEntries bounds the cache; when full it starts over (its map
// keeps its size). An entry of a word is about 160 bytes of heap: 1 << 16
// of them 10.5 MiB, 1 << 12 0.6 MiB. Most are a question's words that
// name no subject, a dozen new ones a question, so the cache fills and
// starts over often whatever its size; the words asked again and again,
// the ones worth keeping, are back in it at once.
const maxDataEntries = 1 << 12

// newDataCache returns the cache over wal; nil (no caching) without one.
func newDataCache(wal *walIndex) *dataCache {
	if wal == nil {
		return nil
	}
	h, _ := wal.header()
	return &dataCache{wal: wal, seen: h, entries: map[dataKey]any{}}
}

// begin returns the generation a read starts in, for store, after
// dropping the entries if the database changed since they were read.
func (c *dataCache) begin() uint64 {
	if c == nil {
		return 0
	}
	h, ok := c.wal.header()
	c.mu.RLock()
	gen, fresh := c.gen, ok && h == c.seen
	c.mu.RUnlock()
	if fresh {
		return gen
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.wal.header(); !ok || h != c.seen {
		clear(c.entries)
		c.gen++
		if ok {
			c.seen = h
		}
	}
	return c.gen
}

// lookup returns the answer cached for k in generation gen.
func (c *dataCache) lookup(gen uint64, k dataKey) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if gen != c.gen {
		return nil, false
	}
	v, ok := c.entries[k]
	return v, ok
}

// store records what a read that began in generation gen found, unless
// anything changed since it began. v must not be changed after.
func (c *dataCache) store(gen uint64, k dataKey, v any) {
	if c == nil {
		return
	}
	h, ok := c.wal.header()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || gen != c.gen || h != c.seen {
		return
	}
	if len(c.entries) >= maxDataEntries {
		clear(c.entries)
	}
	c.entries[k] = v
}

// dropAll drops every entry, after a commit of this process that deleted
// rows (forget, expiry): they may hold words of what it deleted.
func (c *dataCache) dropAll() {
	if c == nil {
		return
	}
	h, ok := c.wal.header()
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.gen++
	c.seen = walHeader{} // never matches a consistent header: next read resyncs
	if ok {
		c.seen = h
	}
}

// cachedStrings returns a copy of a cached list, which callers may change.
func cachedStrings(v any) []string { return slices.Clone(v.([]string)) }
