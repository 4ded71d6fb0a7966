// Package sqlite is sgam's embedded store: one SQLite file in WAL mode, on
// the pure-Go modernc.org/sqlite driver, with its migrations embedded and
// applied on open.
//
// Writes go through one connection under BEGIN IMMEDIATE, so they serialize
// per database (across processes too); reads use a pool of read-only
// connections. The temporal rules come from package temporal; this package
// loads each touched key's believed rows once per transaction, applies the
// operations in memory and writes the outcome with multi-row statements.
// The database guards the invariants as well: CHECK constraints on both
// windows, partial unique indexes that allow one believed row per key and
// valid_from and one open believed row per key, and foreign keys from
// evidence to episodes.
package sqlite
