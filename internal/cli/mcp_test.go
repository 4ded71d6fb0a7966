package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMCPTypeScriptSDK drives `sgam mcp` over stdio with a client no one
// here wrote: the official MCP TypeScript SDK, pinned in
// testdata/mcp-e2e/package-lock.json and installed with npm ci. The test
// script (testdata/mcp-e2e/passport.test.mjs) lists the tools, remembers the
// passport story, recalls it now and as of 2026-06-02, and checks values
// and sources, and that a second tenant's server finds nothing.
func TestMCPTypeScriptSDK(t *testing.T) {
	npm, errNpm := exec.LookPath("npm")
	node, errNode := exec.LookPath("node")
	if errNpm != nil || errNode != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP end-to-end test needs node and npm: %v %v", errNpm, errNode)
		}
		t.Skip("SKIPPED: no node or npm, so the MCP TypeScript SDK test cannot run (it fails under CI=true)")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "mcp-e2e"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error")
	install.Dir = dir
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm ci: %s", out)

	// The test binary is sgam when SGAM_CLI_CHILD is set (TestMain); the SDK
	// passes a child only a few safe variables, so a script sets it.
	bin := filepath.Join(t.TempDir(), "sgam")
	script := "#!/bin/sh\nSGAM_CLI_CHILD=1 exec '" + os.Args[0] + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))

	run := exec.CommandContext(ctx, node, "--test", "passport.test.mjs")
	run.Dir = dir
	run.Env = append(os.Environ(), "SGAM_BIN="+bin)
	out, err = run.CombinedOutput()
	require.NoError(t, err, "node --test:\n%s", out)
	require.Contains(t, string(out), "# pass 1")
	require.Contains(t, string(out), "# fail 0")
}

// mcpChild starts 'sgam mcp' on a fresh database in a child process (the
// test binary, as TestMain allows), returning its standard input and a
// channel of its answers, one decoded line each, closed when it exits.
func mcpChild(t *testing.T) (stdin io.WriteCloser, answers <-chan map[string]any, wait func() int) {
	t.Helper()
	child := exec.Command(os.Args[0], "--db", filepath.Join(t.TempDir(), "m.db"), "--tenant", "acme", "mcp")
	child.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	in, err := child.StdinPipe()
	require.NoError(t, err)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	child.Stderr = &stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() { child.Process.Kill() })
	ch := make(chan map[string]any, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not_json": sc.Text()}
			}
			ch <- m
		}
	}()
	return in, ch, func() int {
		<-done
		err := child.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Logf("sgam mcp: %v; stderr:\n%s", err, stderr.String())
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	}
}

const (
	mcpInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	mcpInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func mcpRemember(id int, subject string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"remember","arguments":{"subject":%q,"attribute":"city","value":"Oslo","quote":"I live in Oslo (%d)."}}}`, id, subject, id)
}

// TestMCPStdio: 'sgam mcp' serves mcpserver.ServeStdio on its standard
// input and output (the transport's own tests are mcpserver's): a
// malformed line and one over 4 MiB are answered with JSON-RPC errors and
// the session goes on, the requests written just before standard input
// closes are all answered, and then it exits 0.
func TestMCPStdio(t *testing.T) {
	const n = 20
	in, answers, wait := mcpChild(t)
	var script strings.Builder
	script.WriteString(mcpInitialize + "\n" + mcpInitialized + "\n")
	script.WriteString("garbage\n")
	script.WriteString(`{"jsonrpc":"2.0","id":"long","method":"tools/list","params":{"pad":"` + strings.Repeat("x", 4<<20) + `"}}` + "\n")
	for i := range n {
		script.WriteString(mcpRemember(i, fmt.Sprintf("s%d", i)) + "\n")
	}
	_, err := io.WriteString(in, script.String())
	require.NoError(t, err)
	require.NoError(t, in.Close())
	seen := map[float64]bool{}
	var refused []any
	for m := range answers {
		require.NotContains(t, m, "not_json")
		if e, ok := m["error"].(map[string]any); ok {
			require.Nil(t, m["id"], "%v", m)
			refused = append(refused, e["code"])
			continue
		}
		res := m["result"].(map[string]any)
		if id, ok := m["id"].(float64); ok {
			require.NotEqual(t, true, res["isError"], "%v", res)
			require.Equal(t, "Oslo", res["structuredContent"].(map[string]any)["fact"].(map[string]any)["value"])
			seen[id] = true
		}
	}
	require.Equal(t, 0, wait())
	require.ElementsMatch(t, []any{float64(-32700), float64(-32600)}, refused)
	require.Len(t, seen, n, "every request answered")
}

// TestMCPHelpNamesEveryTool: 'sgam mcp --help' names every tool the server
// offers, and the --role flag the tools of each role.
func TestMCPHelpNamesEveryTool(t *testing.T) {
	r := sgamRun(t, "", "mcp", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	out := strings.Join(strings.Fields(r.stdout), " ")
	tools, role, _ := strings.Cut(out, "--role read")
	for _, tool := range []string{"observe", "remember", "forget_value", "recall", "history", "trace"} {
		require.Contains(t, tools, tool, "the Tools paragraph names %s", tool)
	}
	require.Contains(t, role, "write adds observe, remember and forget_value")
	require.Contains(t, role, "--role string read (recall, history, trace) or write (also observe, remember, forget_value)")
}
