package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestMain stops the throwaway PostgreSQL server pgtest may have started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// opener opens an empty store for t, closed when t ends, its operations
// observed by m; clock and m may be nil (the store's default clock, no
// observer).
type opener func(t *testing.T, clock sgam.Clock, m *server.Metrics) sgam.Store

// observer is m as a store's Observer (nil stays nil).
func observer(m *server.Metrics) sgam.Observer {
	if m == nil {
		return nil
	}
	return m
}

// stores are the stores every API test runs on, each as a subtest. Without
// PostgreSQL the postgres subtests skip loudly, and fail in CI (pgtest).
var stores = []struct {
	name string
	open opener
}{
	{"sqlite", func(t *testing.T, clock sgam.Clock, m *server.Metrics) sgam.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlite.Options{Clock: clock, Observer: observer(m)})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T, clock sgam.Clock, m *server.Metrics) sgam.Store {
		s, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{Clock: clock, Observer: observer(m)})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// eachStore runs test once per store, as subtests named after them.
func eachStore(t *testing.T, test func(t *testing.T, open opener)) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { test(t, st.open) })
	}
}

type env struct {
	t     *testing.T
	url   string
	store sgam.Store
	srv   *server.Server
	logs  *bytes.Buffer
	keys  map[string]string // name -> token
}

func newEnv(t *testing.T, open opener) *env { return newEnvWith(t, open, nil, nil) }

// newEnvWith serves a store of open (with clock, for the store and the
// server, when not nil) with four keys, configured further by configure.
func newEnvWith(t *testing.T, open opener, clock sgam.Clock, configure func(*server.Config)) *env {
	ctx := context.Background()
	m := server.NewMetrics()
	s := open(t, clock, m)
	e := &env{t: t, store: s, logs: &bytes.Buffer{}, keys: map[string]string{}}
	for _, k := range []struct {
		name, tenant string
		role         sgam.Role
	}{{"acme-write", "acme", sgam.RoleWrite}, {"acme-read", "acme", sgam.RoleRead}, {"globex-admin", "globex", sgam.RoleAdmin}, {"acme-revoked", "acme", sgam.RoleAdmin}} {
		token, key, err := s.CreateKey(ctx, k.tenant, k.role, k.name)
		require.NoError(t, err)
		e.keys[k.name] = token
		if k.name == "acme-revoked" {
			require.NoError(t, s.RevokeKey(ctx, "acme", key.ID))
		}
	}
	cfg := server.Config{Store: s, MaxBodyBytes: 4096, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)), Clock: clock, Metrics: m}
	if configure != nil {
		configure(&cfg)
	}
	h, err := server.New(cfg)
	require.NoError(t, err)
	// Before the store closes: immediate extractions that outlived their
	// requests end first.
	t.Cleanup(func() { h.Close(context.Background()) })
	e.srv = h
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// on returns e reporting to t: for subtests of the test that made e.
func (e *env) on(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// text GETs path without a key and returns the body, which must be a 200.
func (e *env) text(path string) string {
	e.t.Helper()
	res, err := http.Get(e.url + path)
	require.NoError(e.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, 200, res.StatusCode, "%s", raw)
	return string(raw)
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
	conforms(e.t, method, path, res, raw)
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

func TestPassportStory(t *testing.T) { eachStore(t, testPassportStory) }

func testPassportStory(t *testing.T, open opener) {
	e := newEnv(t, open)
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

func TestAuth(t *testing.T) { eachStore(t, testAuth) }

func testAuth(t *testing.T, open opener) {
	e := newEnv(t, open)
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
			st, body := e.on(t).do("POST", "/v1/facts", c.key, write)
			require.Equal(t, c.want, st)
			code, _ := errorOf(t, body)
			require.Equal(t, c.code, code)
		})
	}
	st, health := e.do("GET", "/healthz", "", "")
	require.Equal(t, 200, st)
	require.Equal(t, map[string]any{"ok": true, "version": "(devel)"}, health, "the version a client checks against")
	st, _ = e.do("GET", "/readyz", "", "")
	require.Equal(t, 200, st)
	// The scheme is case-insensitive (RFC 9110).
	for _, scheme := range []string{"bearer", "BEARER", "beaRer"} {
		st, body := e.do("GET", "/v1/episodes", "raw:"+scheme+" "+e.keys["acme-read"], "")
		require.Equal(t, 200, st, "%s: %v", scheme, body)
	}
	// Two keys in one request: neither is taken.
	two := httptest.NewRequest("GET", "/v1/episodes", nil)
	two.Header.Add("Authorization", "Bearer "+e.keys["acme-read"])
	two.Header.Add("Authorization", "Bearer "+e.keys["acme-write"])
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, two)
	require.Equal(t, 401, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "send one Authorization header, not 2")
	st, body := e.do("POST", "/v1/facts", "acme-read", write)
	require.Equal(t, 403, st)
	require.Contains(t, body["error"].(map[string]any)["message"], "a read key may not do this; it needs a write key")
	st, body = e.do("POST", "/v1/forget", "acme-write", `{"subject":"mira"}`)
	require.Equal(t, 403, st)
	require.Contains(t, body["error"].(map[string]any)["message"], "it needs an admin key")
	e.requireNoKeysInLogs()
}

