package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store"
)

// TestPostgresSeveralProcesses proves the layout docs/scaling.md gives for
// teams that outgrow one machine: two 'sgam serve' processes (capture only,
// --workers 0) and two 'sgam worker' processes on one PostgreSQL database.
// Episodes are captured through both servers, alternating, while
//
//   - one worker is killed with SIGKILL while it has a model call in flight
//     (the model is slow for every fourth episode), and restarted with the
//     same arguments;
//   - one server is killed with SIGKILL while a capture is in flight in it
//     (its INSERT waits for an uncommitted row of the same episode that the
//     test holds), and restarted with the same arguments. A client whose
//     capture failed sends it again, to the other server.
//
// Then: every acknowledged capture is stored, and nothing else; every
// episode ends with exactly one extraction record, done, and one fact row
// citing it; an episode whose extraction was in flight in the killed worker
// and had not committed is asked of the model again once, by the rescue
// (twice in all: delivery is at least once, docs/extraction.md), every
// other episode exactly once (an extraction that had committed is never
// asked again); no extraction job is left queued, waiting, running or
// failed; 'sgam check' is clean; neither server nor worker logs an error;
// and the survivors stop cleanly on SIGTERM.
//
// Its time is mostly the rescue: River looks for the jobs of dead workers
// every 30 s, on the leader, so a job is taken up again between
// --rescue-after (8 s here) and that and 30 s after its worker died (and
// up to 20 s more when the dead worker was the leader).
func TestPostgresSeveralProcesses(t *testing.T) {
	start := time.Now()
	fake := newCityFake(t)
	db := pgtest.URL(t) // fails under CI=true without PostgreSQL, skips loudly otherwise
	ctx := context.Background()
	const tenant = "acme"
	const n = 160

	schema := t.TempDir() + "/schema.yaml"
	require.NoError(t, os.WriteFile(schema, []byte(citySchema), 0o600))
	r := sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "--tenant", tenant, "keys", "create", "--role", "write", "--name", "cluster")
	require.Equal(t, 0, r.code, r.stderr)
	token := strings.TrimSpace(r.stdout)

	// Each worker reaches the model through a proxy of its own, which
	// tells which worker asked what, and which holds the answer about
	// every fourth episode back for a second, so that a worker killed at a
	// random moment has a model call in flight.
	proxies := []*modelProxy{newModelProxy(t, fake.URL), newModelProxy(t, fake.URL)}

	var procs procSet
	t.Cleanup(func() { procs.killAll(t) })
	serverArgs := []string{"--db", db, "--tenant", tenant, "serve", "--addr", "127.0.0.1:0", "--workers", "0", "--expire-every", "0", "--rate-limit", "0"}
	workerArgs := func(p *modelProxy) []string {
		return []string{"--db", db, "--tenant", tenant, "worker", "--workers", "2", "--llm-base-url", p.URL + "/v1",
			"--llm-timeout", "5s", "--llm-attempts", "1", "--job-timeout", "6s", "--rescue-after", "8s", "--grace", "1s"}
	}
	servers := []*proc{procs.start(t, "server A", serverArgs, true), procs.start(t, "server B", serverArgs, true)}
	workers := []*proc{procs.start(t, "worker 1", workerArgs(proxies[0]), false), procs.start(t, "worker 2", workerArgs(proxies[1]), false)}

	// Clients: episode i goes to server i%2; a capture that fails is sent
	// again to the other server, then back, until one acknowledges it.
	var (
		mu        sync.Mutex
		addrs     = []string{servers[0].addr, servers[1].addr}
		acked     = map[int]int{}    // episode → the server that acknowledged it
		ackedBy   = map[string]int{} // server address → acknowledgements
		failures  []string           // failed attempts: "server: episode: error"
		inFlight  = map[int]int{}    // episode → server of the request in flight
		next      atomic.Int64
		gate      atomic.Int64 // no capture of this episode or later until the test is ready
		ackedN    atomic.Int64
		serverErr []string // answers that are not 200, from any server
	)
	addrOf := func(s int) string {
		mu.Lock()
		defer mu.Unlock()
		return addrs[s]
	}
	client := &http.Client{Timeout: 20 * time.Second}
	capture := func(i, s int) error {
		addr := addrOf(s)
		body := fmt.Sprintf(`{"episode_id":"e%03d","content":"p%03d lives in c%03d.","occurred_at":"2026-06-01T%02d:%02d:00Z","extract":"background"}`,
			i, i, i, 8+i/60, i%60)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/episodes", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		mu.Lock()
		inFlight[i] = s
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(inFlight, i)
			mu.Unlock()
		}()
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			mu.Lock()
			serverErr = append(serverErr, fmt.Sprintf("server %c: e%03d: %d %s", 'A'+s, i, res.StatusCode, b))
			mu.Unlock()
			return fmt.Errorf("status %d", res.StatusCode)
		}
		var out struct {
			EpisodeID string `json:"episode_id"`
		}
		if err := json.Unmarshal(b, &out); err != nil || out.EpisodeID != fmt.Sprintf("e%03d", i) {
			return fmt.Errorf("answer %s: %v", b, err)
		}
		mu.Lock()
		ackedBy[addr]++
		mu.Unlock()
		return nil
	}
	// The capture that server A's kill interrupts: an even episode, server
	// A's. The clients wait before it until the test holds its row.
	const held = 60
	gate.Store(held)
	var clients sync.WaitGroup
	for range 4 {
		clients.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				for int64(i) >= gate.Load() {
					time.Sleep(10 * time.Millisecond)
				}
				for attempt := 0; ; attempt++ {
					s := (i + attempt) % 2
					err := capture(i, s)
					if err == nil {
						mu.Lock()
						acked[i] = s
						mu.Unlock()
						ackedN.Add(1)
						break
					}
					mu.Lock()
					failures = append(failures, fmt.Sprintf("server %c: e%03d: %v", 'A'+s, i, err))
					mu.Unlock()
					if attempt == 40 {
						return // reported below: not every episode acknowledged
					}
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(250 * time.Millisecond) // about 15 captures a second in all
			}
		})
	}
	done := make(chan struct{})
	go func() { clients.Wait(); close(done) }()

	// Kill worker 1 while it waits for the model, after some captures.
	waitUntil(t, time.Minute, "30 acknowledged captures", func() bool { return ackedN.Load() >= 30 })
	waitUntil(t, time.Minute, "a slow model call in flight in worker 1", func() bool { return proxies[0].busy() })
	workers[0].kill(t)
	killedWorkerAt := time.Now()
	// A COMMIT the worker sent before it died lands; a request it sent
	// reaches its proxy.
	time.Sleep(300 * time.Millisecond)
	askedBy1 := proxies[0].asked()
	s, err := store.Open(ctx, db, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	orphaned := map[int]bool{} // asked by worker 1, and its extraction never committed
	for i := range askedBy1 {
		recs, err := s.Extractions(ctx, tenant, fmt.Sprintf("e%03d", i))
		require.NoError(t, err)
		if len(recs) == 0 {
			orphaned[i] = true
		}
	}
	require.NotEmpty(t, orphaned, "the kill landed in the middle of an extraction")
	workers[0] = procs.start(t, "worker 1 (restarted)", workerArgs(proxies[0]), false)

	// Kill server A while a capture is in flight in it: the test holds an
	// uncommitted episode row of the same id, so the server's INSERT waits.
	admin, err := pgx.Connect(ctx, pgtest.Admin(t))
	require.NoError(t, err)
	defer admin.Close(ctx)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	u, err := url.Parse(db)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT set_config('search_path', $1, true)", u.Query().Get("search_path"))
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO episodes (tenant_id, episode_id, kind, content, occurred_at, recorded_at) VALUES ($1, $2, 'message', 'held', now(), now())`,
		tenant, fmt.Sprintf("e%03d", held))
	require.NoError(t, err)
	gate.Store(n)
	waitUntil(t, time.Minute, fmt.Sprintf("e%03d in flight in server A", held), func() bool {
		mu.Lock()
		defer mu.Unlock()
		srv, ok := inFlight[held]
		return ok && srv == 0
	})
	time.Sleep(300 * time.Millisecond) // its INSERT waits for the test's row
	servers[0].kill(t)
	waitUntil(t, time.Minute, fmt.Sprintf("the client of e%03d to see server A fail", held), func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range failures {
			if strings.HasPrefix(f, fmt.Sprintf("server A: e%03d: ", held)) {
				return true
			}
		}
		return false
	})
	require.NoError(t, tx.Rollback(ctx))
	servers[0] = procs.start(t, "server A (restarted)", serverArgs, true)
	mu.Lock()
	addrs[0] = servers[0].addr
	mu.Unlock()

	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the captures did not finish")
	}
	t.Logf("%d captures acknowledged in %s; %d attempts failed", len(acked), time.Since(start).Round(time.Millisecond), len(failures))
	require.Len(t, acked, n, "every episode is acknowledged in the end: failed attempts %v", failures)
	require.Empty(t, serverErr, "no server answered an error")
	// Every failed attempt was server A's, around its kill: refused, reset
	// or cut off; none was server B's.
	for _, f := range failures {
		require.True(t, strings.HasPrefix(f, "server A: "), "only the killed server failed a capture: %s", f)
	}
	require.Equal(t, 1, acked[held], "the capture in flight at the kill was acknowledged by server B when sent again")
	var byServer [2]int
	for _, s := range acked {
		byServer[s]++
	}
	require.Positive(t, byServer[0], "server A acknowledged captures")
	require.Positive(t, byServer[1], "server B acknowledged captures")
	require.Positive(t, ackedBy[servers[0].addr], "server A acknowledged captures after its restart")

	// Every acknowledged capture is stored, and nothing else.
	eps, err := s.Episodes(ctx, sgam.EpisodeQuery{Tenant: tenant, Limit: 10000})
	require.NoError(t, err)
	require.Len(t, eps, n, "the episodes stored are those acknowledged")
	for _, e := range eps {
		var i int
		_, err := fmt.Sscanf(e.ID, "e%03d", &i)
		require.NoError(t, err, e.ID)
		require.Contains(t, acked, i, e.ID)
		require.Equal(t, fmt.Sprintf("p%03d lives in c%03d.", i, i), e.Content, e.ID)
	}

	// Every episode is extracted, within the rescue of the killed worker's
	// jobs (River's rescuer runs every 30 s on the leader).
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	refs := episodeRefs(tenant, n)
	ended, err := queue.Wait(wctx, s, refs, time.Time{}, 200*time.Millisecond, nil)
	require.NoError(t, err, "every episode is extracted: %d of %d ended", len(ended), n)
	t.Logf("every episode extracted %s after the worker's kill", time.Since(killedWorkerAt).Round(time.Millisecond))

	// No job is stuck: none queued, waiting, running or failed. (A job
	// whose extraction committed but that the killed worker never marked
	// completed is still running until the rescue; it then skips.)
	var st queue.Status
	status := func() queue.Status {
		r := sgamRun(t, "", "--db", db, "--json", "ingest", "status", "--all-tenants")
		require.Equal(t, 0, r.code, r.stderr)
		var st queue.Status
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
		return st
	}
	deadline := time.Now().Add(75 * time.Second)
	for st = status(); st.Queued+st.Available+st.Running+st.Failed > 0 && time.Now().Before(deadline); st = status() {
		time.Sleep(500 * time.Millisecond)
	}
	require.Equal(t, queue.Status{Completed: st.Completed}, st, "no job stuck: %s", riverStates(admin, u))
	require.GreaterOrEqual(t, st.Completed, n)

	// Calls and records, episode by episode.
	calls := map[int]int{}
	for _, p := range proxies {
		for i, c := range p.asked() {
			calls[i] += c
		}
	}
	for i := range n {
		id := fmt.Sprintf("e%03d", i)
		recs, err := s.Extractions(ctx, tenant, id)
		require.NoError(t, err)
		require.Len(t, recs, 1, "%s has one extraction record: %+v", id, recs)
		require.Equal(t, sgam.ExtractionDone, recs[0].Status, "%s: %s", id, recs[0].Error)
		if orphaned[i] {
			require.Equal(t, 2, calls[i], "%s was in flight in the killed worker: asked again once, by the rescue", id)
		} else {
			require.Equal(t, 1, calls[i], "%s was asked of the model once", id)
			require.Equal(t, 1, fake.callsOf(fmt.Sprintf("p%03d lives in c%03d.", i, i)), "%s: the model answered once", id)
		}
	}
	requireCities(t, s, tenant, n) // one fact row each, citing its episode; Check clean
	r = sgamRun(t, "", "--db", db, "check")
	require.Equal(t, 0, r.code, "sgam check: %s %s", r.stdout, r.stderr)

	// The survivors stop cleanly, and no process logged an error.
	for _, p := range append(servers, workers...) {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, p.wait(), "%s stops cleanly on SIGTERM", p.name)
	}
	for _, p := range procs.all() {
		require.Empty(t, p.errorLines(), "%s logged no error", p.name)
	}
	t.Logf("%d episodes, %d in flight at the worker's kill (%v), the capture of e%03d in flight at the server's kill; %s in all",
		n, len(orphaned), sortedKeys(orphaned), held, time.Since(start).Round(time.Millisecond))
}

// cityIndex returns i of an episode "p<i> lives in c<i>.".
func cityIndex(ep string) (int, bool) {
	var i, j int
	if _, err := fmt.Sscanf(ep, "p%d lives in c%d.", &i, &j); err != nil || i != j {
		return 0, false
	}
	return i, true
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// riverStates counts River's jobs by state, for a failure's message.
func riverStates(admin *pgx.Conn, db *url.URL) string {
	schema, _, _ := strings.Cut(db.Query().Get("search_path"), ",")
	rows, err := admin.Query(context.Background(), fmt.Sprintf(`SELECT state::text, count(*) FROM %s.river_job GROUP BY 1 ORDER BY 1`, pgx.Identifier{schema}.Sanitize()))
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var state string
		var c int
		if err := rows.Scan(&state, &c); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%s %d; ", state, c)
	}
	return "river_job: " + b.String()
}

// modelProxy stands between one worker and the fake model: it counts the
// calls of that worker by episode, and holds the answer about every fourth
// episode back for a second (the model is slow), knowing which are held.
type modelProxy struct {
	*httptest.Server
	target string // the fake's root, without /v1
	mu     sync.Mutex
	calls  map[int]int
	held   int
}

// slowEpisode reports whether the model is slow to answer about episode i.
func slowEpisode(i int) bool { return i%4 == 1 }

func newModelProxy(t *testing.T, fakeURL string) *modelProxy {
	p := &modelProxy{target: strings.TrimSuffix(fakeURL, "/v1"), calls: map[int]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Server.Close)
	return p
}

func (p *modelProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	ep := -1
	for _, m := range req.Messages {
		if i, ok := cityIndex(llmtest.Call{User: m.Content}.Episode()); m.Role == "user" && ok {
			ep = i
		}
	}
	p.mu.Lock()
	p.calls[ep]++
	p.mu.Unlock()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Content-Length")
	res, err := http.DefaultClient.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if slowEpisode(ep) {
		p.mu.Lock()
		p.held++
		p.mu.Unlock()
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done(): // the worker died
		}
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(answer)
}

// busy reports whether a slow answer is being held back: a call in
// flight, which the model has answered, and the worker waits for.
func (p *modelProxy) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held > 0
}

// asked returns the calls so far, by episode.
func (p *modelProxy) asked() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int]int, len(p.calls))
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

// proc is an sgam child process (the test binary as the CLI) and its log.
type proc struct {
	name   string
	cmd    *exec.Cmd
	logs   *syncBuffer
	addr   string // a server's, from its log
	json   bool   // a server's log is JSON lines
	waited chan struct{}
	err    error
}

type procSet struct {
	mu    sync.Mutex
	procs []*proc
}

// start starts sgam with args; for a server, it waits for the address it
// announces.
func (ps *procSet) start(t *testing.T, name string, args []string, server bool) *proc {
	t.Helper()
	p := &proc{name: name, logs: &syncBuffer{}, json: server, waited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	ps.mu.Lock()
	ps.procs = append(ps.procs, p)
	ps.mu.Unlock()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.logs.Write(append(sc.Bytes(), '\n'))
			var line map[string]any
			if server && json.Unmarshal(sc.Bytes(), &line) == nil {
				if a, ok := line["addr"].(string); ok {
					select {
					case addrc <- a:
					default:
					}
				}
			}
		}
		p.err = p.cmd.Wait()
		close(p.waited)
	}()
	if server {
		select {
		case p.addr = <-addrc:
		case <-p.waited:
			t.Fatalf("%s exited: %v\n%s", name, p.err, p.logs.String())
		case <-time.After(time.Minute):
			t.Fatalf("%s did not announce its address:\n%s", name, p.logs.String())
		}
	}
	return p
}

// wait waits for the process to exit, and returns its error.
func (p *proc) wait() error {
	select {
	case <-p.waited:
		return p.err
	case <-time.After(time.Minute):
		return fmt.Errorf("%s did not exit within a minute", p.name)
	}
}

// errorLines returns the lines of its log at level ERROR.
func (p *proc) errorLines() []string {
	var out []string
	for _, l := range strings.Split(p.logs.String(), "\n") {
		var line map[string]any
		switch {
		case p.json && json.Unmarshal([]byte(l), &line) == nil:
			if line["level"] == "ERROR" {
				out = append(out, l)
			}
		case strings.Contains(l, "level=ERROR"):
			out = append(out, l)
		}
	}
	return out
}

func (ps *procSet) all() []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]*proc(nil), ps.procs...)
}

// kill kills the process with SIGKILL and waits for it to die.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.waited
	require.Error(t, p.err, "%s was killed", p.name)
}

// killAll kills what still runs, and shows every log when the test failed.
func (ps *procSet) killAll(t *testing.T) {
	for _, p := range ps.all() {
		p.cmd.Process.Kill()
		<-p.waited
		if t.Failed() {
			t.Logf("%s %v:\n%s", p.name, p.cmd.Args[1:], p.logs.String())
		}
	}
}
