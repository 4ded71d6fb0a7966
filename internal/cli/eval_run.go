package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) evalRunCommand() *cobra.Command {
	var lf llmFlags
	var record, rekey, live bool
	var mins, maxs []string
	var db string
	c := &cobra.Command{
		Use:   "run SCENARIO|DIR|LOCOMO.json...",
		Short: "Replay scenarios and score every stage: extraction, validation, the ledger, recall, tenants, forget",
		Long: `Replay each scenario (a YAML file, docs/eval.md; a directory: every scenario
in it) on a new temporary store: its episodes go through extraction, its
checkpoints read the ledger, its questions go to recall, its forget steps
delete; then score each stage: extraction precision, recall and F1 against
the gold candidates; rejections by reason; write errors; checkpoints passed;
stale answers (a value presented as current that the ledger does not hold
as current: must be 0); point-in-time accuracy; tenant leaks (must be 0);
evidence recall@k; model calls and tokens per episode; time per stage.

The model's answers come from the scenario's cassette (NAME.cassette.yaml
beside it): no model, no network, no tokens. --record asks the configured
model instead and writes a new cassette; --rekey keeps the cassette's
answers, by episode, and records them under the current prompts (for
answers written by hand, or after a prompt change you have reviewed);
--live asks the model and keeps nothing. A prompt the cassette does not
have stops the run, naming the episode.

A LoCoMo file (locomo10.json) runs as one more scenario: its questions'
evidence recall@10, no model.

Thresholds make the exit status fail a build: each scenario's own
(thresholds: in the file) and --min/--max on the total of the run; the
status is 1 when one fails, 2 for a bad file or flag.`,
		Example: `  sgam eval run eval/scenarios
  sgam eval run eval/scenarios/passport.yaml --json
  sgam eval run eval/scenarios --min extraction.f1=0.9 --max stale=0 --max leaks=0
  SGAM_LLM_BASE_URL=http://localhost:11434/v1 SGAM_LLM_MODEL=qwen2.5:7b sgam eval run my.yaml --record`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var t eval.Thresholds
			t.Min, t.Max = map[string]float64{}, map[string]float64{}
			if err := eval.ParseBounds("min", mins, t.Min); err != nil {
				return sgam.Errorf(sgam.Invalid, "--min", "%v", err)
			}
			if err := eval.ParseBounds("max", maxs, t.Max); err != nil {
				return sgam.Errorf(sgam.Invalid, "--max", "%v", err)
			}
			opts := eval.Options{Mode: eval.Replay}
			switch {
			case btoi(record)+btoi(rekey)+btoi(live) > 1:
				return sgam.Errorf(sgam.Invalid, "--record", "give one of --record, --rekey and --live")
			case record || live:
				m, err := lf.need()
				if err != nil {
					return err
				}
				opts.Model, opts.Mode = m, eval.Record
				if live {
					opts.Mode = eval.Live
				}
			case rekey:
				opts.Mode = eval.Rekey
			}
			scenarios, err := a.loadScenarios(args)
			if err != nil {
				return err
			}
			if db != "" {
				if len(scenarios) > 1 {
					return sgam.Errorf(sgam.Invalid, "--db", "keeps the store of one scenario; %d are given", len(scenarios))
				}
				if !store.IsPostgres(db) {
					if _, err := os.Stat(db); err == nil {
						return sgam.Errorf(sgam.Invalid, "--db", "%s exists; name a new file", db)
					}
				}
				opts.DB = db
			}
			start := time.Now()
			var reports []*eval.Report
			for _, sc := range scenarios {
				p := &phases{a: a, prefix: "eval " + sc.Name}
				o := opts
				o.Progress = func(done, total int) { p.update("steps", done, total) }
				r, err := eval.Run(a.ctx, sc, o)
				p.finish()
				if err != nil {
					return err
				}
				reports = append(reports, r)
			}
			sum := eval.Summarize(reports, t, time.Since(start))
			if err := a.show(sum, sum.Write); err != nil {
				return err
			}
			if !sum.OK() {
				return fmt.Errorf("thresholds failed: %s", strings.Join(sum.Failed(), "; "))
			}
			return nil
		},
	}
	lf.add(c)
	fs := c.Flags()
	fs.BoolVar(&record, "record", false, "ask the configured model and write the scenario's cassette anew")
	fs.BoolVar(&rekey, "rekey", false, "record the cassette's own answers, by episode, under the current prompts")
	fs.BoolVar(&live, "live", false, "ask the configured model and keep no cassette")
	fs.StringArrayVar(&mins, "min", nil, "METRIC=VALUE: fail unless the run's total metric is at least VALUE (repeatable)")
	fs.StringArrayVar(&maxs, "max", nil, "METRIC=VALUE: fail unless the run's total metric is at most VALUE (repeatable)")
	fs.StringVar(&db, "db", "", "run the one scenario on this new SQLite file or empty postgres:// database, and keep it")
	return c
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (a *app) evalInitCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented example scenario to start from (default scenario.yaml)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "scenario.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
			}
			if _, err := f.Write(eval.Example); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s: edit it, check it with 'sgam eval check %s', record its cassette with 'sgam eval run %s --record' and a model, or write the answers by hand and run --rekey\n", path, path, path)
			return nil
		},
	}
}

