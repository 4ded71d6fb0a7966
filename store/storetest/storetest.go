// Package storetest is the conformance suite every sgam store runs: the
// behaviour of the Store interface as tests (Run) and the shared benchmarks
// (Benchmark). A change in semantics goes here first, then into every
// driver. Every read test also writes the same keys under a second tenant
// and shows that nothing leaks across.
package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// Options are what a test asks of a new store.
type Options struct {
	Clock    sgam.Clock
	Limits   sgam.Limits
	Observer sgam.Observer
}

// Factory opens a new, empty store for one test and arranges for it to be
// closed when the test ends.
type Factory func(t testing.TB, opts Options) sgam.Store

// Tenants used by every test: the one under test and the neighbour that
// must never see or disturb it.
const (
	tenantA = "acme"
	tenantB = "globex"
)

// Run runs the conformance suite of sgam.Store against stores from
// newStore; RunVectors is the section of the optional vector capability.
func Run(t *testing.T, newStore Factory) {
	t.Run("Temporal", func(t *testing.T) { runTemporal(t, newStore) })
	t.Run("Reads", func(t *testing.T) { runReads(t, newStore) })
	t.Run("Episodes", func(t *testing.T) { runEpisodes(t, newStore) })
	t.Run("BadInput", func(t *testing.T) { runBadInput(t, newStore) })
	t.Run("Batch", func(t *testing.T) { runBatch(t, newStore) })
	t.Run("Property", func(t *testing.T) { runProperty(t, newStore) })
	t.Run("CurrentReads", func(t *testing.T) { runCurrent(t, newStore) })
	t.Run("Concurrency", func(t *testing.T) { runConcurrency(t, newStore) })
	t.Run("Transfer", func(t *testing.T) { runTransfer(t, newStore) })
	t.Run("Schema", func(t *testing.T) { runSchema(t, newStore) })
	t.Run("TenantSchemas", func(t *testing.T) { runTenantSchemas(t, newStore) })
	t.Run("Aliases", func(t *testing.T) { runAliases(t, newStore) })
	t.Run("ExpireMeetsApply", func(t *testing.T) { runExpireMeetsApply(t, newStore) })
	t.Run("Promote", func(t *testing.T) { runPromote(t, newStore) })
	t.Run("Extractions", func(t *testing.T) { runExtractions(t, newStore) })
	t.Run("ExtractionCopiesForgotten", func(t *testing.T) { runExtractionCopiesForgotten(t, newStore) })
	t.Run("ExtractionValuesForgotten", func(t *testing.T) { runExtractionValuesForgotten(t, newStore) })
	t.Run("ExtractionInputs", func(t *testing.T) { runExtractionInputs(t, newStore) })
	t.Run("ExtractionQueue", func(t *testing.T) { runExtractionQueue(t, newStore) })
	t.Run("ExtractionHold", func(t *testing.T) { runExtractionHold(t, newStore) })
	t.Run("TokenSums", func(t *testing.T) { runTokenSums(t, newStore) })
	t.Run("Search", func(t *testing.T) { runSearch(t, newStore) })
	t.Run("FactsFrom", func(t *testing.T) { runFactsFrom(t, newStore) })
	t.Run("Forget", func(t *testing.T) { runForget(t, newStore) })
	t.Run("Migrate", func(t *testing.T) { runMigrate(t, newStore) })
	t.Run("APIKeys", func(t *testing.T) { runKeys(t, newStore) })
	t.Run("Stats", func(t *testing.T) { runStats(t, newStore) })
	t.Run("Observer", func(t *testing.T) { runObserver(t, newStore) })
}

// bundle is what most tests need: a store on a manual clock.
type bundle struct {
	t     testing.TB
	ctx   context.Context
	store sgam.Store
	clock *sgam.ManualClock
}

func setup(t testing.TB, newStore Factory) *bundle {
	clock := &sgam.ManualClock{}
	clock.Set(ts(t, "2026-01-01T00:00:00Z"))
	return &bundle{t: t, ctx: context.Background(), store: newStore(t, Options{Clock: clock}), clock: clock}
}

func ts(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v.UTC()
}

func (b *bundle) at(s string) time.Time { return ts(b.t, s) }

// tick sets the transaction clock.
func (b *bundle) tick(s string) { b.clock.Set(b.at(s)) }

func key(tenant, subject, attribute string) sgam.Key {
	return sgam.Key{Tenant: tenant, Subject: subject, Attribute: attribute}
}

func jsonString(s string) json.RawMessage {
	v, _ := json.Marshal(s)
	return v
}

func (b *bundle) episode(tenant, id, content, occurred string) sgam.Episode {
	b.t.Helper()
	e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: id, Kind: "message", Content: content, OccurredAt: b.at(occurred)})
	require.NoError(b.t, err)
	return e
}

func (b *bundle) assert(k sgam.Key, value string, validFrom, source string) sgam.WriteResult {
	b.t.Helper()
	r, err := b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: jsonString(value), ValidFrom: b.at(validFrom), Source: source})
	require.NoError(b.t, err)
	return r
}

func (b *bundle) retract(k sgam.Key, at, source string) sgam.WriteResult {
	b.t.Helper()
	r, err := b.store.Retract(b.ctx, sgam.Retraction{Key: k, At: b.at(at), Source: source})
	require.NoError(b.t, err)
	return r
}

// value returns the value of k at (asOf, knownAt) as a Go string ("" for
// none); empty instants mean now.
func (b *bundle) value(k sgam.Key, asOf, knownAt string) string {
	b.t.Helper()
	f := b.get(k, asOf, knownAt)
	if f == nil {
		return ""
	}
	var s string
	require.NoError(b.t, json.Unmarshal(f.Value, &s))
	return s
}

func (b *bundle) get(k sgam.Key, asOf, knownAt string) *sgam.Fact {
	b.t.Helper()
	var at sgam.At
	if asOf != "" {
		at.AsOf = b.at(asOf)
	}
	if knownAt != "" {
		at.KnownAt = b.at(knownAt)
	}
	f, err := b.store.Get(b.ctx, k, at)
	require.NoError(b.t, err)
	return f
}

// requireClean fails the test if Check finds any violation.
func (b *bundle) requireClean() {
	b.t.Helper()
	v, err := b.store.Check(b.ctx)
	require.NoError(b.t, err)
	require.Empty(b.t, v, "check found violations")
}

func requireCode(t testing.TB, err error, code sgam.Code, field string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, sgam.ErrorCode(err), "error: %v", err)
	if field != "" {
		require.Equal(t, field, sgam.ErrorField(err), "error: %v", err)
	}
}
