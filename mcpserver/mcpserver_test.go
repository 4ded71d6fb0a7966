package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
	"github.com/sgam-dev/sgam/store/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// connect returns a client session on a server bound to tenant and role,
// over the SDK's in-memory transport.
func connect(t *testing.T, st sgam.Store, tenant string, role sgam.Role) *mcp.ClientSession {
	ctx := context.Background()
	srv, err := mcpserver.New(mcpserver.Config{Store: st, Tenant: tenant, Role: role})
	require.NoError(t, err)
	ct, st2 := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its structured answer, or the error text
// of a tool error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	if res.IsError {
		require.Len(t, res.Content, 1)
		return nil, res.Content[0].(*mcp.TextContent).Text
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out, ""
}

func facts(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	var fs []map[string]any
	for _, f := range out["facts"].([]any) {
		fs = append(fs, f.(map[string]any))
	}
	return fs
}

func TestPassportStory(t *testing.T) {
	st := openStore(t)
	acme := connect(t, st, "acme", sgam.RoleWrite)

	tools, err := acme.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		require.NotEmpty(t, tl.Description)
		require.NotNil(t, tl.InputSchema)
		require.NotContains(t, string(must(json.Marshal(tl.InputSchema))), "tenant", "no tool takes a tenant")
	}
	require.ElementsMatch(t, []string{"observe", "remember", "forget_value", "recall", "history", "trace"}, names)

	first, msg := call(t, acme, "remember", map[string]any{"subject": "mira", "attribute": "passport_deadline", "value": "2026-07-15",
		"valid_from": "2026-06-01T09:00:00Z", "quote": "Mira: my passport deadline is July 15.", "session": "s1"})
	require.Empty(t, msg)
	e1 := first["episode_id"].(string)
	again, _ := call(t, acme, "remember", map[string]any{"subject": "mira", "attribute": "passport_deadline", "value": "2026-07-15",
		"valid_from": "2026-06-01T09:00:00Z", "quote": "Mira: my passport deadline is July 15.", "session": "s1"})
	require.Equal(t, e1, again["episode_id"], "a retried call reuses its episode")
	require.Equal(t, true, again["no_change"])

	second, msg := call(t, acme, "remember", map[string]any{"subject": "mira", "attribute": "passport_deadline", "value": "2026-06-30",
		"valid_from": "2026-06-03T10:00:00Z", "quote": "Mira: correction, the deadline is June 30.", "session": "s1"})
	require.Empty(t, msg)
	e2 := second["episode_id"].(string)
	require.NotEqual(t, e1, e2)

	now, _ := call(t, acme, "recall", map[string]any{"subject": "mira", "attribute": "passport_deadline"})
	fs := facts(t, now)
	require.Len(t, fs, 1)
	require.Equal(t, "2026-06-30", fs[0]["value"])
	require.Equal(t, []any{e2}, fs[0]["sources"])
	require.Equal(t, "Mira: correction, the deadline is June 30.", fs[0]["quote"])
	require.Equal(t, "current", fs[0]["status"])
	// Subjects as a list, and hops, as the HTTP API takes them.
	listed, msg := call(t, acme, "recall", map[string]any{"subjects": []string{"mira"}, "attribute": "passport_deadline", "hops": -1})
	require.Empty(t, msg)
	require.Equal(t, fs, facts(t, listed))
	require.Equal(t, []any{"mira"}, listed["subjects"])

	// A question finds its subject, attribute and instant by itself; the
	// text content is the rendered block.
	res0, err := acme.CallTool(context.Background(), &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"question": "What was Mira's passport deadline on June 2, 2026?"}})
	require.NoError(t, err)
	require.False(t, res0.IsError)
	text := res0.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, `- mira passport_deadline = "2026-07-15"`)
	asked := res0.StructuredContent.(map[string]any)
	require.Equal(t, "2026-06-02T23:59:59.999999Z", asked["as_of"])
	require.Equal(t, text, asked["rendered"])

	// Asked now, the fact answers and its line quotes its source: evidence
	// "auto" (the default) cites nothing more.
	auto, _ := call(t, acme, "recall", map[string]any{"question": "When is Mira's passport deadline?"})
	require.Empty(t, auto["evidence"])

	// With evidence "always", the first quote is evidence no longer
	// current, and says so, below the correction (issue 26).
	res0, err = acme.CallTool(context.Background(), &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"question": "When is Mira's passport deadline?", "evidence": "always"}})
	require.NoError(t, err)
	text = res0.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, `(superseded: mira.passport_deadline "2026-07-15" replaced 2026-06-03 by `+e2+`)`)
	require.Less(t, strings.Index(text, "- "+e2+" |"), strings.Index(text, "- "+e1+" |"), text)

	then, _ := call(t, acme, "recall", map[string]any{"subject": "mira", "as_of": "2026-06-02"})
	require.Equal(t, "2026-06-02T00:00:00Z", then["as_of"])
	fs = facts(t, then)
	require.Len(t, fs, 1)
	require.Equal(t, "2026-07-15", fs[0]["value"])
	require.Equal(t, "2026-06-03T10:00:00Z", fs[0]["valid_to"])
	require.Equal(t, []any{e1}, fs[0]["sources"])

	hist, _ := call(t, acme, "history", map[string]any{"subject": "mira", "attribute": "passport_deadline"})
	require.Len(t, facts(t, hist), 3, "the first row, retracted; its closed re-insert; the correction")

	current := int64(facts(t, now)[0]["fact_id"].(float64))
	tr, msg := call(t, acme, "trace", map[string]any{"fact_id": current})
	require.Empty(t, msg)
	require.GreaterOrEqual(t, len(tr["chain"].([]any)), 2)
	var quotes []string
	for _, e := range tr["episodes"].([]any) {
		quotes = append(quotes, e.(map[string]any)["quote"].(string))
	}
	require.Contains(t, quotes, "Mira: correction, the deadline is June 30.")

	res, err := acme.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "sgam://subjects/mira"})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	require.Contains(t, res.Contents[0].Text, `"value":"2026-06-30"`)

	_, msg = call(t, acme, "forget_value", map[string]any{"subject": "mira", "attribute": "passport_deadline",
		"at": "2026-07-01T00:00:00Z", "quote": "Mira: I renewed it, no deadline now."})
	require.Empty(t, msg)
	later, _ := call(t, acme, "recall", map[string]any{"subject": "mira", "attribute": "passport_deadline", "as_of": "2026-07-02"})
	require.Empty(t, facts(t, later))
	still, _ := call(t, acme, "recall", map[string]any{"subject": "mira", "attribute": "passport_deadline", "as_of": "2026-06-20"})
	require.Equal(t, "2026-06-30", facts(t, still)[0]["value"], "a retraction is not an erasure")

	violations, err := st.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, violations)

	// A second tenant's server sees nothing of acme's, whatever it names.
	globex := connect(t, st, "globex", sgam.RoleWrite)
	other, msg := call(t, globex, "recall", map[string]any{"subject": "mira"})
	require.Empty(t, msg)
	require.Empty(t, facts(t, other))
	other, msg = call(t, globex, "recall", map[string]any{"subjects": []string{"mira"}, "hops": 3})
	require.Empty(t, msg)
	require.Empty(t, facts(t, other))
	require.Empty(t, other["related"])
	other, msg = call(t, globex, "recall", map[string]any{"question": "When is Mira's passport deadline?", "evidence": "always", "evidence_limit": 50})
	require.Empty(t, msg)
	require.Empty(t, facts(t, other))
	require.Empty(t, other["evidence"], "acme's episodes are not globex's evidence")
	other, _ = call(t, globex, "history", map[string]any{"subject": "mira", "attribute": "passport_deadline"})
	require.Empty(t, facts(t, other))
	_, msg = call(t, globex, "trace", map[string]any{"fact_id": current})
	require.True(t, strings.HasPrefix(msg, "not_found:"), msg)
	res, err = globex.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "sgam://subjects/mira"})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, `"facts":[]`)
	_, msg = call(t, globex, "recall", map[string]any{"subject": "mira", "tenant": "acme"})
	require.Contains(t, msg, "tenant", "a tenant argument is refused, not obeyed")
}

