package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/cli"
)

// TestForgetCommand: 'sgam forget --subject' then 'sgam compact' leave no
// byte of the subject, its values or its only episode in the database
// files; the receipt is printed and listed, and bad flags exit 2.
func TestForgetCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	run := func(args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", "acme"}, args...)...)
	}
	const (
		subject = "subject-zx81q"
		value   = "value-marker-w7e2r"
		content = "content-marker-j3k5u"
		kept    = "kept-marker-n9v4y"
	)
	r := run("receipts")
	require.Equal(t, cli.ExitFailure, r.code, "no database yet: %s", r.stdout)
	for _, args := range [][]string{
		{"episode", "add", "--id", "e1", "--content", "the user said " + content},
		{"episode", "add", "--id", "e2", "--content", "the user said " + kept},
		{"assert", subject, "note", `"` + value + `"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1"},
		{"assert", subject, "note", `"` + value + ` again"`, "--valid-from", "2026-02-01T00:00:00Z", "--source", "e1"},
		{"assert", "other", "note", `"` + kept + `"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e2"},
	} {
		r := run(args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	}
	r = sgamRun(t, "", "--db", db, "--tenant", "globex", "assert", subject, "note", `"globex keeps it"`, "--source", "g1")
	require.Equal(t, 0, r.code, r.stderr)

	for _, c := range []struct {
		args  []string
		names string
	}{
		{[]string{"forget"}, "--subject"},
		{[]string{"forget", "--subject", subject, "--episode", "e1"}, "--episode"},
		{[]string{"forget", "--all"}, "--yes"},
		{[]string{"forget", "--episode", "e 1"}, "--episode"},
		{[]string{"forget", "--subject", subject, "--actor", "two words"}, "--actor"},
		{[]string{"forget", "--subject", subject, "extra"}, "unknown command"},
	} {
		r := run(c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.names, "%v", c.args)
	}
	r = run("forget", "--episode", "nosuch")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "not_found")

	r = run("forget", "--subject", subject, "--actor", "dpo-4711")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "facts deleted     3")
	require.Contains(t, r.stdout, "episodes deleted  1")
	require.Contains(t, r.stdout, "episode ids       e1")
	require.NotContains(t, r.stdout, subject)

	r = run("--json", "receipts")
	require.Equal(t, 0, r.code, r.stderr)
	var rcs []sgam.Receipt
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rcs))
	require.Len(t, rcs, 1)
	require.Equal(t, "dpo-4711", rcs[0].Actor)
	require.Equal(t, 3, rcs[0].FactsDeleted)
	r = run("receipts")
	require.Contains(t, r.stdout, "subject")
	r = sgamRun(t, "", "--db", db, "--tenant", "globex", "receipts")
	require.Equal(t, "(no receipts)\n", r.stdout)

	r = run("compact")
	require.Equal(t, 0, r.code, r.stderr)
	var files []byte
	for _, p := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		files = append(files, b...)
	}
	for _, mark := range []string{value, content} {
		require.False(t, bytes.Contains(files, []byte(mark)), "%s is still in the files", mark)
	}
	require.True(t, bytes.Contains(files, []byte(kept)))
	require.True(t, bytes.Contains(files, []byte(subject)), "the other tenant's subject of the same name stays")

	r = run("get", subject, "note")
	require.Equal(t, "(no value)\n", r.stdout)
	r = sgamRun(t, "", "--db", db, "--tenant", "globex", "get", subject, "note")
	require.Contains(t, r.stdout, "globex keeps it")
	r = run("expire")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "nothing has expired\n", r.stdout, "no schema, no retention")
	r = run("check")
	require.Equal(t, 0, r.code, r.stdout)

	r = run("forget", "--all", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "tenant acme")
	r = run("episode", "list")
	require.NotContains(t, r.stdout, "e2")
}
