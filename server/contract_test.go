package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/server"
)

// TestUnmatchedPathsAnswerJSON: a path no route serves answers a JSON 404
// in the error shape, not the mux's text/plain "404 page not found";
// a known path's wrong method still answers 405 with Allow, and the routes
// beside the API (inspector, metrics, health, MCP) are served as before.
func TestUnmatchedPathsAnswerJSON(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/nope"},
		{"GET", "/v1/episodes/"},
		{"GET", "/nope"},
		{"GET", "/"},
		{"POST", "/v1/nope"},
		{"GET", "/v1/facts/1"},
		{"GET", "/v1/subjects/mira/attributes"},
		{"DELETE", "/v1"},
	} {
		res, raw := e.raw(c.method, c.path, "acme-read", "")
		require.Equal(t, http.StatusNotFound, res.StatusCode, "%s %s: %s", c.method, c.path, raw)
		require.Equal(t, "application/json", res.Header.Get("Content-Type"), "%s %s", c.method, c.path)
		var eb server.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(raw), &eb), raw)
		require.Equal(t, sgam.NotFound, eb.Error.Code)
		require.Equal(t, "path", eb.Error.Field)
		require.NotEmpty(t, eb.Error.Message)
	}
	res, _ := e.raw("GET", "/v1/facts", "acme-read", "")
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	require.Equal(t, "POST", res.Header.Get("Allow"))
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json", "/metrics"} {
		e.text(path)
	}
	req, err := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.keys["acme-read"])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "POST /mcp is served")

	// The inspector: /ui redirects to /ui/, which is the inspector's.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noFollow.Get(e.url + "/ui")
	require.NoError(t, err)
	res.Body.Close()
	require.True(t, res.StatusCode >= 300 && res.StatusCode < 400, "a redirect: %d", res.StatusCode)
	require.Equal(t, "/ui/", res.Header.Get("Location"))
	res, err = noFollow.Get(e.url + "/ui/")
	require.NoError(t, err)
	res.Body.Close()
	require.NotEqual(t, http.StatusNotFound, res.StatusCode)
	require.NotContains(t, res.Header.Get("Content-Type"), "application/json", "the inspector answers, not the API's 404")

	m := e.text("/metrics")
	require.Contains(t, m, `sgam_http_requests_total{route="unmatched",status="404"} 8`)
	require.Contains(t, e.logs.String(), `"route":"unmatched","status":404`)
	require.NotContains(t, e.logs.String(), "/v1/nope", "the log names the route, never the path")
}

// TestForgetNamesRequestFields: the errors of POST /v1/forget name the
// request's field episode_id, not the store's "episode".
func TestForgetNamesRequestFields(t *testing.T) { eachStore(t, testForgetNamesRequestFields) }

func testForgetNamesRequestFields(t *testing.T, open opener) {
	e := newEnv(t, open)
	st, body := e.do("POST", "/v1/episodes", "globex-admin", `{"episode_id":"b","content":"hello"}`)
	require.Equal(t, 200, st, "%v", body)
	for _, c := range []struct {
		body  string
		want  int
		field string
	}{
		{`{"subject":"a","episode_id":"b"}`, 400, "episode_id"},
		{`{"episode_id":"b","all":true}`, 400, "all"},
		{`{"subject":"a","all":true}`, 400, "all"},
		{`{"episode_id":"zzz-none"}`, 404, "episode_id"},
		{`{"episode_id":"not an id!"}`, 400, "episode_id"},
		{`{}`, 400, "subject"},
		{`{"episode":"b"}`, 400, "episode"}, // not a field of the request
	} {
		st, body := e.do("POST", "/v1/forget", "globex-admin", c.body)
		require.Equal(t, c.want, st, "%s: %v", c.body, body)
		_, field := errorOf(t, body)
		require.Equal(t, c.field, field, c.body)
		if c.field != "episode" {
			require.NotContains(t, body["error"].(map[string]any)["message"], "episode and", c.body)
		}
	}
	st, _ = e.do("GET", "/v1/episodes/b", "globex-admin", "")
	require.Equal(t, 200, st, "nothing was forgotten")
	st, body = e.do("POST", "/v1/forget", "globex-admin", `{"episode_id":"b"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "episode", body["kind"])
	st, _ = e.do("GET", "/v1/episodes/b", "globex-admin", "")
	require.Equal(t, 404, st)
}

// TestEpisodeNeedsContent: POST /v1/episodes refuses an episode without
// text, as sgam ingest does, and stores nothing.
func TestEpisodeNeedsContent(t *testing.T) { eachStore(t, testEpisodeNeedsContent) }

func testEpisodeNeedsContent(t *testing.T, open opener) {
	e := newEnv(t, open)
	for _, b := range []string{`{}`, `{"content":""}`, `{"episode_id":"e1","occurred_at":"2026-06-01T09:00:00Z"}`, `{"episode_id":"e1","extract":"none"}`} {
		st, body := e.do("POST", "/v1/episodes", "acme-write", b)
		require.Equal(t, 400, st, "%s: %v", b, body)
		code, field := errorOf(t, body)
		require.Equal(t, "invalid", code)
		require.Equal(t, "content", field, b)
		require.Contains(t, body["error"].(map[string]any)["message"], "is required")
	}
	eps, err := e.store.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, eps, "no empty episode stored")
	st, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"x"}`)
	require.Equal(t, 200, st, "%v", body)
}