func TestReadRoleOffersNoWrites(t *testing.T) {
	st := openStore(t)
	cs := connect(t, st, "acme", sgam.RoleRead)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tl := range tools.Tools {
		require.Contains(t, []string{"recall", "history", "trace"}, tl.Name)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remember",
		Arguments: map[string]any{"subject": "mira", "attribute": "a", "value": 1, "quote": "q"}})
	if err == nil {
		require.True(t, res.IsError)
	}
	n, err := st.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, n)
}

func TestBadInputNamesTheField(t *testing.T) {
	st := openStore(t)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	ok := map[string]any{"subject": "mira", "attribute": "a", "value": 1, "quote": "Mira said so."}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k2, v2 := range ok {
			m[k2] = v2
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"remember", with("valid_from", "2026-06-01 09:00"), "invalid: valid_from:"},
		{"remember", with("valid_from", "2026-06-01T09:00:00"), "no UTC offset"},
		{"remember", with("quote", "   "), "invalid: quote: is required"},
		{"remember", with("quote", nil), "quote"},
		{"remember", with("subject", ""), "invalid: subject:"},
		{"remember", with("attribute", strings.Repeat("a", 1000)), "invalid: attribute:"},
		{"remember", with("value", strings.Repeat("x", 70<<10)), "invalid: value:"},
		{"remember", with("subject", 7), "subject"},
		{"recall", map[string]any{"subject": "mira", "known_at": "soon"}, "invalid: known_at:"},
		{"recall", map[string]any{"question": "x", "as_of": "0001-01-01"}, "invalid: as_of: 0001-01-01T00:00:00Z is the zero instant"},
		{"recall", map[string]any{"question": "x", "subject": " mira"}, "invalid: subject:"},
		{"recall", map[string]any{"question": "x", "attribute": "a b"}, "invalid: attribute:"},
		{"recall", map[string]any{"question": "x", "subject": "mira", "subjects": []string{"mira"}}, "invalid: subjects: give subject or subjects, not both"},
		{"recall", map[string]any{"question": "x", "subjects": []string{"mira", " bad"}}, "invalid: subjects[1]:"},
		{"recall", map[string]any{"question": "x", "hops": 7}, "invalid: hops: must be between 1 and 3"},
		{"trace", map[string]any{"fact_id": 99}, "not_found:"},
		{"trace", map[string]any{"fact_id": "one"}, "fact_id"},
	} {
		_, msg := call(t, cs, c.tool, c.args)
		require.Contains(t, msg, c.want, "%s %v", c.tool, c.args)
	}
	n, err := st.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, n, "a refused call writes nothing, not even its episode")
	violations, err := st.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, violations)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSetsAndSchema: under a schema, remember adds a set's members,