func (a *app) evalCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check SCENARIO|DIR...",
		Short: "Check scenario files and explain every problem with its line and path",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scenarios, err := a.loadScenarios(args)
			if err != nil {
				return err
			}
			for _, sc := range scenarios {
				cassette := "no cassette"
				if _, err := os.Stat(eval.CassettePath(sc.Path)); err == nil {
					cassette = "cassette " + eval.CassettePath(sc.Path)
				}
				fmt.Fprintf(a.stdout, "%s: ok: %s, %d steps, %d tenants, %s\n", sc.Path, sc.Name, len(sc.Steps), len(sc.Tenants), cassette)
			}
			return nil
		},
	}
}

// loadScenarios reads the scenario files named, those in the directories
// named, and LoCoMo files; every problem of a bad file is printed with its
// line.
func (a *app) loadScenarios(args []string) ([]*eval.Scenario, error) {
	var paths []string
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, sgam.Errorf(sgam.Invalid, "SCENARIO", "%v", err)
		}
		if !st.IsDir() {
			paths = append(paths, arg)
			continue
		}
		var found []string
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, _ := filepath.Glob(filepath.Join(arg, pat))
			for _, p := range m {
				if eval.IsScenario(p) {
					found = append(found, p)
				}
			}
		}
		if len(found) == 0 {
			return nil, sgam.Errorf(sgam.Invalid, "SCENARIO", "%s holds no scenario (*.yaml, but for *.cassette.yaml and *.schema.yaml)", arg)
		}
		slices.Sort(found)
		paths = append(paths, found...)
	}
	var out []*eval.Scenario
	for _, p := range paths {
		if isLoCoMo(p) {
			convs, err := locomo.Load(p)
			if err != nil {
				return nil, sgam.Errorf(sgam.Invalid, "SCENARIO", "%v", err)
			}
			out = append(out, eval.FromLoCoMo(p, convs))
			continue
		}
		sc, err := eval.Load(p)
		if err != nil {
			var pe *eval.ParseError
			if errors.As(err, &pe) {
				return nil, a.schemaProblems(p, err)
			}
			return nil, sgam.Errorf(sgam.Invalid, "SCENARIO", "%v", err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// isLoCoMo reports whether a file is a LoCoMo data set: JSON whose first
// character is the [ of its list of conversations.
func isLoCoMo(path string) bool {
	if !strings.HasSuffix(path, ".json") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	return strings.HasPrefix(strings.TrimSpace(string(buf[:n])), "[")
}