// TestReplayOfNothing: an empty script answers "results":[], the array
// the document declares, not null.
func TestReplayOfNothing(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, script := range []string{"", "\n\n", "  "} {
		res, raw := e.raw("POST", "/v1/replay", "globex-admin", script)
		require.Equal(t, 200, res.StatusCode, raw)
		require.JSONEq(t, `{"lines":0,"failed":0,"results":[]}`, raw)
	}
}

// TestListLimit: limit takes 1 to 10000; 0 is refused as -1 is, not read
// as the default (leave limit out for that).
func TestListLimit(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, l := range []string{"0", "-1", "10001", "00", "-0"} {
		st, body := e.do("GET", "/v1/episodes?limit="+l, "acme-read", "")
		require.Equal(t, 400, st, "limit=%s: %v", l, body)
		_, field := errorOf(t, body)
		require.Equal(t, "limit", field)
		require.Contains(t, body["error"].(map[string]any)["message"], "must be between 1 and 10000")
	}
	for _, q := range []string{"?limit=1", "?limit=10000", "", "?limit="} {
		st, body := e.do("GET", "/v1/episodes"+q, "acme-read", "")
		require.Equal(t, 200, st, "%s: %v", q, body)
	}
}

// TestQueryParameters: every route refuses a query parameter it does not
// take (a miscased one too) and one given twice, naming it, as bodies
// refuse unknown and repeated fields; those it takes still work.
func TestQueryParameters(t *testing.T) { eachStore(t, testQueryParameters) }

func testQueryParameters(t *testing.T, open opener) {
	e := newEnv(t, open)
	st, body := e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"city","value":"Bergen","valid_from":"2026-06-03T09:00:00Z","source":"e2"}`)
	require.Equal(t, 200, st, "%v", body)

	// Every documented route but those served by handlers of their own
	// (the document, the metrics, MCP) refuses what it does not take.
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	raw, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	var routes []string
	for path, ops := range doc.Paths {
		for method := range ops {
			routes = append(routes, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(routes)
	fill := strings.NewReplacer("{subject}", "mira", "{attribute}", "city", "{id}", "1")
	checked := 0
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		if path == "/openapi.json" || path == "/metrics" || path == "/mcp" {
			continue
		}
		checked++
		for _, c := range []struct{ query, field string }{
			{"?zz_unknown=1", "zz_unknown"},
			{"?Zz_unknown=1&zz_unknown=2", "Zz_unknown"},
			{"?=1", "query"},
			{"?a=%zz", "query"},
			{"?a;b", "query"},
		} {
			st, body := e.do(method, fill.Replace(path)+c.query, "globex-admin", "")
			require.Equal(t, 400, st, "%s%s: %v", route, c.query, body)
			code, field := errorOf(t, body)
			require.Equal(t, "invalid", code)
			require.Equal(t, c.field, field, "%s%s", route, c.query)
		}
	}
	require.Greater(t, checked, 20)

	// A parameter given twice is refused, not read as its first value.
	const at = "/v1/subjects/mira/attributes/city"
	for _, q := range []string{
		"?as_of=2026-06-02T00:00:00Z&as_of=2026-06-04T00:00:00Z",
		"?as_of=2026-06-02T00:00:00Z&as_of=2026-06-02T00:00:00Z",
		"?as_of=2026-06-02T00:00:00Z&known_at=2026-06-02T00:00:00Z&as_of=",
	} {
		st, body := e.do("GET", at+q, "globex-admin", "")
		require.Equal(t, 400, st, "%s: %v", q, body)
		_, field := errorOf(t, body)
		require.Equal(t, "as_of", field)
		require.Contains(t, body["error"].(map[string]any)["message"], "given 2 times")
	}
	// A miscased name is refused, not ignored for the current value.
	st, body = e.do("GET", at+"?As_Of=2026-06-02T00:00:00Z", "globex-admin", "")
	require.Equal(t, 400, st, "%v", body)
	_, field := errorOf(t, body)
	require.Equal(t, "As_Of", field)
	require.Contains(t, body["error"].(map[string]any)["message"], `case-sensitive (the parameter is "as_of")`)
	st, body = e.do("GET", "/v1/episodes?sesion=s1", "globex-admin", "")
	require.Equal(t, 400, st, "%v", body)
	require.Contains(t, body["error"].(map[string]any)["message"], "which takes session, limit")
	// A body route with a query string writes nothing.
	st, body = e.do("POST", "/v1/facts?dry_run=true", "globex-admin", `{"subject":"zed","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
	require.Equal(t, 400, st, "%v", body)
	st, body = e.do("GET", "/v1/subjects/zed", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["facts"])
	// The key is checked first: no key is a 401 whatever the query.
	st, _ = e.do("GET", at+"?As_Of=x", "", "")
	require.Equal(t, 401, st)

	// What each route takes still works.
	for _, q := range []struct{ path, want string }{
		{at + "?as_of=2026-06-02T00:00:00Z", "Oslo"},
		{at + "?as_of=2026-06-04T00:00:00Z&known_at=2030-01-01T00:00:00Z", "Bergen"},
		{at, "Bergen"},
	} {
		st, body := e.do("GET", q.path, "globex-admin", "")
		require.Equal(t, 200, st, "%s: %v", q.path, body)
		require.Equal(t, q.want, body["fact"].(map[string]any)["value"], q.path)
	}
	for _, path := range []string{
		"/v1/subjects/mira?as_of=2026-06-02T00:00:00Z&known_at=2030-01-01T00:00:00Z",
		"/v1/subjects/mira/traverse?path=city&as_of=2026-06-02T00:00:00Z&known_at=2030-01-01T00:00:00Z",
		"/v1/episodes?session=s1&limit=5",
		"/v1/pending?subject=mira",
		"/healthz", "/readyz",
	} {
		st, body := e.do("GET", path, "globex-admin", "")
		require.Equal(t, 200, st, "%s: %v", path, body)
	}
	st, body = e.do("POST", "/v1/schema?dry_run=true", "globex-admin", "attributes:\n  city: {memory: profile, type: string}\n")
	require.Equal(t, 200, st, "%v", body)
}