// forget_value with a value removes one, recall lists the members, and a
// value the schema refuses names the field and the rule.
func TestSetsAndSchema(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	_, err := st.ApplyDefaultSchema(ctx, []byte(`
attributes:
  allergies: {memory: profile, type: string, cardinality: many}
  weight: {memory: profile, type: number}
`), false)
	require.NoError(t, err)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	for _, a := range []string{"peanuts", "shellfish"} {
		_, msg := call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "allergies", "value": a,
			"valid_from": "2026-06-01", "quote": "Mira: I am allergic to " + a + "."})
		require.Empty(t, msg)
	}
	_, msg := call(t, cs, "forget_value", map[string]any{"subject": "mira", "attribute": "allergies", "value": "peanuts",
		"at": "2026-06-10", "quote": "Mira: the peanut allergy is gone."})
	require.Empty(t, msg)
	now, _ := call(t, cs, "recall", map[string]any{"subject": "mira", "attribute": "allergies"})
	require.Len(t, facts(t, now), 1)
	require.Equal(t, "shellfish", facts(t, now)[0]["value"])
	then, _ := call(t, cs, "recall", map[string]any{"subject": "mira", "attribute": "allergies", "as_of": "2026-06-05"})
	require.Len(t, facts(t, then), 2)

	_, msg = call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "weight", "value": "heavy",
		"quote": "Mira: heavy."})
	require.True(t, strings.HasPrefix(msg, "invalid: value:"), msg)
	require.Contains(t, msg, "rule type")
}

