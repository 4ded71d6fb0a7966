package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/archive"
	"github.com/sgam-dev/sgam/internal/workload"
	"github.com/sgam-dev/sgam/store/sqlite"
	"github.com/sgam-dev/sgam/store/storetest"
)

// TestImportKilledMidway kills an importing child process with SIGKILL
// after it acknowledged a few commits: every acknowledged record is
// present, the database opens, check is clean, and running the import
// again completes it exactly.
func TestImportKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an 8,000-fact database")
	}
	ctx := context.Background()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, filepath.Join(dir, "src.db"), sqlite.Options{})
	require.NoError(t, err)
	for i := 0; i < 8_000; i += 1000 {
		_, err := src.AssertMany(ctx, workload.Batch(i, 1000))
		require.NoError(t, err)
	}
	want := storetest.Export(t, src, "")
	dumpPath := filepath.Join(dir, "dump.jsonl")
	f, err := os.Create(dumpPath)
	require.NoError(t, err)
	_, err = archive.Export(ctx, src, "", src.Now(), f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, src.Close())

	dst := filepath.Join(dir, "dst.db")
	child := exec.Command(os.Args[0], "--db", dst, "--json", "import", "--batch", "40", dumpPath)
	child.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	sc := bufio.NewScanner(out)
	acked, acks := 0, 0
	for sc.Scan() {
		var ack struct {
			Committed sgam.ImportStats `json:"committed"`
			Line      int              `json:"line"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ack))
		acked = ack.Line
		if acks++; acks == 20 {
			require.NoError(t, child.Process.Signal(syscall.SIGKILL))
			break
		}
	}
	state, _ := child.Process.Wait()
	require.Equal(t, 20, acks, "the child finished before it could be killed")
	require.False(t, state.Success(), "the child was killed")

	d, err := sqlite.Open(ctx, dst, sqlite.Options{})
	require.NoError(t, err, "the database opens after the kill")
	v, err := d.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	got := storetest.Export(t, d, "")
	// Line 1 is the header; the next acked-1 lines are episodes, then facts.
	records := acked - 1
	require.GreaterOrEqual(t, len(got.Episodes)+len(got.Facts), records, "every acknowledged record is present")
	require.Len(t, got.Episodes, min(records, len(want.Episodes)))
	for i, e := range got.Episodes {
		require.True(t, sgam.EpisodesEqual(want.Episodes[i], e))
	}
	for i, f := range got.Facts {
		require.True(t, sgam.StoredFactsEqual(want.Facts[i], f), "fact %d", i)
	}
	require.NoError(t, d.Close())

	r := sgamRun(t, "", "--db", dst, "import", dumpPath)
	require.Equal(t, 0, r.code, r.stderr)
	d, err = sqlite.Open(ctx, dst, sqlite.Options{})
	require.NoError(t, err)
	defer d.Close()
	storetest.RequireSameDump(t, want, storetest.Export(t, d, ""))
}