// TestDismissTakesNoFields: POST /v1/pending/{id}/dismiss takes an empty
// body or {}, and refuses anything else without dismissing.
func TestDismissTakesNoFields(t *testing.T) { eachStore(t, testDismissTakesNoFields) }

func testDismissTakesNoFields(t *testing.T, open opener) {
	e := newEnv(t, open)
	st, body := e.do("POST", "/v1/schema", "globex-admin", "attributes:\n  budget: {memory: task, type: integer, conflict: review}\n")
	require.Equal(t, 200, st, "%v", body)
	write := func(value int) map[string]any {
		st, body := e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"budget","value":`+itoa(value)+`,"valid_from":"2026-01-01T00:00:00Z","source":"e`+itoa(value)+`"}`)
		require.Equal(t, 200, st, "%v", body)
		return body
	}
	require.NotNil(t, write(100)["fact"])
	pending := func(value int) string { return write(value)["pending"].(map[string]any)["pending_id"].(string) }
	for _, c := range []struct{ body, field string }{
		{`{"x":1}`, "x"},
		{`{"episode_id":"e1"}`, "episode_id"},
		{`garbage`, "body"},
		{`null`, "body"},
		{`[]`, "body"},
		{`{} {}`, "body"},
		{`{"a":1,"a":1}`, "a"},
	} {
		id := pending(200)
		st, body := e.do("POST", "/v1/pending/"+id+"/dismiss", "globex-admin", c.body)
		require.Equal(t, 400, st, "%s: %v", c.body, body)
		_, field := errorOf(t, body)
		require.Equal(t, c.field, field, c.body)
		st, body = e.do("GET", "/v1/pending", "globex-admin", "")
		require.Equal(t, 200, st)
		require.Len(t, body["candidates"], 1, "%s: not dismissed", c.body)
		st, body = e.do("POST", "/v1/pending/"+id+"/dismiss", "globex-admin", map[bool]string{true: "", false: " {} "}[c.field == "x"])
		require.Equal(t, 200, st, "%v", body)
		require.Equal(t, true, body["ok"])
	}
	st, body = e.do("GET", "/v1/pending", "globex-admin", "")
	require.Equal(t, 200, st)
	require.Empty(t, body["candidates"])
}

// TestSchemaOfTenantWithoutOne: GET /v1/schema says who serves the key's
// tenant, as api.md has it: its own schema (tenant), or the store default
// (store_default: true), version 0 when there is none at all, with no
// applied_at of the zero instant.
func TestSchemaOfTenantWithoutOne(t *testing.T) { eachStore(t, testSchemaOfTenantWithoutOne) }

func testSchemaOfTenantWithoutOne(t *testing.T, open opener) {
	e := newEnv(t, open)
	res, raw := e.raw("GET", "/v1/schema", "acme-read", "")
	require.Equal(t, 200, res.StatusCode, raw)
	require.JSONEq(t, `{"store_default":true,"version":0}`, raw)

	// The operator's default serves acme.
	_, err := e.store.ApplyDefaultSchema(context.Background(), []byte("attributes:\n  city: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	st, body := e.do("GET", "/v1/schema", "acme-read", "")
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, true, body["store_default"])
	require.Nil(t, body["tenant"])
	require.Equal(t, float64(1), body["version"])
	require.NotEmpty(t, body["applied_at"])
	require.NotEqual(t, "0001-01-01T00:00:00Z", body["applied_at"])

	// Its own schema, once it applies one.
	st, body = e.do("POST", "/v1/schema", "globex-admin", "attributes:\n  nickname: {memory: profile, type: string}\n")
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("GET", "/v1/schema", "globex-admin", "")
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "globex", body["tenant"])
	require.Nil(t, body["store_default"])
	require.NotEmpty(t, body["applied_at"])
}

// TestAnswersOfEveryKind: answers the document had wrong (a candidate of
// a promote attribute, with reason recurrence and its signals; an
// extraction's corroboration, change no_change; recall's search) are
// checked against it (env.do checks every answer).
func TestAnswersOfEveryKind(t *testing.T) { eachStore(t, testAnswersOfEveryKind) }

func testAnswersOfEveryKind(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira still lives in Oslo.": {Updates: []llmtest.Update{{Evidence: "lives in Oslo", Subject: "mira", Attribute: "city", Change: "no_change", Value: llmtest.S("Oslo")}}},
	}))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) { c.Extractor = extract.New(c.Store, model) })
	st, body := e.do("POST", "/v1/schema", "globex-admin",
		"attributes:\n  city: {memory: profile, type: string}\n  export_format: {memory: preference, type: string, promote: {after: 3, within: 30d}}\n")
	require.Equal(t, 200, st, "%v", body)

	st, body = e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"export_format","value":"csv","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`)
	require.Equal(t, 200, st, "%v", body)
	c := body["pending"].(map[string]any)
	require.Equal(t, "recurrence", c["reason"])
	require.Equal(t, float64(1), c["signals"])
	st, body = e.do("GET", "/v1/pending", "globex-admin", "")
	require.Equal(t, 200, st, "%v", body)
	require.Len(t, body["candidates"], 1)

	st, body = e.do("POST", "/v1/facts", "globex-admin", `{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e0"}`)
	require.Equal(t, 200, st, "%v", body)
	st, body = e.do("POST", "/v1/episodes", "globex-admin", `{"episode_id":"e2","content":"Mira still lives in Oslo.","occurred_at":"2026-06-05T09:00:00Z","subjects":["mira"],"extract":"now"}`)
	require.Equal(t, 200, st, "%v", body)
	acc := body["extraction"].(map[string]any)["accepted"].([]any)
	require.Len(t, acc, 1, "%v", body)
	require.Equal(t, "no_change", acc[0].(map[string]any)["change"])
	require.Equal(t, "unchanged", acc[0].(map[string]any)["outcome"])
	st, _ = e.do("GET", "/v1/episodes/e2/extractions", "globex-admin", "")
	require.Equal(t, 200, st)

	st, body = e.do("POST", "/v1/recall", "globex-admin", `{"question":"Where does Mira live?"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "lexical", body["search"])
	st, body = e.do("GET", "/v1/receipts", "globex-admin", "")
	require.Equal(t, 200, st, "%v", body)
}

// TestFieldNamesAreCaseSensitive: encoding/json would fill "subject" from
// "SUBJECT" too, and keep the last of both; the body is read as written.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct{ path, body, field string }{
		{"/v1/facts", `{"SUBJECT":"casey","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, "SUBJECT"},
		{"/v1/facts", `{"subject":"m","Subject":"n","attribute":"x","value":1,"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`, "Subject"},
		{"/v1/episodes", `{"episode_id":"e1","Content":"x"}`, "Content"},
		{"/v1/recall", `{"Question":"where?"}`, "Question"},
	} {
		res, body := e.raw("POST", c.path, "acme-write", c.body)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s %s: %s", c.path, c.body, body)
		var eb server.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &eb), body)
		require.Equal(t, c.field, eb.Error.Field, body)
		require.Contains(t, eb.Error.Message, "case-sensitive", body)
	}
	res, body := e.raw("POST", "/v1/recall", "acme-write", `{"question":"where?","budget":800.5}`)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	require.Contains(t, body, "must be a JSON integer, not the number 800.5")
}