// TestHeldWriteAnswersFactNull: a write of a sensitive attribute from a
// source that is not user_confirmed is held pending, and remember answers
// "fact": null beside the candidate (the output schema allows it), not a
// zero-value fact nor a missing field.
func TestHeldWriteAnswersFactNull(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	_, err := st.ApplyDefaultSchema(ctx, []byte("attributes:\n  diagnosis: {memory: profile, type: string, sensitive: true}\n  city: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remember", Arguments: map[string]any{"subject": "mira", "attribute": "diagnosis",
		"value": "asthma", "valid_from": "2026-06-01", "quote": "Mira: I have asthma."}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"fact":null`)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	pending, ok := out["pending"].(map[string]any)
	require.True(t, ok, "a candidate: %s", raw)
	require.Equal(t, "asthma", pending["value"])
	require.Equal(t, "sensitive", pending["reason"])
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"fact":null`, "the text says the same")

	// A value the store keeps still answers its fact.
	out, msg := call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "city", "value": "Oslo", "quote": "Mira: I live in Oslo."})
	require.Empty(t, msg)
	require.Equal(t, "Oslo", out["fact"].(map[string]any)["value"])
}

// TestArgumentsReadAsWritten: arguments the SDK would read other than as
// written (a key given twice, in the arguments or inside a value; a lone
// surrogate) are refused naming the argument, and write nothing.
func TestArgumentsReadAsWritten(t *testing.T) {
	st := openStore(t)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	for _, c := range []struct{ args, want string }{
		{`{"subject":"mira","attribute":"a","attribute":"b","value":1,"quote":"q"}`, "invalid: attribute: is given twice"},
		{`{"subject":"mira","attribute":"a","value":{"x":1,"x":2},"quote":"q"}`, `invalid: value: holds the key "x" twice`},
		{`{"subject":"mira\ud800","attribute":"a","value":1,"quote":"q"}`, "invalid: subject:"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remember", Arguments: json.RawMessage(c.args)})
		require.NoError(t, err)
		require.True(t, res.IsError, c.args)
		require.Contains(t, res.Content[0].(*mcp.TextContent).Text, c.want, c.args)
	}
	n, err := st.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, n)
}

