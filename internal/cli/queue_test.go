package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store"
)

const citySchema = `
attributes:
  city: {memory: profile, type: string}
`

// cityFake answers "<person> lives in <city>." with that fact, and calls
// hook (when set) before it answers.
type cityFake struct {
	*llmtest.Server
	mu    sync.Mutex
	hook  func(episode string)
	calls map[string]int
}

func newCityFake(t *testing.T) *cityFake {
	f := &cityFake{calls: map[string]int{}}
	f.Server = llmtest.New(t, "fake-model", func(c llmtest.Call) llmtest.Reply {
		ep := c.Episode()
		f.mu.Lock()
		f.calls[ep]++
		hook := f.hook
		f.mu.Unlock()
		if hook != nil {
			hook(ep)
		}
		var who, city string
		if _, err := fmt.Sscanf(ep, "%s lives in %s", &who, &city); err != nil {
			return llmtest.Reply{Updates: []llmtest.Update{}}
		}
		city = strings.TrimSuffix(city, ".")
		return llmtest.Reply{Updates: []llmtest.Update{{Evidence: "lives in " + city, Subject: who, Attribute: "city", Change: "new", Value: llmtest.S(city)}}}
	})
	t.Setenv("SGAM_LLM_BASE_URL", f.URL)
	t.Setenv("SGAM_LLM_MODEL", f.Model)
	return f
}

