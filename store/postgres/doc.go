// Package postgres is sgam's scale-out store: PostgreSQL through a pgx
// connection pool, for several API servers sharing one database, many
// tenants, backups and replicas. It has the semantics of the embedded
// store and runs the same conformance suite (store/storetest).
//
// Layout: every table is keyed by tenant_id first and no foreign key
// crosses tenants, so a tenant-distributed PostgreSQL (Citus) can shard it
// by tenant_id without a schema change (docs/scaling.md). The database
// guards the invariants itself: an exclusion constraint keeps the believed
// rows of a key from overlapping in valid time (so at most one is open),
// CHECK constraints keep both windows well formed, foreign keys tie every
// source and evidence link to an episode, and row-level security, forced on
// every table, limits each transaction to the tenant it set in sgam.tenant.
//
// Writes to a key serialize on a transaction-scoped advisory lock on a hash
// of the key, taken in hash order so concurrent batches cannot deadlock;
// serialization failures, deadlocks and lost connections that are safe to
// retry are retried a bounded number of times (Store.Retries counts them).
// Transaction time is the database server's clock (one clock for every
// application server) unless a Clock is given, and never runs backwards
// for a key or, within one process, for the store.
package postgres
