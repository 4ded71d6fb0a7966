package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// HTTP phases, in the order RunHTTP runs them.
const (
	PhaseGetCurrent = "get_current" // GET /v1/subjects/{s}/attributes/{a}
	PhaseAssert     = "assert"      // POST /v1/facts, a new value for an existing key
	PhaseGetAsOf    = "get_as_of"   // the same GET with ?as_of= a past instant
	PhaseRecall     = "recall"      // POST /v1/recall, a question naming a subject and words it said
	// PhaseRecallInProcess asks the same questions of recall in this
	// process, over the same file, with as many workers and sgam serve's
	// bound on recalls at once: what HTTP costs above recall is the
	// difference.
	PhaseRecallInProcess = "recall_in_process"
)

// AttributesPerSubject is how many attributes each seeded subject has:
// --facts 1000000 seeds 100,000 subjects of 10 attributes.
const AttributesPerSubject = 10

// HTTPOptions select what `sgam bench http` measures.
type HTTPOptions struct {
	// DB is a postgres:// URL to bench PostgreSQL; empty benches a fresh
	// SQLite file in Dir.
	DB string
	// Dir holds the SQLite database and the server's log; a temporary
	// folder (removed afterwards) when empty.
	Dir string
	// Tenant the facts and the API key belong to; default "bench", with a
	// unique suffix on PostgreSQL so that runs against one database do not
	// meet.
	Tenant string
	// Facts seeded before the server starts: Facts/10 subjects of 10
	// attributes, one current value each. Default 1,000,000.
	Facts int
	// Concurrency is the number of client workers, each with its own
	// keep-alive connection. Default 16: on 2 cores more connections only
	// lengthen the queue (the same requests/s, a longer p99).
	Concurrency int
	// Duration of each measured phase (default 10 s), after Warmup of the
	// same requests (default Duration/5, at most 2 s) that is not counted.
	Duration, Warmup time.Duration
	// ServerCommand returns the command that runs `sgam ARGS...` in a new
	// process. Default: this executable (os.Executable) with ARGS.
	ServerCommand func(args ...string) *exec.Cmd
	Progress      Progress
}

