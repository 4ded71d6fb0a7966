package inspector_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// BenchmarkSubjectPage renders, on the server, the subject page of a key
// with 1,000 rows of history on SQLite (the target: under 100 ms).
func BenchmarkSubjectPage(b *testing.B) {
	ctx := context.Background()
	clock := &sgam.ManualClock{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock.Set(start)
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Clock: clock})
	require.NoError(b, err)
	defer s.Close()
	_, err = s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "the story"})
	require.NoError(b, err)
	rows := 0
	for i := 0; rows < 1000; i++ {
		clock.Set(start.Add(time.Duration(i) * time.Hour))
		if _, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "score"},
			Value: []byte(fmt.Sprint(i)), ValidFrom: start.Add(time.Duration(i) * time.Hour), Source: "e1"}); err != nil {
			b.Fatal(err)
		}
		h, err := s.History(ctx, sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "score"})
		require.NoError(b, err)
		rows = len(h)
	}
	srv, err := server.New(server.Config{Store: s, Dev: true, DevTenant: "acme", Clock: clock})
	require.NoError(b, err)
	req := httptest.NewRequest(http.MethodGet, "/ui/subjects/mira", nil)
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "timeline-score") {
			b.Fatalf("status %d", rec.Code)
		}
	}
	b.ReportMetric(float64(rows), "rows")
}
