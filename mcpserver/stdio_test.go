package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
)

const (
	stdioInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	stdioInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func stdioRemember(id int, subject string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"remember","arguments":{"subject":%q,"attribute":"city","value":"Oslo","quote":"I live in Oslo (%d)."}}}`, id, subject, id)
}

// serveStdio runs ServeStdio on lines, a fresh store's tenant acme, to the
// end of its input, and returns every answer, one decoded line each.
func serveStdio(t *testing.T, lines []string) []map[string]any {
	t.Helper()
	st := openStore(t)
	var out bytes.Buffer
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	err := mcpserver.ServeStdio(context.Background(), mcpserver.Config{Store: st, Tenant: "acme", Role: sgam.RoleWrite}, in, &out)
	require.NoError(t, err, "the end of the input is a clean end")
	var answers []map[string]any
	for line := range strings.Lines(out.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "an answer is one line of JSON: %q", line)
		answers = append(answers, m)
	}
	return answers
}

// TestStdioMalformedLines: a line that is not JSON gets a JSON-RPC parse
// error, one that is not a JSON-RPC message (or a batch, or a line over
// the limit) an invalid-request error, with its id when it names one, and
// the session goes on: the valid request after them is answered.
func TestStdioMalformedLines(t *testing.T) {
	answers := serveStdio(t, []string{stdioInitialize, stdioInitialized,
		`garbage`,
		`{"jsonrpc":"2.0","id":5,"method":`,
		`{"foo":1}`,
		`{"jsonrpc":"1.0","id":6,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":42}`,
		`[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`,
		``,
		stdioRemember(9, "mira"),
	})
	type answer struct {
		id   any
		code float64
	}
	var got []answer
	for _, m := range answers {
		require.Contains(t, m, "id", "an answer names its request, or null: %v", m)
		a := answer{id: m["id"]}
		if e, ok := m["error"].(map[string]any); ok {
			a.code = e["code"].(float64)
			require.NotEmpty(t, e["message"])
		} else {
			require.NotNil(t, m["result"], "%v", m)
			if a.id == float64(9) {
				res := m["result"].(map[string]any)
				require.NotEqual(t, true, res["isError"], "%v", res)
				require.Equal(t, "Oslo", res["structuredContent"].(map[string]any)["fact"].(map[string]any)["value"])
			}
		}
		got = append(got, a)
	}
	require.ElementsMatch(t, []answer{{"init", 0}, {nil, -32700}, {nil, -32700}, {nil, -32600}, {float64(6), -32600}, {float64(7), -32600},
		{nil, -32600}, {nil, -32600}, {float64(9), 0}}, got)
}

// TestStdioAnswersEveryRequestAtEOF: requests read just before the input
// ends are all run and answered before ServeStdio returns.
func TestStdioAnswersEveryRequestAtEOF(t *testing.T) {
	const n = 40
	for round := range 3 {
		lines := []string{stdioInitialize, stdioInitialized}
		for i := range n {
			lines = append(lines, stdioRemember(i, fmt.Sprintf("s%d", i)))
		}
		seen := map[float64]bool{}
		for _, m := range serveStdio(t, lines) {
			if id, ok := m["id"].(float64); ok {
				require.NotContains(t, m, "error", "%v", m)
				res := m["result"].(map[string]any)
				require.NotEqual(t, true, res["isError"], "%v", res)
				seen[id] = true
			}
		}
		require.Len(t, seen, n, "round %d: every request answered", round)
	}
}

// TestStdioDuplicateKeys: a line with a key given twice, which the SDK
// would read as its last, is refused with an invalid-request error (id
// null when the id is the key given twice), as every other input path
// refuses such JSON; one given twice inside a tool's arguments is the
// tool's to refuse, naming the argument; and the session goes on.
func TestStdioDuplicateKeys(t *testing.T) {
	answers := serveStdio(t, []string{stdioInitialize, stdioInitialized,
		`{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall","name":"remember","arguments":{"subject":"mira"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"recall","arguments":{"subject":"mira"},"arguments":{"subject":"x"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"recall","arguments":{"subject":"mira","subject":"x"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"a":1,"a":2}}}`,
		stdioRemember(12, "mira"),
	})
	type answer struct {
		id   any
		code float64
		text string
	}
	var got []answer
	for _, m := range answers {
		a := answer{id: m["id"]}
		if e, ok := m["error"].(map[string]any); ok {
			a.code = e["code"].(float64)
			a.text = e["message"].(string)
		} else if res, ok := m["result"].(map[string]any); ok && res["isError"] == true {
			a.text = res["content"].([]any)[0].(map[string]any)["text"].(string)
		}
		got = append(got, a)
	}
	require.ElementsMatch(t, []answer{{"init", 0, ""},
		{nil, -32600, "invalid request: id is given twice; give each key once"},
		{float64(7), -32600, "invalid request: method is given twice; give each key once"},
		{float64(8), -32600, "invalid request: params.name is given twice; give each key once"},
		{float64(9), -32600, "invalid request: params.arguments is given twice; give each key once"},
		{float64(10), 0, "invalid: subject: is given twice; give each field once"},
		{float64(11), -32600, "invalid request: params._meta.a is given twice; give each key once"},
		{float64(12), 0, ""}}, got)
}

// TestStdioMessageLimit: a line over the transport's MaxMessageBytes is
// refused whole, and the next line is read from its start.
func TestStdioMessageLimit(t *testing.T) {
	srv, err := mcpserver.New(mcpserver.Config{Store: openStore(t), Tenant: "acme", Role: sgam.RoleWrite})
	require.NoError(t, err)
	const limit = 300
	long := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", limit) + `"}}}`
	fits := stdioRemember(3, "mira")
	require.Less(t, len(fits), limit)
	var out bytes.Buffer
	in := strings.NewReader(stdioInitialize + "\n" + long + "\r\n" + fits) // the last line without its line ending
	err = srv.Run(context.Background(), &mcpserver.StdioTransport{Reader: in, Writer: &out, MaxMessageBytes: limit})
	if err != nil {
		require.ErrorIs(t, err, io.EOF, "the session ends with the input")
	}
	lines := slices.Collect(strings.Lines(out.String()))
	require.Len(t, lines, 3, out.String())
	require.Contains(t, lines, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the message is longer than 300 bytes"}}`+"\n")
	require.Contains(t, out.String(), `"id":3,"result"`)
}