// TestNumbersAsWritten: a number is stored, and shown in answers, with the
// digits the client wrote, not as the float64 the SDK decodes arguments
// into.
func TestNumbersAsWritten(t *testing.T) {
	st := openStore(t)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remember",
		Arguments: json.RawMessage(`{"subject":"acct-42","attribute":"balance","value":{"cents":12345678901234567890,"rate":1.50},"quote":"q"}`)})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	exact := func(res *mcp.CallToolResult) {
		t.Helper()
		require.Contains(t, res.Content[0].(*mcp.TextContent).Text, `12345678901234567890`)
	}
	exact(res)
	for _, c := range []struct {
		tool string
		args any
	}{
		{"history", map[string]any{"subject": "acct-42", "attribute": "balance"}},
		{"trace", map[string]any{"fact_id": 1}},
		{"recall", map[string]any{"question": "balance?", "subject": "acct-42"}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %v", c.tool, res.Content)
		exact(res)
	}
	key := sgam.Key{Tenant: "acme", Subject: "acct-42", Attribute: "balance"}
	f, err := st.Get(ctx, key, sgam.At{})
	require.NoError(t, err)
	require.Equal(t, `{"cents":12345678901234567890,"rate":1.50}`, string(f.Value))

	// The Go SDK's client decodes structured content into float64s: read
	// what the server sent, over HTTP.
	var factID int64
	for _, c := range []struct{ tool, args string }{
		{"remember", `{"subject":"mira","attribute":"big","value":12345678901234567890,"quote":"bignum"}`},
		{"history", `{"subject":"mira","attribute":"big"}`},
		{"trace", `{"fact_id":%d}`},
		{"recall", `{"subject":"mira"}`},
		{"recall", `{"subject":"acct-42","attribute":"balance"}`},
	} {
		if c.tool == "trace" {
			c.args = fmt.Sprintf(c.args, factID)
		}
		res := wireCall(t, st, "acme", sgam.RoleWrite, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, c.tool, c.args))
		var r struct {
			IsError           bool              `json:"isError"`
			StructuredContent json.RawMessage   `json:"structuredContent"`
			Content           []json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal(res, &r))
		require.False(t, r.IsError, "%s: %s", c.tool, res)
		require.Contains(t, string(r.StructuredContent), `:12345678901234567890`, "%s: %s", c.tool, res)
		require.NotContains(t, string(r.StructuredContent), `12345678901234567000`, "%s: %s", c.tool, res)
		if c.tool != "recall" { // recall's text is the rendered block
			var text struct{ Text string }
			require.NoError(t, json.Unmarshal(r.Content[0], &text))
			require.JSONEq(t, string(r.StructuredContent), text.Text, "the text is the structured content")
		}
		if c.tool == "remember" {
			var out struct {
				Fact struct {
					FactID int64 `json:"fact_id"`
				}
			}
			require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
			factID = out.Fact.FactID
		}
		if c.args == `{"subject":"acct-42","attribute":"balance"}` {
			require.Contains(t, string(r.StructuredContent), `"rate":1.50`)
		}
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sgam://subjects/mira"})
	require.NoError(t, err)
	require.Contains(t, rr.Contents[0].Text, `"value":12345678901234567890`)
	_, msg := call(t, cs, "remember", map[string]any{"subject": "acct-42", "attribute": "balance", "value": nil, "quote": "q"})
	require.Contains(t, msg, "invalid: value: null is not a value")
}

func TestObserve(t *testing.T) {
	st := openStore(t)
	acme := connect(t, st, "acme", sgam.RoleWrite)
	out, msg := call(t, acme, "observe", map[string]any{"text": "Mira: I moved to Oslo.", "session": "s1", "subjects": []string{"mira"}})
	require.Empty(t, msg)
	require.Equal(t, true, out["queued"])
	id := out["episode_id"].(string)
	again, _ := call(t, acme, "observe", map[string]any{"text": "Mira: I moved to Oslo.", "session": "s1", "subjects": []string{"mira"}})
	require.Equal(t, id, again["episode_id"], "a retried call is the same episode")
	ctx := context.Background()
	e, err := st.Episode(ctx, "acme", id)
	require.NoError(t, err)
	require.Equal(t, []string{"mira"}, e.Subjects)
	q, err := st.QueuedExtractions(ctx, 10, false)
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, "acme", q[0].Tenant)
	_, msg = call(t, acme, "observe", map[string]any{"text": " "})
	require.Contains(t, msg, "text")
	_, msg = call(t, acme, "observe", map[string]any{"text": "x", "subjects": []string{""}})
	require.Contains(t, msg, "subjects[0]")
	globex := connect(t, st, "globex", sgam.RoleWrite)
	none, err := st.Episodes(ctx, sgam.EpisodeQuery{Tenant: "globex"})
	require.NoError(t, err)
	require.Empty(t, none)
	_ = globex
}

// wireCall sends one JSON-RPC request to the streamable HTTP handler of a
// server bound to tenant and role, and returns its result as sent.
func wireCall(t *testing.T, st mcpserver.Store, tenant string, role sgam.Role, method, params string) json.RawMessage {
	t.Helper()
	h := mcpserver.HTTPHandler(func(*http.Request) (mcpserver.Config, error) {
		return mcpserver.Config{Store: st, Tenant: tenant, Role: role}, nil
	}, 8<<20)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &msg), "%s", b)
	require.Empty(t, msg.Error)
	return msg.Result
}

