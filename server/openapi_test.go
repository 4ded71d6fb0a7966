package server

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/apikey"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestOpenAPIMatchesRouter fails when the router and openapi.json disagree:
// every route documented, every documented route served, with the role the
// router requires.
func TestOpenAPIMatchesRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	documented := map[string]apikey.Role{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Role     apikey.Role `json:"x-sgam-role"`
				Security []any       `json:"security"`
			}
			require.NoError(t, json.Unmarshal(raw, &op), path)
			documented[strings.ToUpper(method)+" "+path] = op.Role
			require.Equal(t, op.Role == "", len(op.Security) == 0, "%s %s: security and role agree", method, path)
		}
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	s, err := New(Config{Store: st, Dev: true})
	require.NoError(t, err)
	require.Equal(t, keys(s.routes), keys(documented))
	require.Equal(t, s.routes, documented, "each route needs the documented role")

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	require.Equal(t, 200, rec.Code)
	require.JSONEq(t, string(openAPI), rec.Body.String())
}

func keys(m map[string]apikey.Role) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
