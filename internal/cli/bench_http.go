package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/bench"
	"github.com/sgam-dev/sgam/store"
)

// The targets of `sgam bench http` (issues 5, 12 and 26), for the SQLite
// store on a 2-core machine; PostgreSQL's figures are reported beside them.
const (
	targetGetPerS    = 10_000
	targetGetP99     = 10 * time.Millisecond
	targetAssertPerS = 3_000
	targetRecallPerS = 1_000
	targetRecallP99  = 25 * time.Millisecond
	targetPeakRSS    = 300 << 20
)

// benchCheck is one line of the table: a measure, its value and its target.
type benchCheck struct {
	Measure string `json:"measure"`
	Value   string `json:"value"`
	Target  string `json:"target,omitempty"`
	OK      *bool  `json:"ok,omitempty"` // nil: no target
}

func (a *app) benchHTTPCommand() *cobra.Command {
	var opts bench.HTTPOptions
	c := &cobra.Command{
		Use:   "http",
		Short: "Measure `sgam serve` over loopback: requests/s, latency, errors, server memory",
		Long: `Seed a store with --facts facts (--facts/10 subjects of 10 attributes each,
written with AssertMany), create a write API key, start 'sgam serve' on
127.0.0.1 (a free port) with --rate-limit 0 as a separate process (this same
executable), and drive it from this process with --concurrency workers over
keep-alive connections. Each phase runs for --warmup (not counted), then for
--duration:

  get_current  GET /v1/subjects/{s}/attributes/{a} of random seeded keys
  assert       POST /v1/facts: a new value for a random key, each at its own
               valid_from, citing a source episode
  get_as_of    the same GET with ?as_of= a past instant
  recall       POST /v1/recall: a question naming a random subject and words
               of one of the --facts/100 episodes seeded beside the facts
               (exact state of its 10 attributes, 5 evidence episodes)
  recall in process
               the same questions asked of recall in this process, over the
               same file, with as many workers: what HTTP adds is the
               difference

For each phase it reports requests/s, latency of every request (p50, p90,
p99, max: from sending the request to reading its whole answer), errors
(transport errors and any answer other than 2xx), the CPU used by the
server, by this process and by the whole machine (in cores: on PostgreSQL,
the machine's figure includes its backends), and the server's resident
memory (VmRSS, and its peak VmHWM, from /proc) after the phase. The server
stops with SIGTERM.

Targets (SQLite store, 1,000,000 facts, a 2-core machine): current-state
GET at least 10,000 requests/s with p99 under 10 ms; asserts at least 3,000
requests/s; recall at least 1,000 requests/s with p99 under 25 ms; zero
errors; server peak resident memory under 300 MiB. The
same targets are shown for PostgreSQL, whose figures are reported beside
them.

The SQLite database is a fresh file in --dir (a temporary folder, removed
afterwards, when empty); --db is used only as a postgres:// URL, to bench
PostgreSQL: the facts go to a new tenant (bench-<nanoseconds>) that is left
in that database, so use a throwaway one. The load generator shares the
machine with the server: on 2 cores, the figures are what one client
process can get from one server process.`,
		Example: `  sgam bench http                                   # SQLite, 1,000,000 facts
  sgam bench http --facts 100000 --duration 5s --concurrency 16
  sgam --db 'postgres://sgam_app:...@127.0.0.1:5432/bench' bench http --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Facts < 1000 || opts.Facts%1000 != 0 {
				return sgam.Errorf(sgam.Invalid, "--facts", "must be a positive multiple of 1000")
			}
			if opts.Concurrency < 1 || opts.Concurrency > 4096 {
				return sgam.Errorf(sgam.Invalid, "--concurrency", "must be between 1 and 4096")
			}
			if opts.Duration < 100*time.Millisecond {
				return sgam.Errorf(sgam.Invalid, "--duration", "must be at least 100ms")
			}
			if opts.Warmup < 0 {
				return sgam.Errorf(sgam.Invalid, "--warmup", "must not be negative")
			}
			switch {
			case store.IsPostgres(a.db):
				opts.DB = a.db
			case cmd.Flags().Changed("db"):
				return sgam.Errorf(sgam.Invalid, "--db", "sgam bench http benches a fresh SQLite file in --dir; give --db only as a postgres:// URL")
			}
			progress := &phases{a: a, prefix: "bench http"}
			opts.Progress = progress.update
			res, err := bench.RunHTTP(a.ctx, opts)
			progress.finish()
			if err != nil {
				return err
			}
			checks := benchHTTPChecks(res)
			return a.show(map[string]any{"result": res, "checks": checks}, func(io.Writer) error {
				printBenchHTTP(a, res, checks)
				return nil
			})
		},
	}
	f := c.Flags()
	f.IntVar(&opts.Facts, "facts", 1_000_000, "facts in the store (a multiple of 1000; subjects = facts/10)")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time of each phase")
	f.DurationVar(&opts.Warmup, "warmup", 0, "unmeasured time before each phase (default: duration/5, at most 2s)")
	f.IntVar(&opts.Concurrency, "concurrency", 16, "concurrent client workers, one keep-alive connection each")
	f.StringVar(&opts.Dir, "dir", "", "keep the SQLite database and the server's log in this folder")
	return c
}

// benchHTTPChecks turns a result into the table's lines.
func benchHTTPChecks(r bench.HTTPResult) []benchCheck {
	var out []benchCheck
	add := func(measure, value, target string, ok *bool) {
		out = append(out, benchCheck{Measure: measure, Value: value, Target: target, OK: ok})
	}
	yes := func(b bool) *bool { return &b }
	label := map[string]string{
		bench.PhaseGetCurrent:      "current-state GET",
		bench.PhaseAssert:          "assert (POST /v1/facts)",
		bench.PhaseGetAsOf:         "GET at a past as_of",
		bench.PhaseRecall:          "recall (POST /v1/recall)",
		bench.PhaseRecallInProcess: "recall in process (the same questions, no HTTP)",
	}
	add("seeding with AssertMany ×1000, facts/s", fmt.Sprintf("%.0f", r.SeedFactsPerS), "", nil)
	add("server RSS when ready", mib(r.ServerStartRSS), "", nil)
	for _, p := range r.Phases {
		l := label[p.Name]
		if p.Name == bench.PhaseRecallInProcess {
			add(l+", recalls/s", fmt.Sprintf("%.0f", p.PerS), "", nil)
			add(l+", p50 / p99", fmt.Sprintf("%s / %s", ms(p.P50), ms(p.P99)), "", nil)
			add(l+", errors", fmt.Sprintf("%d of %d", p.Errors, p.Requests), "0", yes(p.Errors == 0))
			add(l+", CPU this process / machine (cores)", fmt.Sprintf("%.2f / %.2f", p.ClientCPU, p.MachineCPU), "", nil)
			continue
		}
		switch p.Name {
		case bench.PhaseGetCurrent:
			add(l+", requests/s", fmt.Sprintf("%.0f", p.PerS), fmt.Sprintf("≥ %d", targetGetPerS), yes(p.PerS >= targetGetPerS))
		case bench.PhaseAssert:
			add(l+", requests/s", fmt.Sprintf("%.0f", p.PerS), fmt.Sprintf("≥ %d", targetAssertPerS), yes(p.PerS >= targetAssertPerS))
		case bench.PhaseRecall:
			add(l+", requests/s", fmt.Sprintf("%.0f", p.PerS), fmt.Sprintf("≥ %d", targetRecallPerS), yes(p.PerS >= targetRecallPerS))
		default:
			add(l+", requests/s", fmt.Sprintf("%.0f", p.PerS), "", nil)
		}
		add(l+", p50 / p90", fmt.Sprintf("%s / %s", ms(p.P50), ms(p.P90)), "", nil)
		switch p.Name {
		case bench.PhaseGetCurrent:
			add(l+", p99", ms(p.P99), "< "+ms(targetGetP99), yes(p.P99 < targetGetP99))
		case bench.PhaseRecall:
			add(l+", p99", ms(p.P99), "< "+ms(targetRecallP99), yes(p.P99 < targetRecallP99))
		default:
			add(l+", p99", ms(p.P99), "", nil)
		}
		add(l+", max", ms(p.Max), "", nil)
		add(l+", errors", fmt.Sprintf("%d of %d", p.Errors, p.Requests), "0", yes(p.Errors == 0))
		add(l+", CPU server / client / machine (cores)", fmt.Sprintf("%.2f / %.2f / %.2f", p.ServerCPU, p.ClientCPU, p.MachineCPU), "", nil)
		add(l+", server RSS after / peak", fmt.Sprintf("%s / %s", mib(p.ServerRSS), mib(p.ServerPeakRSS)), "", nil)
	}
	add("server peak RSS (VmHWM)", mib(r.ServerPeakRSS), fmt.Sprintf("< %d MiB", targetPeakRSS>>20), yes(r.ServerPeakRSS > 0 && r.ServerPeakRSS < targetPeakRSS))
	return out
}

func printBenchHTTP(a *app, r bench.HTTPResult, checks []benchCheck) {
	name := map[string]string{"sqlite": "SQLite (a fresh file, WAL)", "postgresql": "PostgreSQL (tenant " + r.Tenant + ")"}[r.Store]
	fmt.Fprintf(a.stdout, "sgam bench http: %s, %d facts (%d subjects × %d attributes)\n", name, r.Facts, r.Subjects, bench.AttributesPerSubject)
	fmt.Fprintf(a.stdout, "server: sgam serve in its own process, --rate-limit 0; client: %d workers over keep-alive loopback connections\n", r.Concurrency)
	fmt.Fprintf(a.stdout, "each phase: %s warm-up, then %s measured; %d CPUs shared by server and client\n\n", r.Warmup, r.Duration, r.CPUs)
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "measure\tvalue\ttarget\tok")
	for _, c := range checks {
		ok := ""
		if c.OK != nil {
			ok = map[bool]string{true: "yes", false: "NO"}[*c.OK]
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Measure, c.Value, c.Target, ok)
	}
	w.Flush()
	if r.Store == "postgresql" {
		fmt.Fprintf(a.stdout, "\n(targets are the SQLite store's; server RSS is sgam's alone, not PostgreSQL's. Tenant %s is left in the database.)\n", r.Tenant)
	}
}

// ms formats a latency in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// mib formats bytes in MiB.
func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
