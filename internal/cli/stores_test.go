package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/cli"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

// randomDump builds a random SQLite database and returns its path and rows.
func randomDump(t *testing.T, seed uint64, ops int) (string, storetest.Dump) {
	path := filepath.Join(t.TempDir(), "src.db")
	clock := &sgam.ManualClock{}
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Clock: clock})
	require.NoError(t, err)
	defer s.Close()
	storetest.Populate(t, s, clock, seed, ops)
	return path, storetest.Export(t, s, "")
}

func dumpOf(t *testing.T, dsn string) storetest.Dump {
	s, err := store.Open(context.Background(), dsn, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	return storetest.Export(t, s, "")
}

// TestMoveBetweenStores: sgam export | sgam import moves a database from
// SQLite to PostgreSQL and back without losing anything: both time axes,
// sources, evidence, episodes, ids.
func TestMoveBetweenStores(t *testing.T) {
	src, want := randomDump(t, 11, 800)
	pg := pgtest.URL(t)
	dir := t.TempDir()

	r := sgamRun(t, "", "--db", src, "export", "--out", filepath.Join(dir, "a.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", pg, "import", "--batch", "97", filepath.Join(dir, "a.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	storetest.RequireSameDump(t, want, dumpOf(t, pg))
	r = sgamRun(t, "", "--db", pg, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)

	back := filepath.Join(dir, "back.db")
	r = sgamRun(t, "", "--db", pg, "export", "--out", filepath.Join(dir, "b.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", back, "import", filepath.Join(dir, "b.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	storetest.RequireSameDump(t, want, dumpOf(t, back))

	// The two exports are the same bytes but for the header's timestamp.
	a, err := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	require.NoError(t, err)
	body := func(x []byte) string { return string(x[strings.IndexByte(string(x), '\n'):]) }
	require.Equal(t, body(a), body(b))
}

// TestConcurrentImportsIntoPostgres runs 16 sgam import processes at once,
// each with its own connections, on overlapping slices of one export:
// afterwards the database holds exactly the export and check is clean.
func TestConcurrentImportsIntoPostgres(t *testing.T) {
	src, want := randomDump(t, 12, 1500)
	pg := pgtest.URL(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	r := sgamRun(t, "", "--db", src, "export", "--out", full)
	require.Equal(t, 0, r.code, r.stderr)

	// Split the facts into 16 overlapping streams, each with every episode.
	raw, err := os.ReadFile(full)
	require.NoError(t, err)
	var head, facts []string
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"fact"`) {
			facts = append(facts, sc.Text())
		} else {
			head = append(head, sc.Text())
		}
	}
	const streams = 16
	step := len(facts)/streams + 1
	var paths []string
	for i := range streams {
		lines := append([]string(nil), head...)
		lines = append(lines, facts[min(i*step, len(facts)):min((i+3)*step, len(facts))]...) // three slices: overlaps two neighbours
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		paths = append(paths, p)
	}
	// Every fact is in some stream.
	var wg sync.WaitGroup
	errs := make([]string, streams)
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "--db", pg, "import", "--batch", "50", p)
			cmd.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Sprintf("import %d: %v: %s", i, err, out)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		require.Empty(t, e)
	}
	r = sgamRun(t, "", "--db", pg, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	storetest.RequireSameDump(t, want, dumpOf(t, pg))
}

// TestPostgresRoles: an owner role creates the schema once with sgam init;
// the role the servers use then needs only rights on the rows; a read-only
// command on a schema without sgam tables finds no database rather than
// creating one.
func TestPostgresRoles(t *testing.T) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.Admin(t))
	require.NoError(t, err)
	defer admin.Close(ctx)
	suffix := fmt.Sprintf("%d", os.Getpid())
	owner, app, schema := "owner_"+suffix, "app_"+suffix, "roles_"+suffix
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'pw' NOSUPERUSER NOBYPASSRLS`, owner),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'pw' NOSUPERUSER NOBYPASSRLS`, app),
		fmt.Sprintf(`CREATE SCHEMA %s AUTHORIZATION %s`, schema, owner),
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), pgtest.Admin(t))
		if err != nil {
			return
		}
		defer admin.Close(context.Background())
		admin.Exec(context.Background(), fmt.Sprintf(`DROP SCHEMA %s CASCADE`, schema))
		admin.Exec(context.Background(), fmt.Sprintf(`DROP OWNED BY %s, %s; DROP ROLE %s; DROP ROLE %s`, owner, app, owner, app))
	})
	as := func(role string) string {
		u, err := url.Parse(pgtest.Admin(t))
		require.NoError(t, err)
		u.User = url.UserPassword(role, "pw")
		q := u.Query()
		q.Set("search_path", schema+",public")
		u.RawQuery = q.Encode()
		return u.String()
	}

	r := sgamRun(t, "", "--db", as(app), "get", "mira", "city")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "no sgam database", "a read does not create one")

	r = sgamRun(t, "", "--db", as(owner), "init")
	require.Equal(t, 0, r.code, r.stderr)
	for _, q := range []string{
		fmt.Sprintf(`GRANT USAGE ON SCHEMA %s TO %s`, schema, app),
		fmt.Sprintf(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %s TO %s`, schema, app),
		fmt.Sprintf(`GRANT USAGE, SELECT, UPDATE ON SEQUENCE %s.fact_ids TO %s`, schema, app),
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err)
	}
	r = sgamRun(t, "", "--db", as(app), "assert", "mira", "city", `"Oslo"`, "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", as(app), "get", "mira", "city")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"Oslo"`)
	r = sgamRun(t, "", "--db", as(app), "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}
