package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
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
