package bench_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/sgam-dev/sgam/internal/bench"
	"github.com/sgam-dev/sgam/internal/cli"
)

// serverEnv makes the test binary run the sgam command line (the server)
// instead of the tests: RunHTTP's server is this binary in a new process.
const serverEnv = "SGAM_BENCH_HTTP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestRunHTTP(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	res, err := bench.RunHTTP(context.Background(), bench.HTTPOptions{
		Dir:         t.TempDir(),
		Facts:       2000,
		Concurrency: 4,
		Duration:    700 * time.Millisecond,
		Warmup:      100 * time.Millisecond,
		ServerCommand: func(args ...string) *exec.Cmd {
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), serverEnv+"=1")
			return cmd
		},
		Progress: func(phase string, done, total int) {
			if len(phases) == 0 || phases[len(phases)-1] != phase {
				phases = append(phases, phase)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Store != "sqlite" || res.Facts != 2000 || res.Subjects != 200 || res.ServerExit != "exit status 0" {
		t.Errorf("result: store %q, %d facts, %d subjects, server exit %q", res.Store, res.Facts, res.Subjects, res.ServerExit)
	}
	if res.SeedFactsPerS <= 0 {
		t.Errorf("seeding: %.0f facts/s", res.SeedFactsPerS)
	}
	want := []string{bench.PhaseGetCurrent, bench.PhaseAssert, bench.PhaseGetAsOf, bench.PhaseRecall, bench.PhaseRecallInProcess}
	if len(res.Phases) != len(want) {
		t.Fatalf("%d phases, want %v", len(res.Phases), want)
	}
	for i, p := range res.Phases {
		if p.Name != want[i] {
			t.Errorf("phase %d is %s, want %s", i, p.Name, want[i])
		}
		if p.Errors != 0 {
			t.Errorf("%s: %d errors of %d requests, first: %s", p.Name, p.Errors, p.Requests, p.FirstError)
		}
		// Recall runs SQLite's FTS5 and the tokenizer: under -race (as CI
		// runs the tests) a request takes ~200 ms, so few finish in 700 ms.
		least := 10
		if p.Name == bench.PhaseRecall || p.Name == bench.PhaseRecallInProcess {
			least = 2
		}
		if p.Requests < least || p.PerS <= 0 || p.Elapsed < 700*time.Millisecond {
			t.Errorf("%s: %d requests, %.0f/s in %v", p.Name, p.Requests, p.PerS, p.Elapsed)
		}
		if !(0 < p.P50 && p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.Max && p.Max < 10*time.Second) {
			t.Errorf("%s: latencies p50 %v p90 %v p99 %v max %v", p.Name, p.P50, p.P90, p.P99, p.Max)
		}
		if runtime.GOOS == "linux" && p.Name == bench.PhaseRecallInProcess && p.ClientCPU <= 0 {
			t.Errorf("%s: this process used %.2f cores", p.Name, p.ClientCPU)
		}
		if runtime.GOOS == "linux" && p.Name != bench.PhaseRecallInProcess && (p.ServerRSS <= 0 || p.ServerPeakRSS < p.ServerRSS || p.ServerCPU <= 0) {
			t.Errorf("%s: server RSS %d, peak %d, CPU %.2f cores", p.Name, p.ServerRSS, p.ServerPeakRSS, p.ServerCPU)
		}
	}
	if runtime.GOOS == "linux" && (res.ServerStartRSS <= 0 || res.ServerPeakRSS < res.ServerStartRSS) {
		t.Errorf("server RSS at start %d, peak %d", res.ServerStartRSS, res.ServerPeakRSS)
	}
	if len(phases) < 7 { // seeding, starting, and a warm-up and a measure per phase
		t.Errorf("progress phases: %q", phases)
	}
}

func TestRunHTTPRefusesSQLitePath(t *testing.T) {
	_, err := bench.RunHTTP(context.Background(), bench.HTTPOptions{DB: "some.db", Dir: t.TempDir(), Facts: 1000})
	if err == nil {
		t.Fatal("RunHTTP took a SQLite --db path")
	}
}