// HTTPPhase is what one phase of load measured.
type HTTPPhase struct {
	Name     string  `json:"name"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"` // transport errors and answers other than 2xx
	PerS     float64 `json:"requests_per_s"`
	// Latency of each request, from sending it to reading its whole answer.
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// FirstError describes the first error, if any.
	FirstError string `json:"first_error,omitempty"`
	// The server's resident memory at the end of the phase, and its peak
	// (VmHWM) since it started, in bytes (Linux; 0 elsewhere).
	ServerRSS     int64 `json:"server_rss_bytes"`
	ServerPeakRSS int64 `json:"server_peak_rss_bytes"`
	// CPU seconds used during the phase by the server and by this process
	// (the load generator), over the phase's wall time: 2.0 is two full
	// cores (Linux; 0 elsewhere).
	ServerCPU float64 `json:"server_cpu_cores"`
	ClientCPU float64 `json:"client_cpu_cores"`
	// MachineCPU is the busy time of every CPU of the machine over the
	// phase, in cores: the server, the client, PostgreSQL's backends when
	// it is the store, and anything else running (a shared machine's noise).
	MachineCPU float64       `json:"machine_cpu_cores"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// HTTPResult is one run of RunHTTP.
type HTTPResult struct {
	Store       string        `json:"store"` // "sqlite" or "postgresql"
	Facts       int           `json:"facts"`
	Subjects    int           `json:"subjects"`
	Tenant      string        `json:"tenant"`
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"duration_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	CPUs        int           `json:"cpus"`
	// Seeding with AssertMany, 1,000 facts a batch, before the server runs.
	SeedFactsPerS float64 `json:"seed_facts_per_s"`
	// The server's resident memory once ready, before any load.
	ServerStartRSS int64       `json:"server_start_rss_bytes"`
	Phases         []HTTPPhase `json:"phases"`
	// ServerPeakRSS is the peak over the whole run (VmHWM before SIGTERM).
	ServerPeakRSS int64 `json:"server_peak_rss_bytes"`
	// ServerExit is how the server ended after SIGTERM ("exit status 0").
	ServerExit string `json:"server_exit"`
}

// Phase returns the named phase, or nil.
func (r *HTTPResult) Phase(name string) *HTTPPhase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// httpBase is the valid time of seeded fact 0; seeded fact i is valid from
// httpBase + i seconds. Asserts during the run are valid from a year later,
// each at its own instant, so that no two of them meet at one instant.
var httpBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RunHTTP seeds a store, serves it with `sgam serve` in a process of its
// own and drives that server over loopback from this process.
func RunHTTP(ctx context.Context, opts HTTPOptions) (res HTTPResult, err error) {
	if opts.Facts <= 0 {
		opts.Facts = 1_000_000
	}
	if opts.Facts < AttributesPerSubject || opts.Facts%AttributesPerSubject != 0 {
		return res, sgam.Errorf(sgam.Invalid, "facts", "must be a positive multiple of %d", AttributesPerSubject)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	if opts.Duration <= 0 {
		opts.Duration = 10 * time.Second
	}
	if opts.Warmup <= 0 {
		opts.Warmup = min(2*time.Second, opts.Duration/5)
	}
	if opts.Progress == nil {
		opts.Progress = func(string, int, int) {}
	}
	if opts.ServerCommand == nil {
		exe, err := os.Executable()
		if err != nil {
			return res, fmt.Errorf("find this executable to run the server: %w", err)
		}
		opts.ServerCommand = func(args ...string) *exec.Cmd { return exec.Command(exe, args...) }
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "sgam-bench-http-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		opts.Dir = dir
	} else if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return res, err
	}
	db := opts.DB
	res.Store = "sqlite"
	if store.IsPostgres(db) {
		res.Store = "postgresql"
	} else if db != "" {
		return res, sgam.Errorf(sgam.Invalid, "db", "must be empty (a fresh SQLite file) or a postgres:// URL")
	} else {
		db = filepath.Join(opts.Dir, "bench-http.db")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(db + suffix)
		}
	}
	if opts.Tenant == "" {
		opts.Tenant = "bench"
		if res.Store == "postgresql" {
			opts.Tenant = fmt.Sprintf("bench-%d", time.Now().UnixNano())
		}
	}
	if err := sgam.CheckTenant(opts.Tenant); err != nil {
		return res, err
	}
	res.Facts, res.Subjects, res.Tenant = opts.Facts, opts.Facts/AttributesPerSubject, opts.Tenant
	res.Concurrency, res.Duration, res.Warmup = opts.Concurrency, opts.Duration, opts.Warmup
	res.CPUs = runtime.NumCPU()

	token, questions, perS, err := seed(ctx, db, opts)
	if err != nil {
		return res, err
	}
	res.SeedFactsPerS = perS

	srv, err := startServer(ctx, db, opts)
	if err != nil {
		return res, err
	}
	defer func() {
		res.ServerPeakRSS = max(res.ServerPeakRSS, srv.peakRSS())
		exit, serr := srv.stop()
		res.ServerExit = exit
		if err == nil && serr != nil {
			err = serr
		}
	}()
	res.ServerStartRSS = srv.rss()

	l := newLoad(srv.url, token, opts)
	l.questions = questions
	n := opts.Facts
	asOf := httpBase.Add(time.Duration(n) * time.Second).Format(time.RFC3339)
	var written atomic.Int64
	phases := []struct {
		name string
		do   func(w *worker) error
	}{
		{PhaseGetCurrent, func(w *worker) error { return w.get(l, "") }},
		{PhaseAssert, func(w *worker) error { return w.assert(l, &written) }},
		{PhaseGetAsOf, func(w *worker) error { return w.get(l, "?as_of="+asOf) }},
		{PhaseRecall, func(w *worker) error { return w.recall(l) }},
		{PhaseRecallInProcess, func(w *worker) error { return w.recallInProcess(ctx, l) }},
	}
	// The in-process phase's own store, opened beside the server's (a
	// SQLite file or a PostgreSQL database is shared by processes).
	local, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		return res, err
	}
	defer local.Close()
	l.recaller = recall.New(local).WithConcurrency(recall.DefaultConcurrency(store.IsPostgres(db)))
	for _, p := range phases {
		ph, err := l.run(ctx, srv, p.name, p.do)
		if err != nil {
			return res, err
		}
		res.Phases = append(res.Phases, ph)
		res.ServerPeakRSS = max(res.ServerPeakRSS, ph.ServerPeakRSS)
		if err := srv.alive(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// seed writes opts.Facts facts with AssertMany, captures one episode per
// 100 facts (synthetic messages of the subjects, as `sgam bench recall`
// writes) for recall's evidence, and creates a write key. It returns the
// questions of the recall phase, one per episode.
func seed(ctx context.Context, db string, opts HTTPOptions) (token string, questions []string, perS float64, err error) {
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		return "", nil, 0, err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	n := opts.Facts
	phase := fmt.Sprintf("seeding %d facts (%d subjects × %d attributes)", n, n/AttributesPerSubject, AttributesPerSubject)
	batch := make([]sgam.Assertion, 0, 1000)
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		batch = batch[:0]
		for j := i; j < min(i+1000, n); j++ {
			batch = append(batch, sgam.Assertion{
				Key:       httpKey(opts.Tenant, j/AttributesPerSubject, j%AttributesPerSubject),
				Value:     []byte(`"v` + strconv.Itoa(j) + `"`),
				ValidFrom: httpBase.Add(time.Duration(j) * time.Second),
				Source:    "seed-" + strconv.Itoa(i/1000),
			})
		}
		if _, err := s.AssertMany(ctx, batch); err != nil {
			return "", nil, 0, fmt.Errorf("seed: %w", err)
		}
		opts.Progress(phase, i+len(batch), n)
	}
	perS = perSecond(n, time.Since(start))
	c := newCorpus(3)
	subjects := n / AttributesPerSubject
	episodes := max(1, n/100)
	phase = fmt.Sprintf("capturing %d episodes", episodes)
	errs := make(chan error, 64)
	for j := 0; j < episodes; j += 64 {
		k := min(64, episodes-j)
		for i := range k {
			e := c.episode(opts.Tenant, j+i)
			e.Content = fmt.Sprintf("s%d:%s", (j+i)%subjects, e.Content[strings.Index(e.Content, ":")+1:])
			questions = append(questions, strconv.Quote(c.question((j+i)%subjects, e)))
			go func() { _, err := s.AddEpisode(ctx, e); errs <- err }()
		}
		for range k {
			if err := <-errs; err != nil {
				return "", nil, 0, fmt.Errorf("seed: %w", err)
			}
		}
		opts.Progress(phase, j+k, episodes)
	}
	token, _, err = s.CreateKey(ctx, opts.Tenant, sgam.RoleWrite, "sgam bench http")
	return token, questions, perS, err
}

func httpKey(tenant string, subject, attribute int) sgam.Key {
	return sgam.Key{Tenant: tenant, Subject: "s" + strconv.Itoa(subject), Attribute: "a" + strconv.Itoa(attribute)}
}

// server is `sgam serve` in its own process.
type server struct {
	cmd  *exec.Cmd
	log  string // its standard error: one JSON line per request
	url  string // http://127.0.0.1:PORT
	done chan struct{}
	err  error // how it ended, once done is closed
}

// startServer runs `sgam --db DB serve --addr 127.0.0.1:0 --rate-limit 0`,
// learns its port from its "serving" log line and waits for /readyz.
func startServer(ctx context.Context, db string, opts HTTPOptions) (*server, error) {
	s := &server{log: filepath.Join(opts.Dir, "server.log"), done: make(chan struct{})}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s.cmd = opts.ServerCommand("--db", db, "serve", "--addr", "127.0.0.1:0", "--rate-limit", "0")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server: %w", err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	opts.Progress("starting the server", 0, 1)
	deadline := time.Now().Add(time.Minute)
	for s.url == "" {
		if addr := servingAddr(s.log); addr != "" {
			s.url = "http://" + addr
			break
		}
		if err := s.wait(ctx, deadline); err != nil {
			return nil, err
		}
	}
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				opts.Progress("starting the server", 1, 1)
				return s, nil
			}
		}
		if err := s.wait(ctx, deadline); err != nil {
			return nil, err
		}
	}
}

// wait sleeps a little, or stops the server and fails when it ended, ctx
// is done or deadline passed.
func (s *server) wait(ctx context.Context, deadline time.Time) error {
	select {
	case <-s.done:
		return fmt.Errorf("the server ended before it was ready (%v): %s", s.err, s.logTail())
	case <-ctx.Done():
		s.stop()
		return ctx.Err()
	case <-time.After(20 * time.Millisecond):
	}
	if time.Now().After(deadline) {
		s.stop()
		return fmt.Errorf("the server was not ready within a minute: %s", s.logTail())
	}
	return nil
}

// servingAddr finds the address in the server's "serving" log line.
func servingAddr(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" && line.Addr != "" {
			return line.Addr
		}
	}
	return ""
}

// alive fails if the server has ended.
func (s *server) alive() error {
	select {
	case <-s.done:
		return fmt.Errorf("the server ended during the run (%v): %s", s.err, s.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM and waits (SIGKILL after 30 s); it returns how the
// server ended, and an error if it did not end cleanly.
func (s *server) stop() (string, error) {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			return "killed after 30 s", errors.New("the server did not stop within 30 s of SIGTERM")
		}
	}
	if s.err != nil {
		return s.err.Error(), fmt.Errorf("the server ended with %v: %s", s.err, s.logTail())
	}
	return "exit status 0", nil
}

// logTail is the end of the server's log, for error messages.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

func (s *server) rss() int64     { return procStatus(s.cmd.Process.Pid, "VmRSS:") }
func (s *server) peakRSS() int64 { return procStatus(s.cmd.Process.Pid, "VmHWM:") }

// procStatus reads a field in kB from /proc/PID/status, in bytes (0 when
// there is no /proc).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the user and system CPU time a process used so far, from
// /proc/PID/stat (0 when there is no /proc).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields start after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// machineBusy is the time every CPU of the machine spent busy so far (all
// but idle and iowait), from /proc/stat (0 when there is no /proc).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:8] { // user nice system idle iowait irq softirq
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100
}

// load drives the server. Each worker holds one keep-alive connection and
// writes its requests as raw HTTP/1.1, parsing answers with
// http.ReadResponse: a lean client (as wrk is), so that the load generator
// takes less of the 2 cores the server needs than net/http's Transport,
// whose per-connection goroutines cost about as much CPU as the server.
type load struct {
	addr      string // 127.0.0.1:PORT
	auth      string
	opts      HTTPOptions
	subs      int
	questions []string // of the recall phase, JSON strings
	recaller  *recall.Recaller
}

func newLoad(url, token string, opts HTTPOptions) *load {
	return &load{addr: strings.TrimPrefix(url, "http://"), auth: "Bearer " + token, opts: opts,
		subs: opts.Facts / AttributesPerSubject}
}

// worker is one client goroutine.
type worker struct {
	id       int
	rng      *rand.Rand
	conn     net.Conn
	br       *bufio.Reader
	req      []byte
	buf      bytes.Buffer
	body     []byte
	lat      []time.Duration
	errs     int
	firstErr string
}

// run runs do on every worker for the warm-up, then for the measured
// duration, and sums up.
func (l *load) run(ctx context.Context, srv *server, name string, do func(w *worker) error) (HTTPPhase, error) {
	ws := make([]*worker, l.opts.Concurrency)
	for i := range ws {
		ws[i] = &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(len(name))))}
	}
	loop := func(label string, d time.Duration) (time.Duration, error) {
		for _, w := range ws {
			w.lat, w.errs, w.firstErr = w.lat[:0], 0, ""
		}
		start := time.Now()
		deadline := start.Add(d)
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil && time.Now().Before(deadline) {
					t0 := time.Now()
					err := do(w)
					w.lat = append(w.lat, time.Since(t0))
					if err != nil {
						w.errs++
						if w.firstErr == "" {
							w.firstErr = err.Error()
						}
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		total := int(d / time.Millisecond)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				l.opts.Progress(label, total, total)
				return time.Since(start), ctx.Err()
			case <-tick.C:
				l.opts.Progress(label, int(time.Since(start)/time.Millisecond), total)
			}
		}
	}
	label := map[string]string{
		PhaseGetCurrent:      "current-state GET",
		PhaseAssert:          "assert (POST /v1/facts)",
		PhaseGetAsOf:         "GET at a past as_of",
		PhaseRecall:          "recall (POST /v1/recall)",
		PhaseRecallInProcess: "recall in process",
	}[name]
	if _, err := loop(label+", warm-up", l.opts.Warmup); err != nil {
		return HTTPPhase{}, err
	}
	defer func() {
		for _, w := range ws {
			if w.conn != nil {
				w.conn.Close()
			}
		}
	}()
	pid := srv.cmd.Process.Pid
	srvCPU, ownCPU, allCPU := cpuTime(pid), cpuTime(os.Getpid()), machineBusy()
	elapsed, err := loop(label, l.opts.Duration)
	if err != nil {
		return HTTPPhase{}, err
	}
	p := HTTPPhase{Name: name, Elapsed: elapsed,
		ServerCPU:  (cpuTime(pid) - srvCPU).Seconds() / elapsed.Seconds(),
		ClientCPU:  (cpuTime(os.Getpid()) - ownCPU).Seconds() / elapsed.Seconds(),
		MachineCPU: (machineBusy() - allCPU).Seconds() / elapsed.Seconds(),
		ServerRSS:  srv.rss(), ServerPeakRSS: srv.peakRSS()}
	var lat []time.Duration
	for _, w := range ws {
		lat = append(lat, w.lat...)
		p.Errors += w.errs
		if p.FirstError == "" {
			p.FirstError = w.firstErr
		}
	}
	p.Requests = len(lat)
	if p.Requests == 0 {
		return p, fmt.Errorf("%s: no request finished in %v", name, l.opts.Duration)
	}
	slices.Sort(lat)
	p.PerS = perSecond(p.Requests, elapsed)
	p.P50, p.P90, p.P99, p.Max = lat[len(lat)/2], lat[len(lat)*90/100], lat[len(lat)*99/100], lat[len(lat)-1]
	return p, nil
}

// get reads a random key's value (query: "" or "?as_of=...").
func (w *worker) get(l *load, query string) error {
	b := append(w.req[:0], "GET /v1/subjects/s"...)
	b = strconv.AppendInt(b, int64(w.rng.IntN(l.subs)), 10)
	b = append(b, "/attributes/a"...)
	b = strconv.AppendInt(b, int64(w.rng.IntN(AttributesPerSubject)), 10)
	b = append(b, query...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, l.addr...)
	b = append(b, "\r\nAuthorization: "...)
	b = append(b, l.auth...)
	b = append(b, "\r\n\r\n"...)
	w.req = b
	return w.do(l, `"fact":{`)
}

// assert writes a new value for a random key, each at its own instant a
// year after the seeded ones, citing the worker's source episode.
func (w *worker) assert(l *load, written *atomic.Int64) error {
	n := written.Add(1)
	b := w.body[:0]
	b = append(b, `{"subject":"s`...)
	b = strconv.AppendInt(b, int64(w.rng.IntN(l.subs)), 10)
	b = append(b, `","attribute":"a`...)
	b = strconv.AppendInt(b, int64(w.rng.IntN(AttributesPerSubject)), 10)
	b = append(b, `","value":"w`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, `","valid_from":"`...)
	b = httpBase.AddDate(1, 0, 0).Add(time.Duration(n)*time.Second).AppendFormat(b, time.RFC3339)
	b = append(b, `","source":"bench-http-`...)
	b = strconv.AppendInt(b, int64(w.id), 10)
	b = append(b, `"}`...)
	w.body = b
	return w.post(l, "/v1/facts", `"fact"`)
}

// post sends w.body to path with a POST and checks that the answer holds
// want.
func (w *worker) post(l *load, path, want string) error {
	r := append(w.req[:0], "POST "...)
	r = append(r, path...)
	r = append(r, " HTTP/1.1\r\nHost: "...)
	r = append(r, l.addr...)
	r = append(r, "\r\nAuthorization: "...)
	r = append(r, l.auth...)
	r = append(r, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	r = strconv.AppendInt(r, int64(len(w.body)), 10)
	r = append(r, "\r\n\r\n"...)
	w.req = append(r, w.body...)
	return w.do(l, want)
}

// recallInProcess asks one of the questions of recall in this process.
func (w *worker) recallInProcess(ctx context.Context, l *load) error {
	q, err := strconv.Unquote(l.questions[w.rng.IntN(len(l.questions))])
	if err != nil {
		return err
	}
	_, err = l.recaller.Recall(ctx, recall.Query{Tenant: l.opts.Tenant, Question: q})
	return err
}

// recall asks one of the questions with POST /v1/recall.
func (w *worker) recall(l *load) error {
	b := append(w.body[:0], `{"question":`...)
	b = append(b, l.questions[w.rng.IntN(len(l.questions))]...)
	b = append(b, '}')
	w.body = b
	return w.post(l, "/v1/recall", `"rendered"`)
}

// do sends the request in w.req on the worker's connection (dialling one
// when it has none) and reads its answer, which must be a 2xx containing
// want. After an error the connection is dropped.
func (w *worker) do(l *load, want string) error {
	err := w.roundTrip(l, want)
	if err != nil && w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
	return err
}

func (w *worker) roundTrip(l *load, want string) error {
	if w.conn == nil {
		c, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
		if err != nil {
			return err
		}
		w.conn, w.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	w.conn.SetDeadline(time.Now().Add(30 * time.Second))
	line := w.req[:bytes.IndexByte(w.req, '\r')]
	if _, err := w.conn.Write(w.req); err != nil {
		return fmt.Errorf("%s: %w", line, err)
	}
	resp, err := http.ReadResponse(w.br, nil)
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", line, err)
	}
	w.buf.Reset()
	_, err = w.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return fmt.Errorf("%s: reading the answer: %w", line, err)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s: %s: %.300s", line, resp.Status, bytes.TrimSpace(w.buf.Bytes()))
	case !bytes.Contains(w.buf.Bytes(), []byte(want)):
		return fmt.Errorf("%s: the answer has no %s: %.300s", line, want, bytes.TrimSpace(w.buf.Bytes()))
	}
	if resp.Close { // the server will not reuse the connection
		w.conn.Close()
		w.conn = nil
	}
	return nil
}
