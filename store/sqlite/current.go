package sqlite

import (
	"encoding/binary"
	"sync"

	"github.com/sgam-dev/sgam"
)

// walHeaderSize is the size of one copy of the WAL-index header.
const walHeaderSize = 48

type walHeader [walHeaderSize]byte

// iChange is the header's commit counter: SQLite adds one per commit.
func (h walHeader) iChange() uint32 { return binary.NativeEndian.Uint32(h[8:12]) }

// header reads a consistent WAL-index header. SQLite writes the second copy,
// then the first; a reader that finds them different raced a writer.
func (w *walIndex) header() (walHeader, bool) {
	var a, b walHeader
	copy(a[:], w.mem[:walHeaderSize])
	copy(b[:], w.mem[walHeaderSize:2*walHeaderSize])
	return a, a == b
}

// currentCache holds the answers to current reads (as_of = known_at = now),
// the query agents make most. An entry is the row believed when it was read
// whose valid window contained that instant; it answers again while
//
//   - the database has not changed: no commit by this process (which drops
//     the keys it wrote) or any other (which drops everything), as told by
//     the WAL-index header;
//   - now is still inside the row's valid window; and
//   - now has not reached a transaction time recorded in the future of the
//     first read (possible only with clocks set back or skewed): the row's
//     retraction or a later evidence link.
//
// So a cached answer is always the answer SQL would give.
type currentCache struct {
	wal *walIndex

	mu      sync.RWMutex
	seen    walHeader // the header the entries are valid for
	gen     uint64    // bumped whenever entries are dropped
	entries map[sgam.Key]cachedRow
}

// maxCachedKeys bounds the cache; when full it starts over.
// About 430 bytes of heap per key: 1<<16 keys are about 28 MiB.
const maxCachedKeys = 1 << 16

type cachedRow struct {
	fact          *sgam.Fact // nil: a tombstone, no value
	from, validTo int64      // the row's valid window (validTo temporal.Open if open)
	knownAt       int64      // the transaction instant it was read at
	expireAt      int64      // first future transaction time touching the row
}

func newCurrentCache(wal *walIndex) *currentCache {
	if wal == nil {
		return nil
	}
	h, _ := wal.header()
	return &currentCache{wal: wal, seen: h, entries: map[sgam.Key]cachedRow{}}
}

// lookup returns the cached answer for k at now, if there is one.
func (c *currentCache) lookup(k sgam.Key, now int64) (f *sgam.Fact, hit bool) {
	h, ok := c.wal.header()
	c.mu.RLock()
	if !ok || h != c.seen {
		c.mu.RUnlock()
		c.resync()
		return nil, false
	}
	e, found := c.entries[k]
	c.mu.RUnlock()
	if !found || now < e.knownAt || now >= e.expireAt || now < e.from || now >= e.validTo {
		return nil, false
	}
	if e.fact == nil {
		return nil, true
	}
	return cloneFact(e.fact), true
}

// resync drops every entry after a change this process did not make.
func (c *currentCache) resync() {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.wal.header()
	if ok && h == c.seen {
		return
	}
	clear(c.entries)
	c.gen++
	if ok {
		c.seen = h
	}
}

// generation returns the generation a read starts in, for store.
func (c *currentCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// store records what a read that began in generation gen found, unless
// anything changed since it began.
func (c *currentCache) store(k sgam.Key, gen uint64, e cachedRow) {
	h, ok := c.wal.header()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || gen != c.gen || h != c.seen {
		return
	}
	if len(c.entries) >= maxCachedKeys {
		clear(c.entries)
	}
	if e.fact != nil {
		e.fact = cloneFact(e.fact)
	}
	c.entries[k] = e
}

// committing is called inside a write transaction, before COMMIT: it
// returns the commit counter, which no other process can move while the
// transaction holds the write lock.
func (c *currentCache) committing() uint32 {
	h, _ := c.wal.header()
	return h.iChange()
}

// committed drops the keys a commit wrote. If the header shows exactly
// this one commit since the entries were valid, the rest stay; otherwise
// (another process committed too) everything goes.
func (c *currentCache) committed(keys []sgam.Key, before uint32) {
	h, ok := c.wal.header()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if ok && c.seen.iChange() == before && h.iChange() == before+1 {
		for _, k := range keys {
			delete(c.entries, k)
		}
	} else {
		clear(c.entries)
	}
	if ok {
		c.seen = h
	} else {
		c.seen = walHeader{} // never matches a consistent header: next read resyncs
	}
}

// dropAll drops every entry after a commit that deleted rows (forget,
// expiry), which may touch any key.
func (c *currentCache) dropAll() {
	h, ok := c.wal.header()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.seen = walHeader{} // never matches a consistent header: next read resyncs
	if ok {
		c.seen = h
	}
}

func cloneFact(f *sgam.Fact) *sgam.Fact {
	c := *f
	c.Value = append([]byte(nil), f.Value...)
	c.Sources = append([]string(nil), f.Sources...)
	if f.ValidTo != nil {
		t := *f.ValidTo
		c.ValidTo = &t
	}
	if f.RetractedAt != nil {
		t := *f.RetractedAt
		c.RetractedAt = &t
	}
	if f.Supersedes != nil {
		id := *f.Supersedes
		c.Supersedes = &id
	}
	return &c
}
