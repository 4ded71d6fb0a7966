// Package sgam is schema-guided agent memory: a bitemporal fact ledger for
// long-running, multi-tenant LLM agents.
//
// A Fact is one version of one value of one attribute of one subject,
// valid over [ValidFrom, ValidTo) (valid time: when it held in the world)
// and believed over [RecordedAt, RetractedAt) (transaction time: when the
// store held it true), owned by a tenant and citing the Episode it came
// from. A correction closes the old fact instead of deleting it, so reads
// answer exactly:
//
//   - current state: Get(key, At{})
//   - point in time: Get(key, At{AsOf: v})
//   - past belief:   Get(key, At{KnownAt: k})
//
// The temporal rules live in package temporal; stores (store/sqlite, the
// embedded default) implement Store and run the conformance suite in
// store/storetest. Open a store with store.Open.
package sgam
