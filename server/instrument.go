package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sgam-dev/sgam"
)

// The operations timed: one per sgam.Store method (Close aside), named as
// the method, the value of the operation label.
const (
	opAddEpisode = iota
	opEpisode
	opEpisodes
	opAssert
	opRetract
	opAssertMany
	opAdd
	opRemove
	opPending
	opConfirm
	opDismiss
	opSchema
	opApplySchema
	opGet
	opMembers
	opState
	opHistory
	opTrace
	opMigrate
	opForget
	opReceipts
	opExpire
	opCompact
	opCheck
	opExport
	opImport
	numOps
)

var opNames = [numOps]string{
	opAddEpisode: "AddEpisode", opEpisode: "Episode", opEpisodes: "Episodes",
	opAssert: "Assert", opRetract: "Retract", opAssertMany: "AssertMany", opAdd: "Add", opRemove: "Remove",
	opPending: "Pending", opConfirm: "Confirm", opDismiss: "Dismiss",
	opSchema: "Schema", opApplySchema: "ApplySchema",
	opGet: "Get", opMembers: "Members", opState: "State", opHistory: "History", opTrace: "Trace",
	opMigrate: "Migrate", opForget: "Forget", opReceipts: "Receipts", opExpire: "Expire", opCompact: "Compact",
	opCheck: "Check", opExport: "Export", opImport: "Import",
}

// instrumented is a sgam.Store that times every call of the store it wraps
// in sgam_store_operation_duration_seconds{operation,outcome}. Its
// observers are resolved once, so a call costs two clock reads and one
// lock-free observation. It implements no optional interface of the
// wrapped store but sgam.RelationSchema (which Traverse asks for): assert
// those on the wrapped store (Server.raw).
type instrumented struct {
	st  sgam.Store
	obs [numOps][2]prometheus.Observer // [op][0: ok, 1: error]
}

var (
	_ sgam.Store          = (*instrumented)(nil)
	_ sgam.RelationSchema = (*instrumented)(nil)
)

// newStoreLatency is the histogram of store operation latencies.
func newStoreLatency() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sgam_store_operation_duration_seconds",
		Help:    "Latency of store operations (sgam.Store methods) called by the server, by operation and outcome (ok or error).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 19)}, []string{"operation", "outcome"})
}

// instrument wraps st, observing into h.
func instrument(st sgam.Store, h *prometheus.HistogramVec) *instrumented {
	in := &instrumented{st: st}
	for op, name := range opNames {
		in.obs[op][0] = h.WithLabelValues(name, "ok")
		in.obs[op][1] = h.WithLabelValues(name, "error")
	}
	return in
}

func (s *instrumented) done(op int, start time.Time, err error) {
	o := 0
	if err != nil {
		o = 1
	}
	s.obs[op][o].Observe(time.Since(start).Seconds())
}

func (s *instrumented) AddEpisode(ctx context.Context, e sgam.Episode) (sgam.Episode, error) {
	start := time.Now()
	out, err := s.st.AddEpisode(ctx, e)
	s.done(opAddEpisode, start, err)
	return out, err
}

func (s *instrumented) Episode(ctx context.Context, tenant, id string) (sgam.Episode, error) {
	start := time.Now()
	out, err := s.st.Episode(ctx, tenant, id)
	s.done(opEpisode, start, err)
	return out, err
}

func (s *instrumented) Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error) {
	start := time.Now()
	out, err := s.st.Episodes(ctx, q)
	s.done(opEpisodes, start, err)
	return out, err
}

func (s *instrumented) Assert(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.Assert(ctx, a)
	s.done(opAssert, start, err)
	return out, err
}

func (s *instrumented) Retract(ctx context.Context, r sgam.Retraction) (sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.Retract(ctx, r)
	s.done(opRetract, start, err)
	return out, err
}

func (s *instrumented) AssertMany(ctx context.Context, as []sgam.Assertion) ([]sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.AssertMany(ctx, as)
	s.done(opAssertMany, start, err)
	return out, err
}

func (s *instrumented) Add(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.Add(ctx, a)
	s.done(opAdd, start, err)
	return out, err
}

func (s *instrumented) Remove(ctx context.Context, r sgam.Retraction) (sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.Remove(ctx, r)
	s.done(opRemove, start, err)
	return out, err
}

func (s *instrumented) Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error) {
	start := time.Now()
	out, err := s.st.Pending(ctx, q)
	s.done(opPending, start, err)
	return out, err
}

