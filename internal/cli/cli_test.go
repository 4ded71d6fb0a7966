package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/cli"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

// TestMain lets a test run the command line in a child process: with
// SGAM_CLI_CHILD set, the test binary is sgam.
func TestMain(m *testing.M) {
	if os.Getenv("SGAM_CLI_CHILD") != "" {
		// As cmd/sgam: SIGINT and SIGTERM end the command's context.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(pgtest.Main(m))
}

type result struct {
	code           int
	stdout, stderr string
}

// sgamRun runs the command line in process.
func sgamRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestDemo(t *testing.T) {
	r := sgamRun(t, "", "demo")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{
		`returns e1:`,
		`now (current value)`, `"2026-06-30"  source e2`,
		`on 2026-06-02`, `"2026-07-15"  source e1`,
		`on 2026-05-31`, `"2026-08-01"  source e0`,
		`as believed before e2 was recorded  "2026-07-15"`,
		`check: 0 violations`,
	} {
		require.Contains(t, r.stdout, want)
	}
}

func TestFactCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	run := func(args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", "acme"}, args...)...)
	}
	other := func(args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", "globex"}, args...)...)
	}

	r := run("episode", "add", "--id", "e1", "--occurred-at", "2026-06-01T09:00:00Z", "--content", "deadline is July 15")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "e1\n", r.stdout)
	r = run("assert", "mira", "passport_deadline", `"2026-07-15"`, "--valid-from", "2026-06-01T09:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("assert", "mira", "passport_deadline", `"2026-06-30"`, "--valid-from", "2026-06-03T12:00:00+02:00", "--source", "e2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, other("assert", "mira", "passport_deadline", `"1999-01-01"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "x").code)

	r = run("--json", "get", "mira", "passport_deadline")
	require.Equal(t, 0, r.code, r.stderr)
	var f sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &f))
	require.Equal(t, `"2026-06-30"`, string(f.Value))
	require.Equal(t, []string{"e2"}, f.Sources)

	r = run("get", "mira", "passport_deadline", "--as-of", "2026-06-02T00:00:00Z")
	require.Contains(t, r.stdout, `"2026-07-15"`)
	r = run("get", "mira", "passport_deadline", "--as-of", "2026-06-04T00:00:00Z", "--known-at", "2000-01-01T00:00:00Z")
	require.Equal(t, "(no value)\n", r.stdout)
	r = other("get", "mira", "passport_deadline")
	require.Contains(t, r.stdout, `"1999-01-01"`, "the other tenant sees only its own value")

	r = run("--json", "history", "mira", "passport_deadline")
	var hist []sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &hist))
	require.Len(t, hist, 3)
	r = run("history", "mira", "passport_deadline")
	require.Contains(t, r.stdout, "RETRACTED")

	r = run("--json", "state", "mira")
	var state []sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &state))
	require.Len(t, state, 1)

	r = run("trace", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "deadline is July 15")
	r = other("trace", "3")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "not_found")

	r = run("retract", "mira", "passport_deadline", "--at", "2026-07-01T00:00:00Z", "--source", "e3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(retracted)")

	r = run("episode", "list")
	require.Contains(t, r.stdout, "e1")
	r = run("episode", "show", "e1")
	require.Contains(t, r.stdout, "deadline is July 15")
	r = other("episode", "show", "e1")
	require.Equal(t, cli.ExitFailure, r.code)

	r = run("check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "ok")
}

// TestBadInput: every kind of bad input exits 2 with a message naming the
// field, and leaves nothing behind.
func TestBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	big := `"` + strings.Repeat("x", sgam.DefaultMaxValueBytes) + `"`
	for _, c := range []struct {
		args  []string
		names string
	}{
		{[]string{"assert", "mira", "city", `"Oslo"`, "--valid-from", "2026-06-03", "--source", "e1"}, "--valid-from"},
		{[]string{"assert", "mira", "city", `"Oslo"`, "--valid-from", "2026-06-03T10:00:00", "--source", "e1"}, "no UTC offset"},
		{[]string{"assert", "mira", "city", `"Oslo"`, "--valid-from", "June 3", "--source", "e1"}, "--valid-from"},
		{[]string{"assert", "mira", "city", `Oslo`, "--source", "e1"}, "VALUE"},
		{[]string{"assert", "mira", "city", `{"a":`, "--source", "e1"}, "VALUE"},
		{[]string{"assert", "mira", "city", big, "--source", "e1"}, "VALUE"},
		{[]string{"assert", "mira", "city", `"Oslo"`}, "--source"},
		{[]string{"assert", "", "city", `"Oslo"`, "--source", "e1"}, "SUBJECT: is required"},
		{[]string{"assert", "mira", "", `"Oslo"`, "--source", "e1"}, "ATTRIBUTE: is required"},
		{[]string{"assert", "mira", "city", `"Oslo"`, "--source", "e 1"}, "--source:"},
		{[]string{"--tenant", "", "assert", "mira", "city", `"Oslo"`, "--source", "e1"}, "--tenant: is required"},
		{[]string{"--tenant", "a b", "get", "mira", "city"}, "--tenant:"},
		{[]string{"episode", "add", "--id", "e 1"}, "--id:"},
		{[]string{"episode", "add", "--kind", "unknown"}, "--kind:"},
		{[]string{"episode", "nosuch"}, "unknown command"},
		{[]string{"assert", "mira", "city"}, "accepts 3 arg"},
		{[]string{"get", "mira", "city", "--as-of", "yesterday"}, "--as-of"},
		{[]string{"get", "mira", "city", "--known-at", "2026-06-03"}, "--known-at"},
		{[]string{"get", "mira", "city", "--nope"}, "unknown flag"},
		{[]string{"trace", "abc"}, "FACT_ID"},
		{[]string{"episode", "add", "--metadata", "[1]"}, "metadata"},
		{[]string{"episode", "list", "--limit", "0"}, "limit"},
		{[]string{"import", "--batch", "0"}, "--batch"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		r := sgamRun(t, "", append([]string{"--db", db}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.names, "%v", c.args)
	}
	r := sgamRun(t, "", "--db", db, "--json", "export")
	if r.code == 0 {
		require.Equal(t, 1, strings.Count(r.stdout, "\n"), "only the header: nothing was written\n%s", r.stdout)
	} else {
		require.Contains(t, r.stderr, "no database", "no command created the database")
	}
	r = sgamRun(t, "", "--db", db, "episode", "add", "--id", "ok", "--content", "fine")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, 0, r.code, r.stdout)
	r = sgamRun(t, "", "--db", db, "--json", "export")
	require.Equal(t, 2, strings.Count(r.stdout, "\n"), "only the header and the one good episode\n%s", r.stdout)
}

// TestReadCommandsDoNotCreate: a mistyped --db is an error for commands
// that only read, not a new empty database.
func TestReadCommandsDoNotCreate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo.db")
	for _, args := range [][]string{{"get", "m", "a"}, {"state", "m"}, {"history", "m", "a"}, {"trace", "1"},
		{"episode", "list"}, {"episode", "show", "e"}, {"export"}, {"check"}} {
		r := sgamRun(t, "", append([]string{"--db", db}, args...)...)
		require.Equal(t, cli.ExitFailure, r.code, "%v", args)
		require.Contains(t, r.stderr, "no database at", "%v", args)
	}
	_, err := os.Stat(db)
	require.True(t, os.IsNotExist(err))
}

func TestConflictExitsOne(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, "", "--db", db, "assert", "mira", "city", `"Oslo"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "assert", "mira", "city", `"Rome"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e2")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "conflict: --valid-from:")
}

func TestReplayCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	script := `{"op":"clock","now":"2026-06-01T09:00:00Z"}
{"op":"assert","subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}
{"op":"nope"}
{"op":"get","subject":"mira","attribute":"city"}
`
	r := sgamRun(t, script, "--db", db, "--tenant", "acme", "replay")
	require.Equal(t, cli.ExitFailure, r.code, "a line failed: %s", r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, "every line ran and has its result")
	require.Contains(t, lines[2], `"field":"op"`)
	require.Contains(t, lines[3], `"tenant":"acme"`)
	require.Contains(t, r.stderr, "4 operations, 1 failed")

	r = sgamRun(t, `{"op":"get","subject":"mira","attribute":"city"}`+"\n", "--db", db, "--tenant", "acme", "replay")
	require.Equal(t, 0, r.code, "every line succeeded: %s", r.stderr)
	require.Contains(t, r.stderr, "1 operations, 0 failed")
}

func TestExportImportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	clock := &sgam.ManualClock{}
	s, err := sqlite.Open(context.Background(), src, sqlite.Options{Clock: clock})
	require.NoError(t, err)
	storetest.Populate(t, s, clock, 7, 400)
	want := storetest.Export(t, s, "")
	require.NoError(t, s.Close())

	dump := filepath.Join(dir, "dump.jsonl")
	r := sgamRun(t, "", "--db", src, "export", "--out", dump)
	require.Equal(t, 0, r.code, r.stderr)
	dst := filepath.Join(dir, "dst.db")
	r = sgamRun(t, "", "--db", dst, "import", "--batch", "37", dump)
	require.Equal(t, 0, r.code, r.stderr)
	d, err := sqlite.Open(context.Background(), dst, sqlite.Options{})
	require.NoError(t, err)
	defer d.Close()
	storetest.RequireSameDump(t, want, storetest.Export(t, d, ""))

	// A bad line stops the import and names the line and field.
	raw, err := os.ReadFile(dump)
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	lines[3] = strings.Replace(lines[3], `"recorded_at":"2026`, `"recorded_at":"x2026`, 1)
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644))
	r = sgamRun(t, "", "--db", filepath.Join(dir, "other.db"), "import", bad)
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "line 4: recorded_at:")
}

// TestExportCarriesSchemas: the tenants' schemas and the default move with
// the rows, under their own version numbers, so the target governs the
// rows as the source did; an empty input creates no database.
func TestExportCarriesSchemas(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	def := write("default.yaml", "attributes:\n  city: {memory: profile, type: string}\n")
	acme := write("acme.yaml", "attributes:\n  age: {memory: profile, type: integer}\n")
	require.Equal(t, 0, sgamRun(t, "", "--db", src, "schema", "apply", def, "--default").code)
	require.Equal(t, 0, sgamRun(t, "", "--db", src, "schema", "apply", acme, "--tenant", "acme").code)
	r := sgamRun(t, "", "--db", src, "--tenant", "acme", "assert", "mira", "age", "42", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)

	dump := filepath.Join(dir, "dump.jsonl")
	r = sgamRun(t, "", "--db", src, "export", "--out", dump)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "exported 2 schema versions")
	r = sgamRun(t, "", "--db", dst, "import", dump)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "imported 2 schema versions")
	r = sgamRun(t, "", "--db", dst, "import", dump)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "already present: 2 schema versions")
	for _, tenant := range []string{"acme", "beta"} {
		want := sgamRun(t, "", "--db", src, "--tenant", tenant, "--json", "schema", "show")
		got := sgamRun(t, "", "--db", dst, "--tenant", tenant, "--json", "schema", "show")
		require.Equal(t, want.stdout, got.stdout, tenant)
	}
	r = sgamRun(t, "", "--db", dst, "--tenant", "acme", "assert", "mira", "age", `"old"`, "--source", "e2")
	require.Equal(t, cli.ExitUsage, r.code, "acme's imported schema governs: %s", r.stderr)
	require.Equal(t, 0, sgamRun(t, "", "--db", dst, "check").code)

	empty := write("empty.jsonl", "")
	r = sgamRun(t, "", "--db", filepath.Join(dir, "none.db"), "import", empty)
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "FILE: the input is empty")
	require.NoFileExists(t, filepath.Join(dir, "none.db"))
}

// TestCheckNamesViolations corrupts a database behind the store's back
// and expects `sgam check` to fail naming each broken rule.
func TestCheckNamesViolations(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, "", "--db", db, "--tenant", "acme", "assert", "mira", "city", `"Oslo"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	raw, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	defer raw.Close()
	for _, q := range []string{
		// A closed believed row overlapping the open one.
		`INSERT INTO facts (fact_id, tenant, subject, attribute, value, valid_from, valid_to, recorded_at, source)
		 VALUES (100, 'acme', 'mira', 'city', '"Rome"', 1767225600000000 - 10, 1767225600000000 + 10, 1, 'e1')`,
		// A fact with no evidence at all.
		`INSERT INTO facts (fact_id, tenant, subject, attribute, value, valid_from, recorded_at)
		 VALUES (101, 'acme', 'kai', 'city', '"Rome"', 0, 1)`,
	} {
		_, err := raw.Exec(q)
		require.NoError(t, err)
	}
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stdout, "overlap acme/mira.city: believed facts")
	require.Contains(t, r.stdout, "evidence acme/kai.city: fact 101 has no evidence episode")
	require.Contains(t, r.stderr, "check found 2 violations")
	r = sgamRun(t, "", "--db", db, "--json", "check")
	var vs []sgam.Violation
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &vs))
	require.Len(t, vs, 2)
}
