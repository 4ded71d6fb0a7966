package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/server"
)

// expiryStore is a store whose Expire the test scripts, recording when
// each run began and ended; any other method panics (nil Store): the
// ticker calls none.
type expiryStore struct {
	sgam.Store
	script func(ctx context.Context, run int) ([]sgam.Receipt, error) // nil: nothing expired

	mu          sync.Mutex
	starts      []time.Time
	ends        []time.Time
	inFlight    int
	maxInFlight int
}

func (s *expiryStore) Expire(ctx context.Context) ([]sgam.Receipt, error) {
	s.mu.Lock()
	run := len(s.starts)
	s.starts = append(s.starts, time.Now())
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.ends = append(s.ends, time.Now())
		s.mu.Unlock()
	}()
	if s.script == nil {
		return nil, nil
	}
	return s.script(ctx, run)
}

// runs returns when each run began, as offsets from t0.
func (s *expiryStore) runs(t0 time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []time.Duration{}
	for _, at := range s.starts {
		out = append(out, at.Sub(t0))
	}
	return out
}

// lockedBuffer is a log buffer safe for the ticker's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines whose msg starts with "expiry".
func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "expiry") {
			out = append(out, m)
		}
	}
	return out
}

// metricValue reads one sample of /metrics.
func metricValue(t *testing.T, srv *server.Server, sample string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(rec.Body.String())
	require.NotNil(t, m, "no %s in /metrics", sample)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestExpiryTickerFakeTime: RunExpiry on a fake clock (a synctest bubble),
// over a store whose Expire the test scripts. It runs at once, then once
// every ExpireEvery, on the dot and never before; a run longer than the
// period delays the next and never overlaps it; a failed run is logged
// and counted and the ticker goes on; the counts of the receipts reach
// the log and /metrics; it stops when its context ends, in the middle of
// a run too. A ticker that never fires fails here within a fake minute.
// (TestExpiryTicker runs the runs themselves on the real stores.)
func TestExpiryTickerFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Minute
		slowEnded := make(chan time.Time, 1)
		st := &expiryStore{script: func(ctx context.Context, run int) ([]sgam.Receipt, error) {
			switch run {
			case 1:
				return []sgam.Receipt{{Tenant: "acme", Kind: "expire", EpisodesDeleted: 2, FactsDeleted: 3},
					{Tenant: "globex", Kind: "expire", EpisodesDeleted: 1, FactsDeleted: 1, FactsRetained: 4}}, nil
			case 5: // longer than two periods
				time.Sleep(5 * every / 2)
				slowEnded <- time.Now()
				return nil, nil
			case 7:
				return nil, errors.New("disk on fire")
			case 9: // stopped in the middle of the run
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, nil
		}}
		logs := &lockedBuffer{}
		srv, err := server.New(server.Config{Store: st, ExpireEvery: every, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		require.NoError(t, err)

		t0 := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stopped := make(chan struct{})
		go func() { defer close(stopped); srv.RunExpiry(ctx) }()

		synctest.Wait()
		require.Equal(t, []time.Duration{0}, st.runs(t0), "a run at once")
		time.Sleep(every - time.Nanosecond)
		synctest.Wait()
		require.Equal(t, []time.Duration{0}, st.runs(t0), "none before the period")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.Equal(t, []time.Duration{0, every}, st.runs(t0), "one on the dot")
		time.Sleep(3 * every)
		synctest.Wait()
		require.Equal(t, []time.Duration{0, every, 2 * every, 3 * every, 4 * every}, st.runs(t0), "one every period")
		require.Equal(t, float64(3), metricValue(t, srv, "sgam_expiry_episodes_deleted_total"))
		require.Equal(t, float64(4), metricValue(t, srv, "sgam_expiry_facts_deleted_total"))
		require.Equal(t, float64(t0.Add(4*every).UnixNano())/1e9, metricValue(t, srv, "sgam_expiry_last_success_timestamp_seconds"))

		// Run 5 takes 2.5 periods: the next waits for it.
		time.Sleep(every) // run 5 begins
		synctest.Wait()
		require.Len(t, st.runs(t0), 6)
		time.Sleep(5*every/2 - time.Nanosecond)
		synctest.Wait()
		require.Len(t, st.runs(t0), 6, "nothing starts while run 5 runs")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		ended := <-slowEnded
		runs := st.runs(t0)
		require.Len(t, runs, 7, "the period ran out meanwhile: the next runs at once")
		require.Equal(t, ended.Sub(t0), runs[6])
		time.Sleep(8*every - runs[6]) // back on the ticker's beat: run 7 fails
		synctest.Wait()
		require.Equal(t, 8*every, st.runs(t0)[7])
		require.Equal(t, float64(1), metricValue(t, srv, `sgam_expiry_runs_total{outcome="error"}`))
		time.Sleep(every) // the ticker goes on after a failure
		synctest.Wait()
		require.Equal(t, 9*every, st.runs(t0)[8])
		time.Sleep(every) // run 9 waits until stopped
		synctest.Wait()
		require.Len(t, st.runs(t0), 10)
		select {
		case <-stopped:
			t.Fatal("RunExpiry returned before its context ended")
		default:
		}
		cancel()
		synctest.Wait()
		select {
		case <-stopped:
		default:
			t.Fatal("RunExpiry did not stop when its context ended")
		}
		require.Len(t, st.runs(t0), 10, "no run after the stop")
		st.mu.Lock()
		require.Equal(t, 1, st.maxInFlight, "runs never overlap")
		st.mu.Unlock()
		require.Equal(t, float64(8), metricValue(t, srv, `sgam_expiry_runs_total{outcome="ok"}`), "the failed and the stopped runs are not ok")
		require.Equal(t, float64(1), metricValue(t, srv, `sgam_expiry_runs_total{outcome="error"}`), "nor is the stopped one a failure")

		var msgs []string
		for i, l := range logs.lines(t) {
			msgs = append(msgs, l["msg"].(string))
			if i == 1 {
				require.Equal(t, float64(2), l["tenants"])
				require.Equal(t, float64(2), l["receipts"])
				require.Equal(t, float64(3), l["episodes_deleted"])
				require.Equal(t, float64(4), l["facts_deleted"])
				require.Equal(t, float64(4), l["facts_retained"])
			}
			if i == 7 {
				require.Equal(t, "disk on fire", l["error"])
			}
		}
		require.Equal(t, []string{"expiry", "expiry", "expiry", "expiry", "expiry", "expiry", "expiry", "expiry failed", "expiry", "expiry stopped"}, msgs,
			"a log line per run")
	})
}

// TestExpiryTickerOff: with ExpireEvery 0, RunExpiry returns at once and
// never runs.
func TestExpiryTickerOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &expiryStore{}
		srv, err := server.New(server.Config{Store: st})
		require.NoError(t, err)
		srv.RunExpiry(t.Context())
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Empty(t, st.runs(time.Now()))
	})
}
