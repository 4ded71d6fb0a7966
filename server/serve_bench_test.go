package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// BenchmarkServeGet is the server's own cost of a current-value GET (no
// network): authentication, routing, the store read, encoding, logging.
func BenchmarkServeGet(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db"), sqlite.Options{})
	require.NoError(b, err)
	defer s.Close()
	const subjects = 1000
	as := make([]sgam.Assertion, 0, subjects)
	for i := range subjects {
		as = append(as, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: fmt.Sprintf("s%d", i), Attribute: "a"},
			Value: json.RawMessage(fmt.Sprint(i)), ValidFrom: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Source: "e1"})
	}
	_, err = s.AssertMany(ctx, as)
	require.NoError(b, err)
	token, _, err := s.CreateKey(ctx, "acme", sgam.RoleRead, "bench")
	require.NoError(b, err)
	h, err := server.New(server.Config{Store: s, Logger: slog.New(slog.NewJSONHandler(discard{}, nil))})
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := httptest.NewRequest("GET", fmt.Sprintf("/v1/subjects/s%d/attributes/a", i%subjects), nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
