package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

// TestMigrateKilledMidway kills `sgam migrate` with SIGKILL after its first
// committed batch, runs it again, and compares the result with one
// uninterrupted run on a copy of the same database: the same rows, in the
// same shape, with the same sources (transaction times aside, which come
// from the wall clock).
func TestMigrateKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 2,000-subject database")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "cut.db")
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	require.NoError(t, err)
	_, err = s.ApplyDefaultSchema(ctx, []byte("attributes:\n  tier: {memory: account, type: string}\n  price: {memory: account, type: string}\n"), false)
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for from := 0; from < 2000; from += 250 {
		var batch []sgam.Assertion
		for i := from; i < from+250; i++ {
			subject := fmt.Sprintf("c%04d", i)
			for j, attr := range []string{"tier", "price", "tier"} {
				batch = append(batch, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: subject, Attribute: attr},
					Value: []byte(fmt.Sprintf(`"%d"`, i+j)), ValidFrom: base.Add(time.Duration(j) * time.Hour), Source: fmt.Sprintf("e%d", i%7)})
			}
		}
		_, err := s.AssertMany(ctx, batch)
		require.NoError(t, err)
	}
	_, err = s.ApplyDefaultSchema(ctx, []byte(`attributes:
  plan: {memory: account, type: string}
  price: {memory: account, type: string}
migrations:
  - name: tier-to-plan
    rename: {from: tier, to: plan}
  - name: price-to-cents
    retype: {attribute: price, transform: "string(int(value) * 100)"}
`), false)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	whole := filepath.Join(dir, "whole.db")
	for _, suffix := range []string{"", "-wal"} {
		body, err := os.ReadFile(db + suffix)
		if suffix != "" && os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(whole+suffix, body, 0o644))
	}

	r := sgamRun(t, "", "--db", whole, "migrate", "--batch", "5")
	require.Equal(t, 0, r.code, r.stderr)

	child := exec.Command(os.Args[0], "--db", db, "migrate", "--batch", "5")
	child.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	errs, err := child.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	sc := bufio.NewScanner(errs)
	require.True(t, sc.Scan(), "the child reports progress")
	require.Contains(t, sc.Text(), "tier-to-plan", "a first batch is committed")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	state, _ := child.Process.Wait()
	require.False(t, state.Success(), "the child was killed")

	cut, err := sqlite.Open(ctx, db, sqlite.Options{})
	require.NoError(t, err)
	v, err := cut.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	plans, err := cut.Get(ctx, sgam.Key{Tenant: "acme", Subject: "c1999", Attribute: "plan"}, sgam.At{})
	require.NoError(t, err)
	require.Nil(t, plans, "the run was cut short before the last subject")
	require.NoError(t, cut.Close())

	r = sgamRun(t, "", "--db", db, "migrate", "--batch", "5")
	require.Equal(t, 0, r.code, r.stderr)
	want, got := shapeOf(t, whole), shapeOf(t, db)
	require.Len(t, want, 2000*8, "every subject: three plan rows, two price rows, three retracted tier rows")
	require.True(t, slices.Equal(want, got), "the resumed run ends where the uninterrupted one does")
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// shapeOf lists a database's fact rows without ids and transaction times.
func shapeOf(t *testing.T, path string) []string {
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{MustExist: true})
	require.NoError(t, err)
	defer s.Close()
	var out []string
	for _, f := range storetest.Export(t, s, "").Facts {
		out = append(out, fmt.Sprintf("%s %s %v %s %s believed=%v v%d", f.Key(), f.ValidFrom, f.ValidTo, f.Value,
			strings.Join(f.Sources, ","), f.RetractedAt == nil, f.SchemaVersion))
	}
	slices.Sort(out)
	return out
}
