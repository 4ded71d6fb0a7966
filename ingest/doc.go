// Package ingest is the write path's front: how an episode a caller hands
// over becomes memory. It owns what every surface (HTTP, MCP, the CLI)
// would otherwise decide on its own:
//
//   - capture with a mode: none (captured only), background (captured
//     with its place in the extraction queue, in one transaction, for the
//     workers of package queue) or now (the immediate path, which
//     strands no episode: immediate.go);
//   - the budget fallback of the immediate path: a tenant whose budget is
//     spent gets its episode captured and queued, and an unavailable
//     error that says so;
//   - one rule for the idempotency keys sgam derives from a call's
//     content (Key), so that a retried call is the same episode;
//   - the JSONL reader of episodes, with an error per bad line that names
//     the line and the field (Lines);
//   - waiting for queued extractions to end, and the summary of what they
//     did (Wait).
//
// The surfaces adapt their requests to these and their results back.
package ingest