// TestNumberArgumentsNameTheArgument: a number argument the SDK would read
// other than as written (through a float64) is refused as a tool error
// naming the argument, in the form of every other refusal.
func TestNumberArgumentsNameTheArgument(t *testing.T) {
	st := openStore(t)
	cs := connect(t, st, "acme", sgam.RoleWrite)
	for _, c := range []struct{ tool, args, want string }{
		{"trace", `{"fact_id":9223372036854775807}`, "invalid: fact_id: 9223372036854775807 is out of range: fact ids go from 1 to 9007199254740991"},
		{"trace", `{"fact_id":9007199254740993}`, "invalid: fact_id: 9007199254740993 is out of range"},
		{"trace", `{"fact_id":1e30}`, "invalid: fact_id: 1e30 is out of range"},
		{"trace", `{"fact_id":1e400}`, "invalid: fact_id: 1e400 is out of range"},
		{"trace", `{"fact_id":-1}`, "invalid: fact_id: -1 is out of range"},
		{"trace", `{"fact_id":1.5}`, "invalid: fact_id: must be a whole number, not 1.5"},
		{"trace", `{"fact_id":4.0000000000000001}`, "invalid: fact_id: must be a whole number"},
		{"trace", `{"fact_id":1e2}`, "not_found: fact_id: tenant acme has no fact 100"},
		{"trace", `{"fact_id":"one"}`, "fact_id"},
		{"recall", `{"subject":"mira","budget":99999999999999999999}`, "invalid: budget: 99999999999999999999 is out of range: the budget is 64 to 100000 tokens"},
		{"recall", `{"subject":"mira","budget":1000000}`, "invalid: budget: must be between 64 and 100000 tokens, not 1000000"},
		{"recall", `{"subject":"mira","evidence_limit":1e30}`, "invalid: evidence_limit: 1e30 is out of range: the limit is 1 to 100, or -1 for none"},
		{"remember", `{"subject":"mira","attribute":"a","value":1e400,"quote":"q"}`, "invalid: value: holds the number 1e400, beyond the range of a 64-bit float"},
		{"remember", `{"subject":"mira","attribute":"a","value":{"x":[-1e400]},"quote":"q"}`, "invalid: value: at /x/0: holds the number -1e400"},
		{"forget_value", `{"subject":"mira","attribute":"a","value":1e400,"quote":"q"}`, "invalid: value: holds the number 1e400"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
		require.NoError(t, err, c.args)
		require.True(t, res.IsError, c.args)
		msg := res.Content[0].(*mcp.TextContent).Text
		require.True(t, strings.HasPrefix(msg, c.want) || c.want == "fact_id" && strings.Contains(msg, c.want), "%s %s: %s", c.tool, c.args, msg)
		require.NotContains(t, msg, "unmarshal", "%s %s: %s", c.tool, c.args, msg)
	}
	n, err := st.Episodes(context.Background(), sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, n)
}

// TestRefusedCallWritesNothing: a write the ledger refuses (a conflict, a
// value the schema refuses) stores no episode either; only under an
// attribute whose schema weighs the source's kind is the quote captured
// first (docs/mcp.md).
func TestRefusedCallWritesNothing(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	cs := connect(t, st, "acme", sgam.RoleWrite)
	quotes := func(tenant string) []string {
		t.Helper()
		eps, err := st.Episodes(ctx, sgam.EpisodeQuery{Tenant: tenant})
		require.NoError(t, err)
		var out []string
		for _, e := range eps {
			out = append(out, e.Content)
		}
		return out
	}
	first, msg := call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "big", "value": 1,
		"valid_from": "9999-12-31T23:59:59Z", "quote": "first quote"})
	require.Empty(t, msg)
	_, msg = call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "big", "value": 2,
		"valid_from": "9999-12-31T23:59:59Z", "quote": "conflicting quote ZZZ"})
	require.True(t, strings.HasPrefix(msg, "conflict:"), msg)
	_, msg = call(t, cs, "forget_value", map[string]any{"subject": "mira", "attribute": "big",
		"at": "9999-12-31T23:59:59Z", "quote": "conflicting quote YYY"})
	require.True(t, strings.HasPrefix(msg, "conflict:"), msg)
	require.Equal(t, []string{"first quote"}, quotes("acme"))

	// The written fact's source is the episode, filled in with its quote
	// and the configured kind; a retry answers the same.
	e, err := st.Episode(ctx, "acme", first["episode_id"].(string))
	require.NoError(t, err)
	require.Equal(t, sgam.KindMessage, e.Kind)
	require.Equal(t, "first quote", e.Content)
	fact := first["fact"].(map[string]any)
	require.Equal(t, "first quote", fact["sources"].([]any)[0].(map[string]any)["quote"])
	again, msg := call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "big", "value": 1,
		"valid_from": "9999-12-31T23:59:59Z", "quote": "first quote"})
	require.Empty(t, msg)
	require.Equal(t, first["episode_id"], again["episode_id"])
	require.Equal(t, true, again["no_change"])

	// Under a schema: a value the schema refuses, an undeclared attribute.
	_, err = st.ApplySchema(ctx, "globex", []byte(`
attributes:
  weight: {memory: profile, type: number}
  diagnosis: {memory: profile, type: string, sensitive: true}
`), false)
	require.NoError(t, err)
	globex := connect(t, st, "globex", sgam.RoleWrite)
	_, msg = call(t, globex, "remember", map[string]any{"subject": "mira", "attribute": "weight", "value": "heavy", "quote": "Mira: heavy."})
	require.True(t, strings.HasPrefix(msg, "invalid: value:"), msg)
	_, msg = call(t, globex, "remember", map[string]any{"subject": "mira", "attribute": "nope", "value": 1, "quote": "Mira: nope."})
	require.True(t, strings.HasPrefix(msg, "invalid: attribute:"), msg)
	_, msg = call(t, globex, "forget_value", map[string]any{"subject": "mira", "attribute": "weight", "value": 1, "quote": "Mira: not a set."})
	require.True(t, strings.HasPrefix(msg, "invalid: value:"), msg)
	require.Empty(t, quotes("globex"))
	// A sensitive attribute's source is captured first: its kind decides.
	_, msg = call(t, globex, "remember", map[string]any{"subject": "mira", "attribute": "diagnosis", "value": 7, "quote": "Mira: seven."})
	require.True(t, strings.HasPrefix(msg, "invalid: value:"), msg)
	require.Equal(t, []string{"Mira: seven."}, quotes("globex"))

	violations, err := st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, violations)
}

