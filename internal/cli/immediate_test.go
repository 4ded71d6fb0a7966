package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store"
)

// rememberChild starts 'sgam remember TEXT --id r1' as a child process,
// with a model of a 1 s timeout and one attempt: its extraction's hold is
// then 11 s (the worst case, 1 s, and twice the 5 s margin).
func rememberChild(t *testing.T, db, text string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--db", db, "--tenant", "acme", "remember", text, "--id", "r1", "--llm-timeout", "1s", "--llm-attempts", "1")
	cmd.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, logs
}

// blockFirstCall makes the fake's first call of text wait until the test
// calls release, and returns a channel closed when that call arrives.
func blockFirstCall(t *testing.T, fake *cityFake, text string) (asked <-chan struct{}, release func()) {
	arrived, released := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	first.Store(true)
	fake.setHook(func(ep string) {
		if ep != text || !first.CompareAndSwap(true, false) {
			return
		}
		close(arrived)
		select {
		case <-released:
		case <-time.After(time.Minute):
		}
	})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(release)
	return arrived, release
}

func openShared(t *testing.T, db string) sgam.Store {
	t.Helper()
	s, err := store.Open(context.Background(), db, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRememberKilledMidCall: 'sgam remember' killed with SIGKILL while the
// model works leaves its episode captured with its queue entry, held from
// the workers until the hold passes; then a worker extracts it, once. (The
// episode was captured with no queue entry: no worker ever extracted it.)
func TestRememberKilledMidCall(t *testing.T) {
	fake := newCityFake(t)
	db := filepath.Join(t.TempDir(), "r.db")
	const text = "p001 lives in c001."
	asked, release := blockFirstCall(t, fake, text)
	child, _ := rememberChild(t, db, text)
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the model was never asked")
	}
	kill(t, child)
	release()

	s := openShared(t, db)
	recs, err := s.Extractions(context.Background(), "acme", "r1")
	require.NoError(t, err)
	require.Empty(t, recs)
	all, err := s.QueuedExtractions(context.Background(), 10, false)
	require.NoError(t, err)
	require.Len(t, all, 1, "captured with its queue entry")
	due, err := s.QueuedExtractions(context.Background(), 10, true)
	require.NoError(t, err)
	require.Empty(t, due, "held while its process might still extract it")

	startWorker(t, db, "--workers", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ended, err := queue.Wait(ctx, s, []queue.Ref{{Tenant: "acme", EpisodeID: "r1"}}, time.Time{}, 100*time.Millisecond, nil)
	require.NoError(t, err)
	require.Equal(t, sgam.ExtractionDone, ended[queue.Ref{Tenant: "acme", EpisodeID: "r1"}].Status)
	recs, err = s.Extractions(context.Background(), "acme", "r1")
	require.NoError(t, err)
	require.Len(t, recs, 1, "extracted once")
	require.Equal(t, 2, fake.callsOf(text), "the killed call, and the worker's")
	f, err := s.Get(context.Background(), sgam.Key{Tenant: "acme", Subject: "p001", Attribute: "city"}, sgam.At{})
	require.NoError(t, err)
	require.Equal(t, `"c001"`, string(f.Value))
}

// TestRememberInterrupted: SIGINT during the model call ends 'sgam
// remember' at once, saying the episode is queued, and gives the episode
// to the workers without waiting for the hold: a worker extracts it.
func TestRememberInterrupted(t *testing.T) {
	fake := newCityFake(t)
	db := filepath.Join(t.TempDir(), "r.db")
	const text = "p002 lives in c002."
	asked, release := blockFirstCall(t, fake, text)
	child, logs := rememberChild(t, db, text)
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the model was never asked")
	}
	require.NoError(t, child.Process.Signal(syscall.SIGINT))
	defer release()
	err := child.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode(), logs.String())
	require.Contains(t, logs.String(), "interrupted: episode r1 is captured and queued")
	release()

	s := openShared(t, db)
	due, err := s.QueuedExtractions(context.Background(), 10, true)
	require.NoError(t, err)
	require.Len(t, due, 1, "given to the workers at once")
	startWorker(t, db, "--workers", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = queue.Wait(ctx, s, []queue.Ref{{Tenant: "acme", EpisodeID: "r1"}}, time.Time{}, 100*time.Millisecond, nil)
	require.NoError(t, err)
	recs, err := s.Extractions(context.Background(), "acme", "r1")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, sgam.ExtractionDone, recs[0].Status)
}

// TestJobTimeoutFlagsRefused: flags that would make a job's timeout
// shorter than the model client's worst case, or the rescue not longer
// than the job's timeout, are refused by name before anything runs.
func TestJobTimeoutFlagsRefused(t *testing.T) {
	newCityFake(t)
	db := filepath.Join(t.TempDir(), "r.db")
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--llm-timeout", "30s", "--llm-attempts", "2", "--job-timeout", "1m"}, "--job-timeout"}, // worst case 2×30s + 60s
		{[]string{"--llm-timeout", "1s", "--llm-attempts", "1", "--job-timeout", "10s", "--rescue-after", "10s"}, "--rescue-after"},
		{[]string{"--llm-timeout", "2h"}, "--llm-timeout"},
		{[]string{"--llm-attempts", "11"}, "--llm-attempts"},
	} {
		r := sgamRun(t, "", append([]string{"--db", db, "worker"}, c.args...)...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.field, c.args)
	}
	t.Setenv("SGAM_LLM_TIMEOUT", "soon")
	r := sgamRun(t, "", "--db", db, "worker")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "SGAM_LLM_TIMEOUT")
}
