package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeysCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	run := func(tenant string, args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", tenant}, args...)...)
	}
	r := run("acme", "keys", "create", "--role", "write", "--name", "agent")
	require.Equal(t, 0, r.code, r.stderr)
	token := strings.TrimSpace(r.stdout)
	require.True(t, strings.HasPrefix(token, "sgam_"))
	require.NotContains(t, r.stderr, token, "the secret is printed once, on stdout")
	id := strings.Split(token, "_")[1]

	r = run("acme", "keys", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, id)
	require.NotContains(t, r.stdout, token)
	require.Contains(t, run("globex", "keys", "list").stdout, "no keys")

	require.Equal(t, 2, run("acme", "keys", "create", "--role", "root").code)
	require.Equal(t, 2, run("acme", "keys", "revoke", "nope").code)
	require.Equal(t, 1, run("globex", "keys", "revoke", id).code, "another tenant's key is not found")
	r = run("acme", "keys", "revoke", id)
	require.Equal(t, 0, r.code, r.stderr)
	r = run("acme", "keys", "list")
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, id) {
			require.False(t, strings.HasSuffix(strings.TrimSpace(line), "-"), "revoked: %s", line)
		}
	}
}
