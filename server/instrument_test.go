package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestInstrumentedTimesEveryMethod: every sgam.Store method but Close has
// an operation, and a call of each, through the wrapper, is observed once
// under its own name (ok or error).
func TestInstrumentedTimesEveryMethod(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true})
	require.NoError(t, err)
	require.IsType(t, &instrumented{}, s.cfg.Store)
	require.Same(t, st, s.raw)

	iface := reflect.TypeFor[sgam.Store]()
	var methods []string
	for i := range iface.NumMethod() {
		if name := iface.Method(i).Name; name != "Close" {
			methods = append(methods, name)
		}
	}
	require.ElementsMatch(t, methods, opNames[:])

	ctxType := reflect.TypeFor[context.Context]()
	w := reflect.ValueOf(s.cfg.Store)
	for _, name := range methods {
		m := w.MethodByName(name)
		args := make([]reflect.Value, m.Type().NumIn())
		for i := range args {
			if in := m.Type().In(i); in == ctxType {
				args[i] = reflect.ValueOf(context.Background())
			} else {
				args[i] = reflect.Zero(in) // an empty store: invalid input or nothing to do
			}
		}
		m.Call(args)
	}

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	counts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^sgam_store_operation_duration_seconds_count\{operation="(\w+)",outcome="(?:ok|error)"\} (\d+)$`).
		FindAllStringSubmatch(rec.Body.String(), -1) {
		n, _ := strconv.Atoi(m[2])
		counts[m[1]] += n
	}
	for _, name := range methods {
		require.Equal(t, 1, counts[name], name)
	}
}

// TestStatusRecorderUnwraps: a handler behind ServeHTTP can flush through
// http.ResponseController, and the status it sets is still recorded.
func TestStatusRecorderUnwraps(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true})
	require.NoError(t, err)
	var flushErr error
	s.mux.HandleFunc("GET /test/stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("part"))
		flushErr = http.NewResponseController(w).Flush()
	})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/test/stream", nil))
	require.NoError(t, flushErr)
	require.True(t, rec.Flushed)
	require.Equal(t, http.StatusAccepted, rec.Code)

	rec2 := httptest.NewRecorder()
	s.ServeHTTP(rec2, httptest.NewRequest("GET", "/metrics", nil))
	require.Contains(t, rec2.Body.String(), `sgam_http_requests_total{route="GET /test/stream",status="202"} 1`)
}

// BenchmarkInstrumentedGet measures what the wrapper adds to a store call.
func BenchmarkInstrumentedGet(b *testing.B) {
	in := instrument(nopStore{}, newStoreLatency())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in.Get(ctx, sgam.Key{}, sgam.At{})
	}
}

// nopStore answers Get with nothing; its other methods are never called.
type nopStore struct{ sgam.Store }

func (nopStore) Get(context.Context, sgam.Key, sgam.At) (*sgam.Fact, error) { return nil, nil }
