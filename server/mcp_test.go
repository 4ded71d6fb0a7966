package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// mcpConnect connects the Go SDK's streamable HTTP client to /mcp with the
// key named key, or with the literal token after "raw:" ("raw:" for none).
func (e *env) mcpConnect(key string) (*mcp.ClientSession, error) {
	token, raw := strings.CutPrefix(key, "raw:")
	if !raw {
		token = e.keys[key]
	}
	transport := &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "server-test", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err == nil {
		e.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func (e *env) mcpCall(cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, string) {
	e.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(e.t, err)
	if res.IsError {
		return nil, res.Content[0].(*mcp.TextContent).Text
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(e.t, err)
	var out map[string]any
	require.NoError(e.t, json.Unmarshal(b, &out))
	return out, ""
}

func TestMCPOverHTTP(t *testing.T) { eachStore(t, testMCPOverHTTP) }

func testMCPOverHTTP(t *testing.T, open opener) {
	e := newEnv(t, open)
	for _, key := range []string{"raw:", "raw:sgam_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "acme-revoked"} {
		_, err := e.mcpConnect(key)
		require.Error(t, err, key)
		require.Contains(t, err.Error(), "Unauthorized", key)
	}

	acme, err := e.mcpConnect("acme-write")
	require.NoError(t, err)
	tools, err := acme.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 6) // observe, remember, forget_value, recall, history, trace

	first, msg := e.mcpCall(acme, "remember", map[string]any{"subject": "mira", "attribute": "passport_deadline", "value": "2026-07-15",
		"valid_from": "2026-06-01T09:00:00Z", "quote": "Mira: my passport deadline is July 15."})
	require.Empty(t, msg)
	_, msg = e.mcpCall(acme, "remember", map[string]any{"subject": "mira", "attribute": "passport_deadline", "value": "2026-06-30",
		"valid_from": "2026-06-03T10:00:00Z", "quote": "Mira: it is June 30 after all."})
	require.Empty(t, msg)

	// A read key of the same tenant sees the facts but is offered no writes.
	reader, err := e.mcpConnect("acme-read")
	require.NoError(t, err)
	tools, err = reader.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tl := range tools.Tools {
		require.NotContains(t, []string{"remember", "forget_value"}, tl.Name)
	}
	then, msg := e.mcpCall(reader, "recall", map[string]any{"subject": "mira", "as_of": "2026-06-02"})
	require.Empty(t, msg)
	f := then["facts"].([]any)[0].(map[string]any)
	require.Equal(t, "2026-07-15", f["value"])
	require.Equal(t, first["episode_id"], f["sources"].([]any)[0])
	now, _ := e.mcpCall(reader, "recall", map[string]any{"subject": "mira", "attribute": "passport_deadline"})
	current := now["facts"].([]any)[0].(map[string]any)
	require.Equal(t, "2026-06-30", current["value"])
	res, err := reader.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "sgam://subjects/mira"})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, `"value":"2026-06-30"`)

	// Another tenant's key finds nothing of acme's, by subject or by fact id.
	globex, err := e.mcpConnect("globex-admin")
	require.NoError(t, err)
	other, msg := e.mcpCall(globex, "recall", map[string]any{"subject": "mira"})
	require.Empty(t, msg)
	require.Empty(t, other["facts"])
	other, msg = e.mcpCall(globex, "recall", map[string]any{"question": "When is Mira's passport deadline?", "evidence_limit": 50})
	require.Empty(t, msg)
	require.Empty(t, other["facts"])
	require.Empty(t, other["evidence"])
	_, msg = e.mcpCall(globex, "trace", map[string]any{"fact_id": current["fact_id"]})
	require.True(t, strings.HasPrefix(msg, "not_found:"), msg)
	res, err = globex.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "sgam://subjects/mira"})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, `"facts":[]`)

	// /mcp is a route like the others: counted by route, keys kept out of the logs.
	require.Contains(t, e.text("/metrics"), `sgam_http_requests_total{route="POST /mcp",status="200"}`)
	e.requireNoKeysInLogs()
	v, err := e.store.Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, v)
}