func (f *cityFake) setHook(h func(string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

func (f *cityFake) callsOf(ep string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[ep]
}

// cityEpisodes is an ingest file of n episodes over sessions, person i
// living in city i.
func cityEpisodes(n, sessions int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"episode_id":"e%03d","session":"s%02d","content":"p%03d lives in c%03d.","occurred_at":"2026-06-01T%02d:%02d:00Z"}`+"\n",
			i, i%sessions, i, i, 8+i/60, i%60)
	}
	return b.String()
}

// startWorker starts 'sgam worker' as a child process, rescuing the jobs
// of dead workers after 2 s.
func startWorker(t *testing.T, db string, args ...string) *exec.Cmd {
	t.Helper()
	return startWorkerWith(t, db, "2s", args...)
}

// fastModel are the flags of a model that answers within a second, once,
// and of a job timeout that fits it: short enough for a rescue of 2s.
var fastModel = []string{"--llm-timeout", "1s", "--llm-attempts", "1", "--job-timeout", "1500ms"}

func startWorkerWith(t *testing.T, db, rescueAfter string, args ...string) *exec.Cmd {
	t.Helper()
	base := append([]string{"--db", db, "--tenant", "acme", "worker", "--rescue-after", rescueAfter, "--grace", "1s"}, fastModel...)
	cmd := exec.Command(os.Args[0], append(base, args...)...)
	cmd.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("worker %v:\n%s", cmd.Args[1:], logs.String())
		}
	})
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	state, _ := cmd.Process.Wait()
	require.False(t, state.Success())
}

// waitUntil polls cond for at most d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockFile takes the write lock of a SQLite file and returns its release.
func lockFile(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	_, err = c.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	return func() {
		c.ExecContext(context.Background(), "ROLLBACK")
		c.Close()
		db.Close()
	}
}

// requireCities checks that every person of n lives in their city, with
// one fact row each, and that the store is clean.
func requireCities(t *testing.T, s sgam.Store, tenant string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		k := sgam.Key{Tenant: tenant, Subject: fmt.Sprintf("p%03d", i), Attribute: "city"}
		hist, err := s.History(ctx, k)
		require.NoError(t, err)
		require.Len(t, hist, 1, "%s: one row, no duplicate", k)
		require.Equal(t, fmt.Sprintf(`"c%03d"`, i), string(hist[0].Value))
		require.Equal(t, []string{fmt.Sprintf("e%03d", i)}, hist[0].Sources)
	}
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
}

func episodeRefs(tenant string, n int) []queue.Ref {
	refs := make([]queue.Ref, n)
	for i := range refs {
		refs[i] = queue.Ref{Tenant: tenant, EpisodeID: fmt.Sprintf("e%03d", i)}
	}
	return refs
}

// TestWorkerKilled kills worker processes with SIGKILL (a) after the model
// answered and before the extraction committed, (b) after it committed and
// before its job was marked done. After a restart every episode is
// extracted, no fact is duplicated, check is clean, and the episode whose
// extraction had committed is not asked again.
func TestWorkerKilled(t *testing.T) {
	fake := newCityFake(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "crash.db")
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(citySchema), 0o600))
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default").code)
	const n = 30
	r := sgamRun(t, cityEpisodes(n, 3), "--db", db, "--tenant", "acme", "ingest", "-", "--no-wait")
	require.Equal(t, 0, r.code, r.stderr)
	s, err := store.Open(context.Background(), db, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	recorded := func(ep string) bool {
		recs, err := s.Extractions(context.Background(), "acme", ep)
		require.NoError(t, err)
		return len(recs) > 0
	}

	// (a) The model answers e005 while the ledger's write lock is held:
	// the worker cannot commit, and dies trying.
	answered := make(chan func(), 1)
	fake.setHook(func(ep string) {
		if ep == "p005 lives in c005." {
			answered <- lockFile(t, db)
		}
	})
	w1 := startWorker(t, db, "--workers", "1")
	var release func()
	select {
	case release = <-answered:
	case <-time.After(time.Minute):
		t.Fatal("e005 was never asked")
	}
	time.Sleep(300 * time.Millisecond) // the answer reaches the worker, which waits for the lock
	kill(t, w1)
	release()
	require.False(t, recorded("e005"), "nothing of e005 was committed")

	// (b) e010's extraction commits while the queue's write lock is held:
	// its job cannot be marked done, and the worker dies trying.
	queueLocked := make(chan func(), 1)
	var once sync.Once
	fake.setHook(func(ep string) {
		if ep == "p010 lives in c010." {
			once.Do(func() { queueLocked <- lockFile(t, queue.SQLitePath(db)) })
		}
	})
	w2 := startWorker(t, db, "--workers", "1")
	waitUntil(t, time.Minute, "e010's record", func() bool { return recorded("e010") })
	time.Sleep(300 * time.Millisecond)
	kill(t, w2)
	(<-queueLocked)()
	require.Equal(t, 1, fake.callsOf("p010 lives in c010."))

	// A restarted worker rescues both jobs and finishes the rest.
	fake.setHook(nil)
	startWorker(t, db, "--workers", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ended, err := queue.Wait(ctx, s, episodeRefs("acme", n), time.Time{}, 100*time.Millisecond, nil)
	require.NoError(t, err)
	for ref, rec := range ended {
		require.NotNil(t, rec, ref)
		require.Equal(t, sgam.ExtractionDone, rec.Status, ref)
	}
	requireCities(t, s, "acme", n)
	require.Equal(t, 2, fake.callsOf("p005 lives in c005."), "asked again: its answer was never committed")
	require.Equal(t, 1, fake.callsOf("p010 lives in c010."), "not asked again: its extraction had committed")
}

// TestWorkersShareOnPostgres: two worker processes on one PostgreSQL
// database share 200 episodes; one is killed mid-way; the other finishes
// them all, each extracted exactly once in effect: one fact row, one
// usable record.
func TestWorkersShareOnPostgres(t *testing.T) {
	fake := newCityFake(t)
	db := pgtest.URL(t)
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(citySchema), 0o600))
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default").code)
	const n = 200
	r := sgamRun(t, cityEpisodes(n, 20), "--db", db, "--tenant", "acme", "ingest", "-", "--no-wait")
	require.Equal(t, 0, r.code, r.stderr)
	s, err := store.Open(context.Background(), db, store.Options{})
	require.NoError(t, err)
	defer s.Close()

	// The model takes a while, so that both workers have jobs in flight.
	fake.setHook(func(string) { time.Sleep(20 * time.Millisecond) })
	w1 := startWorker(t, db, "--workers", "2")
	startWorker(t, db, "--workers", "2")
	refs := episodeRefs("acme", n)
	waitUntil(t, 30*time.Second, "50 extractions", func() bool {
		done := 0
		for _, r := range refs {
			if rec, err := queue.Ended(context.Background(), s, r, time.Time{}); err == nil && rec != nil {
				done++
			}
		}
		return done >= 50
	})
	kill(t, w1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ended, err := queue.Wait(ctx, s, refs, time.Time{}, 100*time.Millisecond, nil)
	require.NoError(t, err)
	for ref, rec := range ended {
		require.NotNil(t, rec, ref)
		require.Equal(t, sgam.ExtractionDone, rec.Status, ref)
		recs, err := s.Extractions(context.Background(), ref.Tenant, ref.EpisodeID)
		require.NoError(t, err)
		usable := 0
		for _, r := range recs {
			if r.Status != sgam.ExtractionFailed {
				usable++
			}
		}
		require.Equal(t, 1, usable, "%v was extracted once", ref)
	}
	requireCities(t, s, "acme", n)
}

// syncBuffer is a buffer safe for a child's output and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWorkerShutdownReleases: a worker stopped by SIGTERM while its model
// call runs past --grace releases the job at once, losing no attempt: the
// next worker extracts it without waiting for a rescue.
func TestWorkerShutdownReleases(t *testing.T) {
	fake := newCityFake(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "stop.db")
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(citySchema), 0o600))
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default").code)
	r := sgamRun(t, cityEpisodes(1, 1), "--db", db, "--tenant", "acme", "ingest", "-", "--no-wait")
	require.Equal(t, 0, r.code, r.stderr)
	asked := make(chan struct{})
	var first sync.Once
	fake.setHook(func(string) {
		first.Do(func() {
			close(asked)
			time.Sleep(5 * time.Second) // slower than the worker's grace
		})
	})
	w1 := exec.Command(os.Args[0], "--db", db, "--tenant", "acme", "worker", "--workers", "1", "--grace", "500ms", "--rescue-after", "10m", "--llm-timeout", "10s", "--llm-attempts", "1")
	w1.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	logs := &syncBuffer{}
	w1.Stderr = logs
	require.NoError(t, w1.Start())
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the model was never asked")
	}
	require.NoError(t, w1.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w1.Wait(), "the worker stops cleanly: %s", logs.String())

	start := time.Now()
	startWorkerWith(t, db, "10m", "--workers", "1")
	s, err := store.Open(context.Background(), db, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ended, err := queue.Wait(ctx, s, episodeRefs("acme", 1), time.Time{}, 50*time.Millisecond, nil)
	require.NoError(t, err)
	require.Equal(t, sgam.ExtractionDone, ended[episodeRefs("acme", 1)[0]].Status)
	require.Less(t, time.Since(start), 30*time.Second, "released, not left for a rescue in 10 minutes")
	requireCities(t, s, "acme", 1)
}

// TestWorkersShareOnSQLite: two worker processes on one SQLite file (and
// its queue beside it) share the episodes while CLI readers and a capture
// run beside them: every episode extracted once, the file clean.
func TestWorkersShareOnSQLite(t *testing.T) {
	fake := newCityFake(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "share.db")
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(citySchema), 0o600))
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default").code)
	fake.setHook(func(string) { time.Sleep(5 * time.Millisecond) })
	startWorker(t, db, "--workers", "2")
	startWorker(t, db, "--workers", "2")
	const n = 60
	r := sgamRun(t, cityEpisodes(n, 6), "--db", db, "--tenant", "acme", "ingest", "-", "--no-wait")
	require.Equal(t, 0, r.code, r.stderr)
	for i := range 5 { // readers in other processes meanwhile
		get := exec.Command(os.Args[0], "--db", db, "--tenant", "acme", "get", fmt.Sprintf("p%03d", i), "city")
		get.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
		out, err := get.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	s, err := store.Open(context.Background(), db, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ended, err := queue.Wait(ctx, s, episodeRefs("acme", n), time.Time{}, 50*time.Millisecond, nil)
	require.NoError(t, err)
	for ref, rec := range ended {
		require.Equal(t, sgam.ExtractionDone, rec.Status, ref)
	}
	requireCities(t, s, "acme", n)
	for i := range n {
		require.Equal(t, 1, fake.callsOf(fmt.Sprintf("p%03d lives in c%03d.", i, i)), "asked once")
	}
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "check").code)
}
