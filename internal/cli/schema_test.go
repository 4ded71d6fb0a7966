package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestSchemaCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	file := filepath.Join(dir, "schema.yaml")
	run := func(args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", "acme"}, args...)...)
	}

	r := run("schema", "init", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 2, run("schema", "init", file).code, "init does not overwrite")
	r = run("schema", "check", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "ok")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("attributes:\n  a:\n    memory: task\n    type: strin\n  b:\n    memory: task\n    type: string\n    cardinalty: many\n"), 0o644))
	r = run("schema", "check", bad)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "bad.yaml:4:")
	require.Contains(t, r.stderr, "bad.yaml:8:")

	r = run("schema", "apply", file, "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "dry run: would store schema version 1")
	r = run("schema", "show")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no schema")
	r = run("schema", "apply", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "stored schema version 1")
	r = run("schema", "apply", file)
	require.Contains(t, r.stdout, "unchanged")
	r = run("--json", "schema", "show")
	require.Equal(t, 0, r.code, r.stderr)
	var v sgam.SchemaVersion
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Equal(t, 1, v.Version)

	// Validation through the CLI names the argument and the rule.
	r = run("assert", "mira", "passport_deadline", `"June 30"`, "--source", "e1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "VALUE")
	r = run("assert", "mira", "shoe_size", `42`, "--source", "e1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "ATTRIBUTE")

	// Sets.
	r = run("add", "mira", "allergies", `"peanuts"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "held pending", "allergies are sensitive in the example")
	var id string
	for _, f := range strings.Fields(r.stdout) {
		if strings.HasPrefix(f, "pd_") {
			id = f
			break
		}
	}
	require.NotEmpty(t, id)
	r = run("pending", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, id)
	require.Contains(t, sgamRun(t, "", "--db", db, "--tenant", "globex", "pending", "list").stdout, "no pending")
	r = run("episode", "add", "--id", "ok1", "--kind", "user_confirmed", "--content", "yes, peanuts")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("pending", "confirm", id, "--episode", "ok1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("add", "mira", "allergies", `"shellfish"`, "--valid-from", "2026-02-01T00:00:00Z", "--source", "ok1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("--json", "get", "mira", "allergies")
	require.Equal(t, 0, r.code, r.stderr)
	var members []sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &members))
	require.Len(t, members, 2)
	r = run("get", "mira", "allergies", "--as-of", "2026-01-15T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "peanuts")
	require.NotContains(t, r.stdout, "shellfish")
	r = run("remove", "mira", "allergies", `"peanuts"`, "--at", "2026-03-01T00:00:00Z", "--source", "ok1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("add", "mira", "passport_deadline", `"2026-06-30"`, "--source", "ok1")
	require.Equal(t, 2, r.code, "not a set")

	// Relations.
	r = run("assert", "mira", "account", `"acct-42"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "ok1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("assert", "acct-42", "account", `"mira"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "ok1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("traverse", "mira", "account", "account")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "mira -account-> acct-42")
	require.Contains(t, r.stdout, "cycle")
	r = sgamRun(t, "", "--db", db, "--tenant", "globex", "traverse", "mira", "account")
	require.Contains(t, r.stdout, "no relations")

	// Migrate with nothing declared.
	r = run("migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no migrations")
	require.Equal(t, 2, run("migrate", "--batch", "0").code)
	r = run("check")
	require.Equal(t, 0, r.code, r.stderr)
}
