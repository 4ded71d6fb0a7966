package server

import (
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sgam-dev/sgam"
)

// Metrics are the server's Prometheus collectors, on a registry of their
// own. They are the store's Observer too: open the store with them
// (store.Options.Observer) and give them to the server (Config.Metrics), and
// /metrics shows the latency of every store operation
// (sgam_store_operation_duration_seconds{operation,outcome}).
type Metrics struct {
	registry   *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	storeOps   *prometheus.HistogramVec
	ops        sync.Map // operation name -> *[2]prometheus.Observer (ok, error)
	expiryRuns struct{ ok, failed prometheus.Counter }
	expired    struct{ episodes, facts prometheus.Counter }
	expiryLast prometheus.Gauge
}

var _ sgam.Observer = (*Metrics)(nil)

// NewMetrics returns the server's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sgam_http_requests_total",
			Help: "HTTP requests by route and status."}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sgam_http_request_duration_seconds",
			Help: "HTTP request latency by route and status.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"route", "status"}),
		storeOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sgam_store_operation_duration_seconds",
			Help:    "Latency of store operations (sgam.Store methods), by operation and outcome (ok or error).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 19)}, []string{"operation", "outcome"}),
	}
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sgam_expiry_runs_total",
		Help: "Runs of the expiry ticker (Store.Expire over every tenant) by outcome (ok or error)."}, []string{"outcome"})
	m.expiryRuns.ok, m.expiryRuns.failed = runs.WithLabelValues("ok"), runs.WithLabelValues("error")
	m.expired.episodes = prometheus.NewCounter(prometheus.CounterOpts{Name: "sgam_expiry_episodes_deleted_total",
		Help: "Episodes the expiry ticker deleted."})
	m.expired.facts = prometheus.NewCounter(prometheus.CounterOpts{Name: "sgam_expiry_facts_deleted_total",
		Help: "Fact rows the expiry ticker deleted."})
	m.expiryLast = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sgam_expiry_last_success_timestamp_seconds",
		Help: "When the expiry ticker last finished a run without error (Unix seconds; 0: never)."})
	m.registry.MustRegister(m.requests, m.latency, m.storeOps, runs, m.expired.episodes, m.expired.facts, m.expiryLast,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every operation's series exists from the start, at zero, so that a
	// dashboard sees an operation that never ran.
	store := reflect.TypeFor[sgam.Store]()
	for i := range store.NumMethod() {
		if op := store.Method(i).Name; op != "Close" {
			m.observers(op)
		}
	}
	return m
}

// observers returns the observers of op (ok, error), resolving them once.
func (m *Metrics) observers(op string) *[2]prometheus.Observer {
	if obs, ok := m.ops.Load(op); ok {
		return obs.(*[2]prometheus.Observer)
	}
	obs, _ := m.ops.LoadOrStore(op, &[2]prometheus.Observer{m.storeOps.WithLabelValues(op, "ok"), m.storeOps.WithLabelValues(op, "error")})
	return obs.(*[2]prometheus.Observer)
}

// StoreOp implements sgam.Observer. The observers of an operation are
// resolved once, so a call costs one map load and one lock-free
// observation.
func (m *Metrics) StoreOp(op string, elapsed time.Duration, err error) {
	o := 0
	if err != nil {
		o = 1
	}
	m.observers(op)[o].Observe(elapsed.Seconds())
}

// watch registers the optional counters of st: retries, open connections.
func (m *Metrics) watch(st sgam.Store) {
	if r, ok := st.(interface{ Retries() int64 }); ok {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sgam_store_retries_total",
			Help: "Store transactions run again after a serialization failure, deadlock or lost connection."},
			func() float64 { return float64(r.Retries()) }))
	}
	if q, ok := st.(interface{ QueuedWrites() int }); ok {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sgam_store_queued_writes",
			Help: "Single writes waiting for the running commit to end, to be committed together (group commit)."},
			func() float64 { return float64(q.QueuedWrites()) }))
	}
	if c, ok := st.(interface{ OpenConns() int }); ok {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sgam_store_open_connections",
			Help: "Connections the store holds open."}, func() float64 { return float64(c.OpenConns()) }))
	}
}

func (m *Metrics) observe(route string, status int, d time.Duration) {
	s := strconv.Itoa(status)
	m.requests.WithLabelValues(route, s).Inc()
	m.latency.WithLabelValues(route, s).Observe(d.Seconds())
}
