// Package schema reads the schema file that governs what an agent may
// remember: the declared attributes with their value types, cardinality,
// conflict policy, sensitivity and retention, the retention classes, the
// ranking of source kinds, and the migrations (rename, retype, split) that
// carry stored facts from one version of the schema to the next.
//
// The package is pure Go and touches no database. Parse turns a YAML (or
// JSON) file into a *Schema and reports every problem in the file at once,
// each with its line, so that a user can fix a schema in one pass.
// Attribute.Value validates and canonicalizes one value before a store
// writes it, so that equal values are byte-equal and compare equal in SQL.
// Schema.Transform runs a migration's CEL transform on a stored value.
// Canonical and Hash identify a schema version; Diff says what changed
// between two versions in lines a person can review.
package schema