func TestBadInput(t *testing.T) { eachStore(t, testBadInput) }

func testBadInput(t *testing.T, open opener) {
	e := newEnv(t, open)
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
		{"field given twice", "/v1/facts", `{"subject":"mira","attribute":"b","attribute":"c","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "attribute"},
		{"key given twice in the value", "/v1/facts", `{"subject":"mira","attribute":"city","value":{"a":1,"a":2},"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "value"},
		{"lone surrogate", "/v1/facts", `{"subject":"mi\ud800ra","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "subject"},
		{"invalid UTF-8", "/v1/episodes", "{\"content\":\"caf\xe9\"}", 400, "content"},
		{"invalid UTF-8 in a key", "/v1/episodes", "{\"caf\xe9\":1}", 400, "body"},
		{"number out of range", "/v1/facts", `{"subject":"mira","attribute":"city","value":-1e400,"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "value"},
		{"value too deep", "/v1/facts", `{"subject":"mira","attribute":"city","value":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `,"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, 400, "value"},
		{"metadata key given twice", "/v1/episodes", `{"content":"hi","metadata":{"a":1,"a":2}}`, 400, "metadata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, body := e.on(t).do("POST", c.path, "acme-write", c.body)
			require.Equal(t, c.want, st, "%v", body)
			_, field := errorOf(t, body)
			require.Equal(t, c.field, field)
		})
	}
	st, body := e.do("GET", "/v1/subjects/mira?as_of=tomorrow", "acme-read", "")
	require.Equal(t, 400, st)
	_, field := errorOf(t, body)
	require.Equal(t, "as_of", field)
	// Given empty, an instant is refused: a client that meant none leaves
	// it out.
	for _, c := range []struct{ method, path, body, field string }{
		{"GET", "/v1/subjects/mira?known_at=", "", "known_at"},
		{"POST", "/v1/episodes", `{"content":"x","occurred_at":""}`, "occurred_at"},
	} {
		key := "acme-read"
		if c.method == "POST" {
			key = "acme-write"
		}
		st, body = e.do(c.method, c.path, key, c.body)
		require.Equal(t, 400, st, "%s %s: %v", c.method, c.path, body)
		_, field = errorOf(t, body)
		require.Equal(t, c.field, field)
		require.Contains(t, body["error"].(map[string]any)["message"], "is empty")
	}
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
	// Bad input is the client's fault: no line of the log calls it an
	// internal error (a body over the limit did).
	require.NotContains(t, e.logs.String(), `"level":"ERROR"`)
	require.NotContains(t, e.logs.String(), "internal error")
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

func TestSchemaRoutes(t *testing.T) { eachStore(t, testSchemaRoutes) }

func testSchemaRoutes(t *testing.T, open opener) {
	e := newEnv(t, open)
	const schema = "attributes:\n  allergies: {memory: profile, type: string, cardinality: many}\n  account: {memory: relation, type: {ref: account}}\n  policy: {memory: account, type: {ref: policy}, cardinality: many}\n  budget: {memory: task, type: integer, conflict: review}\n"
	st, body := e.do("POST", "/v1/schema?dry_run=true", "acme-write", schema)
	require.Equal(t, 403, st, "only admin keys apply schemas")
	code, _ := errorOf(t, body)
	require.Equal(t, "forbidden", code)
	// The test keys: acme has write/read; make an acme admin.
	token, _, err := e.store.CreateKey(context.Background(), "acme", sgam.RoleAdmin, "acme-admin")
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

func TestRateLimitAndMetrics(t *testing.T) { eachStore(t, testRateLimitAndMetrics) }

func testRateLimitAndMetrics(t *testing.T, open opener) {
	ctx := context.Background()
	m := server.NewMetrics()
	s := open(t, nil, m)
	token, _, err := s.CreateKey(ctx, "acme", sgam.RoleRead, "")
	require.NoError(t, err)
	other, _, err := s.CreateKey(ctx, "acme", sgam.RoleRead, "")
	require.NoError(t, err)
	h, err := server.New(server.Config{Store: s, RateLimit: 1, Metrics: m})
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
	body := w.Body.String()
	require.Contains(t, body, `sgam_http_requests_total{route="GET /v1/episodes",status="429"} 1`)
	require.Contains(t, body, `sgam_http_request_duration_seconds_bucket{route="GET /v1/episodes",status="200"`)
	require.Contains(t, body, "sgam_store_open_connections")
	if _, ok := s.(interface{ Retries() int64 }); ok {
		require.Contains(t, body, "sgam_store_retries_total", "optional interfaces are asked of the store")
	}
	require.Contains(t, body, `sgam_store_operation_duration_seconds_count{operation="Episodes",outcome="ok"} 3`, "the 429 reached no store")
	require.NotContains(t, body, token)
}

// TestStoreOperationMetrics: after a few requests, /metrics has the latency
// of each store operation they called, by outcome.
func TestStoreOperationMetrics(t *testing.T) { eachStore(t, testStoreOperationMetrics) }

func testStoreOperationMetrics(t *testing.T, open opener) {
	e := newEnv(t, open)
	st, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira lives in Oslo."}`)
	require.Equal(t, 200, st, "%v", body)
	for _, city := range []string{"Oslo", "Bergen"} {
		st, body = e.do("POST", "/v1/facts", "acme-write", `{"subject":"mira","attribute":"city","value":"`+city+`","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
		require.Equal(t, map[string]int{"Oslo": 200, "Bergen": 409}[city], st, "%v", body)
	}
	st, _ = e.do("GET", "/v1/subjects/mira/attributes/city", "acme-read", "")
	require.Equal(t, 200, st)
	st, _ = e.do("GET", "/v1/subjects/mira", "acme-read", "")
	require.Equal(t, 200, st)
	st, _ = e.do("GET", "/v1/episodes/nope", "acme-read", "")
	require.Equal(t, 404, st)
	st, _ = e.do("GET", "/readyz", "", "")
	require.Equal(t, 200, st)

	m := e.text("/metrics")
	for _, want := range []string{
		`# TYPE sgam_store_operation_duration_seconds histogram`,
		`sgam_store_operation_duration_seconds_count{operation="AddEpisode",outcome="ok"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="Assert",outcome="ok"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="Assert",outcome="error"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="Get",outcome="ok"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="State",outcome="ok"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="Episode",outcome="error"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="DefaultSchema",outcome="ok"} 1`,
		`sgam_store_operation_duration_seconds_bucket{operation="Get",outcome="ok",le="+Inf"} 1`,
		`sgam_store_operation_duration_seconds_count{operation="Forget",outcome="ok"} 0`,
	} {
		require.Contains(t, m, want)
	}
	for _, token := range e.keys {
		require.NotContains(t, m, token)
	}
}

// TestExpiryTicker: while the server serves, RunExpiry deletes an episode
// whose retention ran out, with the facts only it supported, keeps the
// rest, logs the run with its counts, counts it in /metrics, and stops
// when its context ends. Its runs here are the ones at start (the period,
// an hour, never comes): a synctest bubble cannot hold the real stores
// and the HTTP server, so the ticker's beat is TestExpiryTickerFakeTime's.
func TestExpiryTicker(t *testing.T) { eachStore(t, testExpiryTicker) }

func testExpiryTicker(t *testing.T, open opener) {
	clock := &sgam.ManualClock{}
	e := newEnvWith(t, open, clock, func(c *server.Config) { c.ExpireEvery = time.Hour })
	const schema = "retention:\n  session: 1h\nattributes:\n  city: {memory: profile, type: string}\n  country: {memory: profile, type: string}\n"
	st, body := e.do("POST", "/v1/schema", "globex-admin", schema)
	require.Equal(t, 200, st, "%v", body)
	for _, req := range []struct{ path, body string }{
		{"/v1/episodes", `{"episode_id":"e1","content":"I am in Oslo this week.","retention":"session"}`},
		{"/v1/episodes", `{"episode_id":"e2","content":"I live in Norway."}`},
		{"/v1/facts", `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`},
		{"/v1/facts", `{"subject":"mira","attribute":"country","value":"Norway","valid_from":"2026-06-01T09:00:00Z","source":"e2"}`},
	} {
		st, body = e.do("POST", req.path, "globex-admin", req.body)
		require.Equal(t, 200, st, "%s: %v", req.body, body)
	}
	get := func(attr string) any {
		st, body := e.do("GET", "/v1/subjects/mira/attributes/"+attr, "globex-admin", "")
		require.Equal(t, 200, st, "%v", body)
		return body["fact"]
	}
	require.NotNil(t, get("city"))

	// run starts RunExpiry, waits for its run at start to be counted (the
	// store's real I/O: a bounded poll, not fake time), stops it and
	// waits for it to return.
	run := func(n int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := make(chan struct{})
		go func() { defer close(stopped); e.srv.RunExpiry(ctx) }()
		ran := fmt.Sprintf(`sgam_expiry_runs_total{outcome="ok"} %d`+"\n", n)
		require.Eventually(t, func() bool { return strings.Contains(e.text("/metrics"), ran) }, 20*time.Second, 10*time.Millisecond,
			"run %d at start", n)
		cancel()
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatal("RunExpiry did not stop when its context ended")
		}
	}
	run(1)
	require.NotNil(t, get("city"), "nothing has run out yet")
	clock.Set(time.Now().Add(2 * time.Hour))
	run(2)
	require.Nil(t, get("city"), "the run expires e1 and its fact")
	require.NotNil(t, get("country"), "kept: its episode has no retention class")
	st, _ = e.do("GET", "/v1/episodes/e1", "globex-admin", "")
	require.Equal(t, 404, st)
	st, _ = e.do("GET", "/v1/episodes/e2", "globex-admin", "")
	require.Equal(t, 200, st)
	st, body = e.do("GET", "/v1/receipts", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Len(t, body["receipts"], 1)
	rc := body["receipts"].([]any)[0].(map[string]any)
	require.Equal(t, "expire", rc["kind"])
	require.Equal(t, float64(1), rc["episodes_deleted"])

	m := e.text("/metrics")
	require.Contains(t, m, `sgam_expiry_runs_total{outcome="ok"} 2`)
	require.Contains(t, m, `sgam_expiry_runs_total{outcome="error"} 0`)
	require.Contains(t, m, "sgam_expiry_episodes_deleted_total 1")
	require.Contains(t, m, `sgam_store_operation_duration_seconds_count{operation="Expire",outcome="ok"} 2`)

	var runs, deleted int
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		if l["msg"] == "expiry" {
			runs++
			require.Contains(t, l, "tenants")
			deleted += int(l["episodes_deleted"].(float64))
		}
	}
	require.Equal(t, 2, runs, "a log line per run")
	require.Equal(t, 1, deleted)
	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
	e.requireNoKeysInLogs()
}

func TestRevocationWhileServing(t *testing.T) { eachStore(t, testRevocationWhileServing) }

// testRevocationWhileServing: a key revoked while the server runs stops
// working once the key cache's entry runs out (at once with the cache off).
func testRevocationWhileServing(t *testing.T, open opener) {
	for _, ttl := range []time.Duration{-1, 200 * time.Millisecond} {
		e := newEnvWith(t, open, nil, func(c *server.Config) { c.KeyCacheTTL = ttl })
		ctx := context.Background()
		token, k, err := e.store.CreateKey(ctx, "acme", sgam.RoleRead, "later-revoked")
		require.NoError(t, err)
		e.keys["later-revoked"] = token
		st, _ := e.do("GET", "/v1/episodes", "later-revoked", "")
		require.Equal(t, 200, st)
		require.NoError(t, e.store.RevokeKey(ctx, "acme", k.ID))
		if ttl > 0 {
			st, _ = e.do("GET", "/v1/episodes", "later-revoked", "")
			require.Equal(t, 200, st, "still trusted from the cache")
			time.Sleep(ttl)
		}
		st, body := e.do("GET", "/v1/episodes", "later-revoked", "")
		require.Equal(t, 401, st, "ttl %v", ttl)
		code, _ := errorOf(t, body)
		require.Equal(t, "unauthenticated", code)
		// A wrong secret under a cached key's id is never served from the cache.
		st, _ = e.do("GET", "/v1/episodes", "acme-read", "")
		require.Equal(t, 200, st)
		good := e.keys["acme-read"]
		bad := good[:len(good)-1] + map[bool]string{true: "y", false: "x"}[strings.HasSuffix(good, "x")]
		st, _ = e.do("GET", "/v1/episodes", "raw:Bearer "+bad, "")
		require.Equal(t, 401, st)
	}
}

// TestTimeout: a request that runs out of time answers 503, not a 500.
func TestTimeout(t *testing.T) {
	e := newEnvWith(t, stores[0].open, nil, func(c *server.Config) { c.Timeout = 50 * time.Millisecond; c.MaxBodyBytes = 4 << 20 })
	var script strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&script, `{"op":"assert","subject":"s%d","attribute":"a","value":%d,"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`+"\n", i, i)
	}
	st, body := e.do("POST", "/v1/replay", "globex-admin", script.String())
	require.Equal(t, 503, st, "%v", body)
	code, _ := errorOf(t, body)
	require.Equal(t, "unavailable", code)
	require.Contains(t, body["error"].(map[string]any)["message"], "ran out of time")
	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
}

// raw sends a request with key (as in do) and returns the response, its
// body read.
func (e *env) raw(method, path, key, body string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(e.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+e.keys[key])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	conforms(e.t, method, path, res, b)
	return res, string(b)
}

func TestHeldWriteAnswersFactNull(t *testing.T) { eachStore(t, testHeldWriteAnswersFactNull) }

// testHeldWriteAnswersFactNull: a write of a sensitive attribute from a
// source that is not user_confirmed is held pending and answers
// "fact":null beside the candidate, not a zero-value fact.
func testHeldWriteAnswersFactNull(t *testing.T, open opener) {
	e := newEnv(t, open)
	st, body := e.do("POST", "/v1/schema", "globex-admin", "attributes:\n  diagnosis: {memory: profile, type: string, sensitive: true}\n")
	require.Equal(t, 200, st, "%v", body)
	for _, path := range []string{"/v1/facts", "/v1/sets/add"} {
		if path == "/v1/sets/add" {
			st, body = e.do("POST", "/v1/schema", "globex-admin", "attributes:\n  diagnosis: {memory: profile, type: string, sensitive: true}\n  allergies: {memory: profile, type: string, cardinality: many, sensitive: true}\n")
			require.Equal(t, 200, st, "%v", body)
		}
		attr := map[string]string{"/v1/facts": "diagnosis", "/v1/sets/add": "allergies"}[path]
		res, raw := e.raw("POST", path, "globex-admin", `{"subject":"mira","attribute":"`+attr+`","value":"asthma","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
		require.Equal(t, 200, res.StatusCode, raw)
		require.Contains(t, raw, `"fact":null`, path)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &out))
		pending, ok := out["pending"].(map[string]any)
		require.True(t, ok, "a candidate: %s", raw)
		require.Equal(t, "asthma", pending["value"])
		require.Equal(t, "sensitive", pending["reason"])
		require.Equal(t, attr, pending["attribute"])
	}
}

// TestSlowBody: a body the server's read timeout cuts off answers 408
// naming the body, and is logged as the client's doing, not as an
// internal error.
func TestSlowBody(t *testing.T) {
	logs := &bytes.Buffer{}
	s := stores[0].open(t, nil, nil)
	h, err := server.New(server.Config{Store: s, Dev: true, DevTenant: "acme", Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ReadTimeout = 300 * time.Millisecond
	ts.Start()
	defer ts.Close()
	for _, path := range []string{"/v1/facts", "/v1/replay", "/v1/schema"} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		require.NoError(t, err)
		body := `{"subject":"mira","attribute":"city","value":"Oslo",`
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, 2*len(body), body)
		require.NoError(t, err)
		// ... and the rest never comes.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, path)
		raw, _ := io.ReadAll(res.Body)
		conn.Close()
		require.Equal(t, http.StatusRequestTimeout, res.StatusCode, "%s: %s", path, raw)
		require.Equal(t, "application/json", res.Header.Get("Content-Type"))
		var eb server.ErrorBody
		require.NoError(t, json.Unmarshal(raw, &eb), "%s", raw)
		require.Equal(t, sgam.Invalid, eb.Error.Code)
		require.Equal(t, "body", eb.Error.Field)
	}
	require.NotContains(t, logs.String(), "internal error")
	require.Contains(t, logs.String(), `"status":408`)
}

// TestRequestLogNamesRoutes: the request log names the route, never the
// caller's path, so a subject id does not outlive its forget in the log.
func TestRequestLogNamesRoutes(t *testing.T) {
	e := newEnv(t, stores[0].open)
	const subject = "zed-who-asked-to-be-forgotten"
	st, body := e.do("POST", "/v1/facts", "acme-write", `{"subject":"`+subject+`","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"ep-`+subject+`"}`)
	require.Equal(t, 200, st, "%v", body)
	for _, path := range []string{"/v1/subjects/" + subject, "/v1/subjects/" + subject + "/attributes/city", "/v1/subjects/" + subject + "/attributes/city/history",
		"/v1/subjects/" + subject + "/traverse?path=city", "/v1/episodes/ep-" + subject, "/v1/pending?subject=" + subject} {
		st, body := e.do("GET", path, "acme-read", "")
		require.Equal(t, 200, st, "%s: %v", path, body)
	}
	res, _ := e.raw("GET", "/v1/nothing/"+subject, "acme-read", "")
	require.Equal(t, 404, res.StatusCode)
	res, _ = e.raw("DELETE", "/v1/subjects/"+subject, "acme-read", "")
	require.Equal(t, 405, res.StatusCode)
	st, body = e.do("POST", "/v1/forget", "globex-admin", `{"subject":"`+subject+`"}`)
	require.Equal(t, 200, st, "%v", body)
	logs := e.logs.String()
	require.NotContains(t, logs, subject)
	require.NotContains(t, logs, "Oslo")
	require.Contains(t, logs, `"route":"GET /v1/subjects/{subject}/attributes/{attribute}"`)
	require.Contains(t, logs, `"route":"/v1/subjects/{subject}","status":405`)
	require.Contains(t, logs, `"route":"unmatched","status":404`)
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if l["msg"] == "request" {
			require.NotEmpty(t, l["request_id"])
			require.NotEmpty(t, l["method"])
			require.NotEmpty(t, l["status"])
			require.NotEmpty(t, l["duration"])
			require.NotContains(t, l, "path")
		}
	}
}

// TestMethodNotAllowed: a method a route does not take answers 405 with
// the Allow header and the JSON error body.
func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/facts", "POST"},
		{"DELETE", "/v1/episodes/e1", "GET, HEAD"},
		{"PUT", "/v1/episodes", "GET, HEAD, POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"GET", "/mcp", "POST"},
	} {
		res, raw := e.raw(c.method, c.path, "acme-write", "")
		require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, "%s %s: %s", c.method, c.path, raw)
		require.Equal(t, c.allow, res.Header.Get("Allow"), "%s %s", c.method, c.path)
		require.Equal(t, "application/json", res.Header.Get("Content-Type"))
		var eb server.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(raw), &eb), raw)
		require.Equal(t, sgam.Invalid, eb.Error.Code)
		require.Equal(t, "method", eb.Error.Field)
		require.Contains(t, eb.Error.Message, c.method)
	}
	res, _ := e.raw("HEAD", "/healthz", "", "")
	require.Equal(t, 200, res.StatusCode, "a GET route serves HEAD")
}

// TestSchemasPerTenant: an admin key applies and reads its own tenant's
// schema only. Another tenant's writes, reads and expiry are not governed
// by it, and the store-wide default is not reachable over HTTP. (A schema
// applied by one tenant's admin key used to replace the whole store's.)
func TestSchemasPerTenant(t *testing.T) { eachStore(t, testSchemasPerTenant) }

func testSchemasPerTenant(t *testing.T, open opener) {
	clock := &sgam.ManualClock{}
	clock.Set(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	e := newEnvWith(t, open, clock, nil)
	const globex = "retention:\n  short: 1h\nepisode_retention: short\nattributes:\n  nickname: {memory: profile, type: string}\n"
	st, body := e.do("POST", "/v1/schema", "globex-admin", globex)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "globex", body["tenant"])
	require.Nil(t, body["store_default"])

	// acme has no schema: its writes are not held to globex's.
	for _, req := range []struct{ path, body string }{
		{"/v1/episodes", `{"episode_id":"e1","content":"Mira Lind, passport holder."}`},
		{"/v1/facts", `{"subject":"mira","attribute":"full_name","value":"Mira Lind","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`},
	} {
		st, body = e.do("POST", req.path, "acme-write", req.body)
		require.Equal(t, 200, st, "%s: %v", req.body, body)
	}
	st, body = e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"full_name","value":"Mira G","valid_from":"2026-06-01T09:00:00Z","source":"g1"}`)
	require.Equal(t, 400, st, "globex's own schema governs globex: %v", body)

	// Each key reads its own tenant's schema; acme sees none, not globex's.
	st, body = e.do("GET", "/v1/schema", "acme-read", "")
	require.Equal(t, 200, st)
	require.Equal(t, float64(0), body["version"])
	require.Nil(t, body["schema"])
	st, body = e.do("GET", "/v1/schema", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Equal(t, "globex", body["tenant"])
	require.Contains(t, fmt.Sprint(body["schema"]), "nickname")

	// globex's retention class expires globex's episodes only.
	st, _ = e.do("POST", "/v1/episodes", "globex-admin", `{"episode_id":"g2","content":"hello"}`)
	require.Equal(t, 200, st)
	clock.Set(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	rcs, err := e.store.Expire(context.Background())
	require.NoError(t, err)
	require.Len(t, rcs, 1)
	require.Equal(t, "globex", rcs[0].Tenant)
	st, _ = e.do("GET", "/v1/episodes/e1", "acme-read", "")
	require.Equal(t, 200, st, "acme's episode survives globex's retention")
	st, body = e.do("GET", "/v1/subjects/mira/attributes/full_name", "acme-read", "")
	require.Equal(t, 200, st)
	require.NotNil(t, body["fact"], "and so does its fact")
	st, _ = e.do("GET", "/v1/episodes/g2", "globex-admin", "")
	require.Equal(t, 404, st)
}
