// Package temporal holds sgam's temporal rules as pure functions, once, for
// every store: the write plan (rows to retract, rows to insert, or a
// conflict) for an assertion or retraction against a key's believed rows,
// and the invariants a key's rows must keep. It also states the read rule
// (Resolve: which row answers a question at valid time V and transaction
// time K), which the stores answer in their own SQL and the property tests
// hold them to.
//
// Instants are int64 microseconds since the Unix epoch, UTC, as the stores
// keep them; Open marks an open end.
//
// The rules (DESIGN 2.1) for an operation at valid time t, among the rows
// believed now:
//
//  1. A row starts at t: the same value is an idempotent repeat (the new
//     source becomes extra evidence); a different value is a conflict.
//  2. A row contains t: it is retracted and inserted again closed at t; the
//     new row takes the rest of its window, [t, its valid_to). A repeated
//     value is a boundary too.
//  3. Otherwise (t is before every row): the new row takes [t, the next
//     believed row's valid_from), or is open if there is none.
//
// A
// retraction is the same operation with a tombstone (no value). Rows are
// never edited in place except to set retracted_at, so a read at a past
// transaction time sees exactly what was believed then.
//
// Together the rules keep this model true, which the property tests check:
// the value at (V, K) is the value of the accepted operation with the
// greatest valid_from <= V among those recorded at or before K.
package temporal