func (s *instrumented) Confirm(ctx context.Context, tenant, pendingID, episodeID string) (sgam.WriteResult, error) {
	start := time.Now()
	out, err := s.st.Confirm(ctx, tenant, pendingID, episodeID)
	s.done(opConfirm, start, err)
	return out, err
}

func (s *instrumented) Dismiss(ctx context.Context, tenant, pendingID string) error {
	start := time.Now()
	err := s.st.Dismiss(ctx, tenant, pendingID)
	s.done(opDismiss, start, err)
	return err
}

func (s *instrumented) Schema(ctx context.Context) (sgam.SchemaVersion, error) {
	start := time.Now()
	out, err := s.st.Schema(ctx)
	s.done(opSchema, start, err)
	return out, err
}

func (s *instrumented) ApplySchema(ctx context.Context, file []byte, dryRun bool) (sgam.SchemaVersion, error) {
	start := time.Now()
	out, err := s.st.ApplySchema(ctx, file, dryRun)
	s.done(opApplySchema, start, err)
	return out, err
}

func (s *instrumented) Get(ctx context.Context, key sgam.Key, at sgam.At) (*sgam.Fact, error) {
	start := time.Now()
	out, err := s.st.Get(ctx, key, at)
	s.done(opGet, start, err)
	return out, err
}

func (s *instrumented) Members(ctx context.Context, key sgam.Key, at sgam.At) ([]sgam.Fact, error) {
	start := time.Now()
	out, err := s.st.Members(ctx, key, at)
	s.done(opMembers, start, err)
	return out, err
}

func (s *instrumented) State(ctx context.Context, tenant, subject string, at sgam.At) ([]sgam.Fact, error) {
	start := time.Now()
	out, err := s.st.State(ctx, tenant, subject, at)
	s.done(opState, start, err)
	return out, err
}

func (s *instrumented) History(ctx context.Context, key sgam.Key) ([]sgam.Fact, error) {
	start := time.Now()
	out, err := s.st.History(ctx, key)
	s.done(opHistory, start, err)
	return out, err
}

func (s *instrumented) Trace(ctx context.Context, tenant string, factID int64) (sgam.Trace, error) {
	start := time.Now()
	out, err := s.st.Trace(ctx, tenant, factID)
	s.done(opTrace, start, err)
	return out, err
}

func (s *instrumented) Migrate(ctx context.Context, opts sgam.MigrateOptions) ([]sgam.MigrationReport, error) {
	start := time.Now()
	out, err := s.st.Migrate(ctx, opts)
	s.done(opMigrate, start, err)
	return out, err
}

func (s *instrumented) Forget(ctx context.Context, r sgam.ForgetRequest) (sgam.Receipt, error) {
	start := time.Now()
	out, err := s.st.Forget(ctx, r)
	s.done(opForget, start, err)
	return out, err
}

func (s *instrumented) Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error) {
	start := time.Now()
	out, err := s.st.Receipts(ctx, tenant)
	s.done(opReceipts, start, err)
	return out, err
}

func (s *instrumented) Expire(ctx context.Context) ([]sgam.Receipt, error) {
	start := time.Now()
	out, err := s.st.Expire(ctx)
	s.done(opExpire, start, err)
	return out, err
}

func (s *instrumented) Compact(ctx context.Context) error {
	start := time.Now()
	err := s.st.Compact(ctx)
	s.done(opCompact, start, err)
	return err
}

func (s *instrumented) Check(ctx context.Context) ([]sgam.Violation, error) {
	start := time.Now()
	out, err := s.st.Check(ctx)
	s.done(opCheck, start, err)
	return out, err
}

// Export is timed whole, the callbacks' time included.
func (s *instrumented) Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	start := time.Now()
	err := s.st.Export(ctx, tenant, episode, fact)
	s.done(opExport, start, err)
	return err
}

func (s *instrumented) Import(ctx context.Context, b sgam.ImportBatch) (sgam.ImportStats, error) {
	start := time.Now()
	out, err := s.st.Import(ctx, b)
	s.done(opImport, start, err)
	return out, err
}

// Close closes the wrapped store; it is not timed. The server never calls
// it: whoever opened the store closes it.
func (s *instrumented) Close() error { return s.st.Close() }

// Relation forwards to the wrapped store when it knows its schema, and
// otherwise says that nothing governs attribute, as a store without
// RelationSchema would leave it.
func (s *instrumented) Relation(attribute string) (ref, governed bool) {
	if rs, ok := s.st.(sgam.RelationSchema); ok {
		return rs.Relation(attribute)
	}
	return false, false
}
