package sqlite

import (
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Lookaside is SQLite's per-connection pool of small allocations, taken
// without a lock. By default it is about 48 KB, which a connection's
// prepared statements hold whole, so nearly every allocation of a query
// (cursors, records, values) went to modernc's libc allocator, which one
// mutex guards for the whole process: under 16 recalls at once on 2 cores
// its lock was a tenth of their time. Over 2,000 recalls of `sgam bench
// http`'s workload on one reader connection, 1,200-byte slots × 40 missed
// 27% of allocations and 600 × 2,000 (1.2 MB a connection) 3.6%;
// BenchmarkServeRecall/recall_parallel took 8 to 15% less time a recall.
const (
	lookasideSlotBytes = 600
	lookasideSlots     = 2000
)

// init sets the lookaside of every connection this process opens. SQLite
// takes its configuration only before its first connection; were it
// opened already (by another package's init), the call fails and the
// connections keep the default, only slower.
func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, 16) // the two arguments, 8 bytes each
	if va == 0 {
		return
	}
	defer libc.Xfree(tls, va)
	sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_LOOKASIDE, libc.VaList(va, int32(lookasideSlotBytes), int32(lookasideSlots)))
}
