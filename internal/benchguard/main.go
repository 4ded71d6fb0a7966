// Command benchguard compares a few benchmarks of the working tree with
// the same benchmarks of a recorded base commit, in one run on one
// machine, and fails when one got slower than a threshold allows: the
// point reads of the embedded store, a recall, and an extraction's
// pipeline cost. A 4.6× slower past-instant read once landed unnoticed
// (a partial index that made SQLite prepare every read again); this is
// the tripwire for that class of change. CI runs it (.ci/run):
//
//	go run ./internal/benchguard -base "$(cat .ci/bench-base)"
//
// It builds each package's test binary at both commits (the base in a
// temporary git worktree), runs them alternately, rounds times over, and
// compares the best time of each side: a noisy neighbour slows a run,
// never speeds one up. The figures and their ratio are printed whatever
// the verdict. To accept a change that is slower on purpose, or to lock
// in one that is faster, record its commit in .ci/bench-base.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// bench is one measure: a benchmark of a package's test binary, run with
// its arguments and environment, read by the metric it reports.
type bench struct {
	name   string
	pkg    string   // package path, relative to the module root
	args   []string // after -test.run X
	env    []string
	metric string // "ns/op", or a metric the benchmark reports
}

// benches are kept small, so that both sides run twice or more within a
// few minutes on two cores; what they guard is a cost per operation, which
// does not need a large store to show.
var benches = []bench{
	{"current Get (SQLite, cached)", "./store/sqlite", []string{"-test.bench", "^BenchmarkStore$/^GetCurrent/", "-sgam.facts=10000", "-test.benchtime", "200000x"}, nil, "ns/op"},
	{"Get at a past as_of (SQLite)", "./store/sqlite", []string{"-test.bench", "^BenchmarkStore$/^GetPastAsOf/", "-sgam.facts=10000", "-test.benchtime", "20000x"}, nil, "ns/op"},
	{"recall, lexical evidence (SQLite, 2,000 episodes)", "./internal/bench", []string{"-test.bench", "^BenchmarkRecall$", "-test.benchtime", "300x"}, []string{"SGAM_BENCH_EPISODES=2000"}, "ns/op"},
	{"extraction pipeline per episode (SQLite, 10,000 facts)", "./internal/bench", []string{"-test.bench", "^BenchmarkExtract$", "-test.benchtime", "400x"}, []string{"SGAM_BENCH_FACTS=10000"}, "us/episode"},
}

func main() {
	base := flag.String("base", "", "the commit to compare with (required)")
	threshold := flag.Float64("threshold", 1.5, "fail when the working tree's time is more than this times the base's")
	rounds := flag.Int("rounds", 3, "runs of each side, alternating")
	flag.Parse()
	if err := run(strings.TrimSpace(*base), *threshold, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "benchguard:", err)
		os.Exit(1)
	}
}

func run(base string, threshold float64, rounds int) error {
	if base == "" {
		return errors.New("-base is required: the commit to compare with (.ci/bench-base)")
	}
	if rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	dir, err := os.MkdirTemp("", "benchguard-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tree := filepath.Join(dir, "base")
	if out, err := exec.Command("git", "worktree", "add", "--detach", tree, base).CombinedOutput(); err != nil {
		return fmt.Errorf("check out the base %s: %v: %s", base, err, out)
	}
	defer exec.Command("git", "worktree", "remove", "--force", tree).Run()

	// One test binary per package and side.
	bins := map[string]string{}
	for _, b := range benches {
		for side, root := range map[string]string{"base": tree, "head": "."} {
			key := side + " " + b.pkg
			if bins[key] != "" {
				continue
			}
			bin := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(key)+".test")
			cmd := exec.Command("go", "test", "-c", "-o", bin, b.pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("build %s of %s: %v: %s", b.pkg, side, err, out)
			}
			bins[key] = bin
		}
	}

	var failed []string
	fmt.Printf("%-56s %14s %14s %7s\n", "measure (best of "+strconv.Itoa(rounds)+")", "base "+short(base), "this tree", "ratio")
	for _, b := range benches {
		best := map[string]float64{"base": math.Inf(1), "head": math.Inf(1)}
		for range rounds {
			for _, side := range []string{"base", "head"} {
				v, err := measure(bins[side+" "+b.pkg], b)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", b.name, side, err)
				}
				best[side] = min(best[side], v)
			}
		}
		ratio := best["head"] / best["base"]
		verdict := ""
		if ratio > threshold {
			verdict = fmt.Sprintf("  slower than %.2g× the base", threshold)
			failed = append(failed, b.name)
		}
		fmt.Printf("%-56s %14s %14s %6.2f×%s\n", b.name, figure(best["base"], b.metric), figure(best["head"], b.metric), ratio, verdict)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d measures are more than %.2g× slower than at %s: %s (find the cause; if the slowdown is wanted, record this commit in .ci/bench-base)",
			len(failed), threshold, short(base), strings.Join(failed, "; "))
	}
	return nil
}

// measure runs one benchmark once and returns its metric.
func measure(bin string, b bench) (float64, error) {
	args := append([]string{"-test.run", "X"}, b.args...)
	cmd := exec.Command(bin, args...)
	// The package's own folder: benchmarks that read files read them
	// there, as go test runs them.
	cmd.Dir = b.pkg
	cmd.Env = append(os.Environ(), b.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v after %s: %s", err, time.Since(start).Round(time.Second), tail(out.String()))
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] == b.metric {
				return strconv.ParseFloat(f[i], 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s in its output: %s", b.metric, tail(out.String()))
}

func figure(v float64, metric string) string {
	if metric == "ns/op" {
		return time.Duration(v).Round(100 * time.Nanosecond).String()
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + metric
}

func short(commit string) string { return commit[:min(len(commit), 9)] }

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