// wrapErrors is a store whose writes wrap their errors, as the PostgreSQL
// store does ("write: ...").
type wrapErrors struct{ *sqlite.Store }

func (s wrapErrors) Assert(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	res, err := s.Store.Assert(ctx, a)
	if err != nil {
		err = fmt.Errorf("write: %w", err)
	}
	return res, err
}

// TestErrorsNameTheArgument: a refusal names the tool's argument, not the
// store's field (an episode's content is remember's quote, observe's
// text), and nothing a store wrapped the error in.
func TestErrorsNameTheArgument(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	_, err := st.ApplySchema(ctx, "acme", []byte("attributes:\n  city: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	srv, err := mcpserver.New(mcpserver.Config{Store: wrapErrors{st}, Tenant: "acme", Role: sgam.RoleWrite})
	require.NoError(t, err)
	ct, st2 := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st2, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()

	big := strings.Repeat("x", 3_000_000)
	_, msg := call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "city", "value": "Oslo", "quote": big})
	require.Equal(t, "invalid: quote: is 3000000 bytes; the limit is 1048576", msg)
	_, msg = call(t, cs, "forget_value", map[string]any{"subject": "mira", "attribute": "city", "quote": big})
	require.Equal(t, "invalid: quote: is 3000000 bytes; the limit is 1048576", msg)
	_, msg = call(t, cs, "observe", map[string]any{"text": big})
	require.Equal(t, "invalid: text: is 3000000 bytes; the limit is 1048576", msg)
	_, msg = call(t, cs, "remember", map[string]any{"subject": "mira", "attribute": "nope", "value": "x", "quote": "Mira: nope."})
	require.True(t, strings.HasPrefix(msg, `invalid: attribute: "nope" is not declared`), msg)
	n, err := st.Episodes(ctx, sgam.EpisodeQuery{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, n)
}
