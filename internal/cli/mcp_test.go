package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
