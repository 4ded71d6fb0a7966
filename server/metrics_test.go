package server

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestStoreOperationsInMetrics: a store opened with the server's Metrics
// as its observer shows its operations on /metrics.
func TestStoreOperationsInMetrics(t *testing.T) {
	m := NewMetrics()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{Observer: m})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true, Metrics: m})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/episodes", strings.NewReader(`{"episode_id":"e1","content":"hi"}`)))
	require.Equal(t, 200, rec.Code, rec.Body.String())
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/episodes/nowhere", nil))
	require.Equal(t, 404, rec.Code)
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Contains(t, rec.Body.String(), `sgam_store_operation_duration_seconds_count{operation="AddEpisode",outcome="ok"} 1`)
	require.Contains(t, rec.Body.String(), `sgam_store_operation_duration_seconds_count{operation="Episode",outcome="error"} 1`)
	require.Contains(t, rec.Body.String(), `sgam_store_open_connections`)
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
