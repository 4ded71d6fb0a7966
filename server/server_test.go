package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store/sqlite"
)

type env struct {
	t     *testing.T
	url   string
	store *sqlite.Store
	logs  *bytes.Buffer
	keys  map[string]string // name -> token
}

func newEnv(t *testing.T) *env {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	e := &env{t: t, store: s, logs: &bytes.Buffer{}, keys: map[string]string{}}
	for _, k := range []struct {
		name, tenant string
		role         apikey.Role
	}{{"acme-write", "acme", apikey.Write}, {"acme-read", "acme", apikey.Read}, {"globex-admin", "globex", apikey.Admin}, {"acme-revoked", "acme", apikey.Admin}} {
		token, key, err := apikey.Create(ctx, s, k.tenant, k.role, k.name, time.Now())
		require.NoError(t, err)
		e.keys[k.name] = token
		if k.name == "acme-revoked" {
			require.NoError(t, s.RevokeKey(ctx, "acme", key.ID, time.Now()))
		}
	}
	h, err := server.New(server.Config{Store: s, Keys: s, MaxBodyBytes: 4096, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// do sends a request with key (a name in e.keys, "" for none, or a literal
// header value prefixed with "raw:") and returns the status and body.
func (e *env) do(method, path, key, body string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(e.t, err)
	switch {
	case strings.HasPrefix(key, "raw:"):
		req.Header.Set("Authorization", strings.TrimPrefix(key, "raw:"))
	case key != "":
		req.Header.Set("Authorization", "Bearer "+e.keys[key])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	var out map[string]any
	require.NoError(e.t, json.Unmarshal(raw, &out), "body: %s", raw)
	return res.StatusCode, out
}

func errorOf(t *testing.T, body map[string]any) (code, field string) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", body)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	require.NotEmpty(t, e["message"])
	return code, field
}

func TestPassportStory(t *testing.T) {
	e := newEnv(t)
	st, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira: my passport deadline is July 15.","occurred_at":"2026-06-01T09:00:00Z"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "acme", body["tenant"])
	st, body = e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"passport_deadline","value":"2026-07-15","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"passport_deadline","value":"2026-06-30","valid_from":"2026-06-03T10:00:00+00:00","source":"e2"}`)
	require.Equal(t, 200, st, "%v", body)
	id := int(body["fact"].(map[string]any)["fact_id"].(float64))

	st, body = e.do("GET", "/v1/subjects/mira/attributes/passport_deadline", "acme-read", "")
	require.Equal(t, 200, st)
	require.Equal(t, "2026-06-30", body["fact"].(map[string]any)["value"])
	st, body = e.do("GET", "/v1/subjects/mira/attributes/passport_deadline?as_of=2026-06-02T00:00:00Z", "acme-read", "")
	require.Equal(t, 200, st)
	require.Equal(t, "2026-07-15", body["fact"].(map[string]any)["value"])
	st, body = e.do("GET", "/v1/subjects/mira", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["facts"], 1)
	st, body = e.do("GET", "/v1/subjects/mira/attributes/passport_deadline/history", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["facts"], 3)
	st, body = e.do("GET", "/v1/facts/"+itoa(id)+"/trace", "acme-read", "")
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("GET", "/v1/episodes/e1", "acme-read", "")
	require.Equal(t, 200, st)
	require.Equal(t, "e1", body["episode_id"])
	st, body = e.do("GET", "/v1/episodes?limit=10", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["episodes"], 2, "e1 and the placeholder e2")
	st, body = e.do("POST", "/v1/facts/retract", "acme-write", `{"subject":"mira","attribute":"passport_deadline","at":"2026-07-01T00:00:00Z","source":"e3"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, true, body["fact"].(map[string]any)["tombstone"])
	st, body = e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"passport_deadline","value":"2026-01-01","valid_from":"2026-06-03T10:00:00Z","source":"e9"}`)
	require.Equal(t, 409, st)
	code, field := errorOf(t, body)
	require.Equal(t, "conflict", code)
	require.Equal(t, "valid_from", field)

	// The other tenant's key sees none of it: 404s and empty lists.
	st, body = e.do("GET", "/v1/episodes/e1", "globex-admin", "")
	require.Equal(t, 404, st)
	code, _ = errorOf(t, body)
	require.Equal(t, "not_found", code)
	st, _ = e.do("GET", "/v1/facts/"+itoa(id)+"/trace", "globex-admin", "")
	require.Equal(t, 404, st)
	st, body = e.do("GET", "/v1/subjects/mira", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["facts"])
	st, body = e.do("GET", "/v1/subjects/mira/attributes/passport_deadline/history", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["facts"])
	st, body = e.do("GET", "/v1/subjects/mira/attributes/passport_deadline", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Nil(t, body["fact"])
	st, body = e.do("GET", "/v1/episodes", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["episodes"])

	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
	e.requireNoKeysInLogs()
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	const write = `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`
	for _, c := range []struct {
		name, key string
		want      int
		code      string
	}{
		{"missing key", "", 401, "unauthenticated"},
		{"not bearer", "raw:Basic abc", 401, "unauthenticated"},
		{"wrong key", "raw:Bearer sgam_000000000000_00000000000000000000000000000000", 401, "unauthenticated"},
		{"malformed key", "raw:Bearer hello", 401, "unauthenticated"},
		{"revoked key", "acme-revoked", 401, "unauthenticated"},
		{"read key writing", "acme-read", 403, "forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, body := e.do("POST", "/v1/facts", c.key, write)
			require.Equal(t, c.want, st)
			code, _ := errorOf(t, body)
			require.Equal(t, c.code, code)
		})
	}
	st, _ := e.do("GET", "/healthz", "", "")
	require.Equal(t, 200, st)
	st, _ = e.do("GET", "/readyz", "", "")
	require.Equal(t, 200, st)
	e.requireNoKeysInLogs()
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, path, body string
		want             int
		field            string
	}{
		{"malformed JSON", "/v1/facts", `{"subject":`, 400, "body"},
		{"empty body", "/v1/facts", ``, 400, "body"},
		{"two values", "/v1/facts", `{} {}`, 400, "body"},
		{"unknown field", "/v1/facts", `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1","tenant":"globex"}`, 400, "tenant"},
		{"wrong type", "/v1/facts", `{"subject":42,"attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "subject"},
		{"bad timestamp", "/v1/facts", `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01","source":"e1"}`, 400, "valid_from"},
		{"missing value", "/v1/facts", `{"subject":"mira","attribute":"city","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "value"},
		{"oversized", "/v1/episodes", `{"content":"` + strings.Repeat("x", 5000) + `"}`, 413, "body"},
		{"bad episode time", "/v1/episodes", `{"occurred_at":"yesterday"}`, 400, "occurred_at"},
		{"bad retraction", "/v1/facts/retract", `{"subject":"mira","attribute":"city","at":"","source":"e1"}`, 400, "at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, body := e.do("POST", c.path, "acme-write", c.body)
			require.Equal(t, c.want, st, "%v", body)
			_, field := errorOf(t, body)
			require.Equal(t, c.field, field)
		})
	}
	st, body := e.do("GET", "/v1/subjects/mira?as_of=tomorrow", "acme-read", "")
	require.Equal(t, 400, st)
	_, field := errorOf(t, body)
	require.Equal(t, "as_of", field)
	st, _ = e.do("GET", "/v1/facts/x/trace", "acme-read", "")
	require.Equal(t, 400, st)
	st, _ = e.do("GET", "/v1/episodes?limit=many", "acme-read", "")
	require.Equal(t, 400, st)
	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
	eps, err := e.store.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, eps, "nothing half-written")
}

func (e *env) requireNoKeysInLogs() {
	e.t.Helper()
	require.NotEmpty(e.t, e.logs.String())
	for name, token := range e.keys {
		require.NotContains(e.t, e.logs.String(), token, name)
		require.NotContains(e.t, e.logs.String(), strings.Split(token, "_")[2], name+" (secret)")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSchemaRoutes(t *testing.T) {
	e := newEnv(t)
	const schema = "attributes:\n  allergies: {memory: profile, type: string, cardinality: many}\n  account: {memory: relation, type: {ref: account}}\n  policy: {memory: account, type: {ref: policy}, cardinality: many}\n  budget: {memory: task, type: integer, conflict: review}\n"
	st, body := e.do("POST", "/v1/schema?dry_run=true", "acme-write", schema)
	require.Equal(t, 403, st, "only admin keys apply schemas")
	code, _ := errorOf(t, body)
	require.Equal(t, "forbidden", code)
	// The test keys: acme has write/read; make an acme admin.
	token, _, err := apikey.Create(context.Background(), e.store, "acme", apikey.Admin, "acme-admin", time.Now())
	require.NoError(t, err)
	e.keys["acme-admin"] = token
	st, body = e.do("POST", "/v1/schema?dry_run=true", "acme-admin", schema)
	require.Equal(t, 200, st, "%v", body)
	require.NotEmpty(t, body["diff"])
	st, body = e.do("POST", "/v1/schema", "acme-admin", "attributes: {x: {memory: task, type: strin}}")
	require.Equal(t, 400, st)
	code, _ = errorOf(t, body)
	require.Equal(t, "invalid", code)
	st, _ = e.do("POST", "/v1/schema", "acme-admin", schema)
	require.Equal(t, 200, st)
	st, body = e.do("GET", "/v1/schema", "acme-read", "")
	require.Equal(t, 200, st)
	require.Equal(t, float64(1), body["version"])

	for _, v := range []string{"peanuts", "shellfish"} {
		st, body = e.do("POST", "/v1/sets/add", "acme-write", `{"subject":"mira","attribute":"allergies","value":"`+v+`","valid_from":"2026-01-01T00:00:00Z","source":"e1"}`)
		require.Equal(t, 200, st, "%v", body)
	}
	st, body = e.do("POST", "/v1/sets/remove", "acme-write", `{"subject":"mira","attribute":"allergies","value":"peanuts","at":"2026-02-01T00:00:00Z","source":"e2"}`)
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("GET", "/v1/subjects/mira/attributes/allergies", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["facts"], 1)
	st, body = e.do("GET", "/v1/subjects/mira/attributes/allergies?as_of=2026-01-15T00:00:00Z", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["facts"], 2)

	e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"account","value":"acct-42","valid_from":"2026-01-01T00:00:00Z","source":"e1"}`)
	e.do("POST", "/v1/sets/add", "acme-write", `{"subject":"acct-42","attribute":"policy","value":"pol-1","valid_from":"2026-01-01T00:00:00Z","source":"e1"}`)
	st, body = e.do("GET", "/v1/subjects/mira/traverse?path=account,policy", "acme-read", "")
	require.Equal(t, 200, st, "%v", body)
	require.Len(t, body["hops"], 2)
	st, body = e.do("GET", "/v1/subjects/mira/traverse?path=account,policy", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["hops"])

	e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"budget","value":100,"valid_from":"2026-01-01T00:00:00Z","source":"e1"}`)
	st, body = e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"budget","value":200,"valid_from":"2026-01-01T00:00:00Z","source":"e2"}`)
	require.Equal(t, 200, st)
	id := body["pending"].(map[string]any)["pending_id"].(string)
	st, body = e.do("GET", "/v1/pending", "acme-read", "")
	require.Equal(t, 200, st)
	require.Len(t, body["candidates"], 1)
	st, body = e.do("GET", "/v1/pending", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["candidates"])
	st, _ = e.do("POST", "/v1/pending/"+id+"/confirm", "globex-admin", `{"episode_id":"ok"}`)
	require.Equal(t, 404, st)
	st, body = e.do("POST", "/v1/pending/"+id+"/confirm", "acme-write", `{"episode_id":"ok"}`)
	require.Equal(t, 200, st, "%v", body)
	st, _ = e.do("POST", "/v1/pending/"+id+"/dismiss", "acme-write", "")
	require.Equal(t, 404, st)

	// Replay within the caller's tenant only.
	st, body = e.do("POST", "/v1/replay", "acme-admin", `{"op":"get","subject":"mira","attribute":"budget"}`+"\n"+`{"op":"get","tenant":"globex","subject":"mira","attribute":"budget"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, float64(1), body["failed"])
	require.Contains(t, string(mustJSON(body["results"])), "200")

	// Forget, admin only, with its receipt.
	st, _ = e.do("POST", "/v1/forget", "acme-write", `{"subject":"mira"}`)
	require.Equal(t, 403, st)
	st, body = e.do("POST", "/v1/forget", "acme-admin", `{"subject":"mira"}`)
	require.Equal(t, 200, st, "%v", body)
	require.NotZero(t, body["facts_deleted"])
	st, body = e.do("GET", "/v1/receipts", "acme-admin", "")
	require.Equal(t, 200, st)
	require.Len(t, body["receipts"], 1)
	st, body = e.do("GET", "/v1/receipts", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["receipts"])
	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
	e.requireNoKeysInLogs()
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestRateLimitAndMetrics(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	require.NoError(t, err)
	defer s.Close()
	token, _, err := apikey.Create(ctx, s, "acme", apikey.Read, "", time.Now())
	require.NoError(t, err)
	other, _, err := apikey.Create(ctx, s, "acme", apikey.Read, "", time.Now())
	require.NoError(t, err)
	h, err := server.New(server.Config{Store: s, Keys: s, RateLimit: 1})
	require.NoError(t, err)
	get := func(path, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for range 2 { // the burst
		require.Equal(t, 200, get("/v1/episodes", token).Code)
	}
	w := get("/v1/episodes", token)
	require.Equal(t, 429, w.Code)
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Equal(t, 200, get("/v1/episodes", other).Code, "limits are per key")

	w = get("/metrics", "")
	require.Equal(t, 200, w.Code)
	m := w.Body.String()
	require.Contains(t, m, `sgam_http_requests_total{route="GET /v1/episodes",status="429"} 1`)
	require.Contains(t, m, `sgam_http_request_duration_seconds_bucket{route="GET /v1/episodes",status="200"`)
	require.Contains(t, m, "sgam_store_open_connections")
	require.NotContains(t, m, token)
}
