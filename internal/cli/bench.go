package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/bench"
)

func (a *app) benchCommand() *cobra.Command {
	var opts bench.Options
	var noReference bool
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure the embedded store beside the reference recipe, in one run",
		Long: `Measure the embedded SQLite store (always a fresh one: --db is not used) on
the reference recipe's workload (fact i
sets subject i % 1000 from an instant later than every earlier fact, so each
write after the first thousand closes the subject's open value): one fact per
transaction, one fact per Assert from 16 goroutines at once (which the store
commits together), batches of 1,000, and reads; and run the
reference recipe (../shared/bench/reference_recipe.py, one fact per
transaction, SQLite from Python) with the same number of facts in the same
run, when python3 and the recipe are there. Prints rates and ratios.

Both use a file database in WAL mode with synchronous=NORMAL. Databases go
to a temporary folder (--dir to keep them). --big adds a second, larger
store to check that the cost per operation grows slowly with size.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Facts < 1000 || opts.Facts%1000 != 0 {
				return sgam.Errorf(sgam.Invalid, "--facts", "must be a positive multiple of 1000")
			}
			if opts.BigFacts != 0 && (opts.BigFacts < opts.Facts || opts.BigFacts%1000 != 0) {
				return sgam.Errorf(sgam.Invalid, "--big", "must be 0 or a multiple of 1000 no smaller than --facts")
			}
			if noReference {
				opts.Reference = ""
			} else if _, err := os.Stat(opts.Reference); err != nil {
				fmt.Fprintf(a.stderr, "bench: no reference recipe at %s; measuring sgam alone\n", opts.Reference)
				opts.Reference = ""
			}
			progress := &phases{a: a, prefix: "bench"}
			opts.Progress = progress.update
			res, err := bench.Run(a.ctx, opts)
			progress.finish()
			if err != nil {
				return err
			}
			return a.show(res, func(io.Writer) error {
				printBench(a, res)
				return nil
			})
		},
	}
	c.AddCommand(a.benchHTTPCommand(), a.benchExtractCommand(), a.benchRecallCommand())
	f := c.Flags()
	f.IntVar(&opts.Facts, "facts", 100_000, "facts in the store (and for the reference recipe)")
	f.IntVar(&opts.BigFacts, "big", 0, "also measure a store of this many facts (e.g. 1000000)")
	f.IntVar(&opts.Reads, "reads", 100_000, "reads per read measurement")
	f.StringVar(&opts.Dir, "dir", "", "keep the databases in this folder")
	f.StringVar(&opts.Reference, "reference", filepath.Join("..", "shared", "bench", "reference_recipe.py"), "path of the reference recipe")
	f.StringVar(&opts.Python, "python", "python3", "python interpreter for the reference recipe")
	f.BoolVar(&noReference, "no-reference", false, "do not run the reference recipe")
	return c
}

func printBench(a *app, r bench.Result) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	ratio := func(ours, theirs float64) string {
		if theirs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f×", ours/theirs)
	}
	var refW, refR float64
	if r.Reference != nil {
		refW, refR = r.Reference.WritesPerS, r.Reference.AsOfReadsPerS
	}
	b := r.Base
	fmt.Fprintf(a.stdout, "sgam bench: %d facts, SQLite file in WAL, synchronous=NORMAL\n\n", b.Facts)
	fmt.Fprintln(w, "measure\tsgam\treference\tratio\t")
	fmt.Fprintf(w, "one fact per transaction (facts/s)\t%.0f\t%.0f\t%s\t\n", b.SingleWritesPerS, refW, ratio(b.SingleWritesPerS, refW))
	fmt.Fprintf(w, "one fact per Assert, %d writers (facts/s)\t%.0f\t%.0f\t%s\t\n", b.Writers, b.ConcurrentWritesPerS, refW, ratio(b.ConcurrentWritesPerS, refW))
	fmt.Fprintf(w, "AssertMany ×1000, replacing (facts/s)\t%.0f\t\t\t\n", b.BatchReplacePerS)
	fmt.Fprintf(w, "AssertMany ×1000, new keys (facts/s)\t%.0f\t\t\t\n", b.BatchLoadPerS)
	fmt.Fprintf(w, "current Get, cached (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetCurrentPerS, refR, ratio(b.GetCurrentPerS, refR))
	fmt.Fprintf(w, "current Get, SQLite (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetCurrentSQLPerS, refR, ratio(b.GetCurrentSQLPerS, refR))
	fmt.Fprintf(w, "Get at a past as_of (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetPastPerS, refR, ratio(b.GetPastPerS, refR))
	fmt.Fprintf(w, "Get at a past as_of p50 / p99\t%s / %s\t\t\t\n", b.GetPastP50.Round(time.Microsecond), b.GetPastP99.Round(time.Microsecond))
	w.Flush()
	if r.Reference == nil {
		fmt.Fprintln(a.stdout, "\n(reference recipe not run: no python3 or no recipe)")
	}
	if r.Big == nil {
		return
	}
	g := r.Big
	fmt.Fprintf(a.stdout, "\nscale: cost per operation at %d facts against %d (1.0× = no slower)\n\n", g.Facts, b.Facts)
	w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	cost := func(small, big float64) string { return ratio(small, big) }
	fmt.Fprintf(w, "measure\t%d\t%d\tcost ratio\t\n", b.Facts, g.Facts)
	fmt.Fprintf(w, "one fact per transaction (facts/s)\t%.0f\t%.0f\t%s\t\n", b.SingleWritesPerS, g.SingleWritesPerS, cost(b.SingleWritesPerS, g.SingleWritesPerS))
	fmt.Fprintf(w, "one fact per Assert, %d writers (facts/s)\t%.0f\t%.0f\t%s\t\n", b.Writers, b.ConcurrentWritesPerS, g.ConcurrentWritesPerS, cost(b.ConcurrentWritesPerS, g.ConcurrentWritesPerS))
	fmt.Fprintf(w, "AssertMany ×1000, replacing (facts/s)\t%.0f\t%.0f\t%s\t\n", b.BatchReplacePerS, g.BatchReplacePerS, cost(b.BatchReplacePerS, g.BatchReplacePerS))
	fmt.Fprintf(w, "AssertMany ×1000, new keys (facts/s)\t%.0f\t%.0f\t%s\t\n", b.BatchLoadPerS, g.BatchLoadPerS, cost(b.BatchLoadPerS, g.BatchLoadPerS))
	fmt.Fprintf(w, "current Get, cached (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetCurrentPerS, g.GetCurrentPerS, cost(b.GetCurrentPerS, g.GetCurrentPerS))
	fmt.Fprintf(w, "current Get, SQLite (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetCurrentSQLPerS, g.GetCurrentSQLPerS, cost(b.GetCurrentSQLPerS, g.GetCurrentSQLPerS))
	fmt.Fprintf(w, "Get at a past as_of (reads/s)\t%.0f\t%.0f\t%s\t\n", b.GetPastPerS, g.GetPastPerS, cost(b.GetPastPerS, g.GetPastPerS))
	fmt.Fprintf(w, "Get at a past as_of p99\t%s\t%s\t\t\n", b.GetPastP99.Round(time.Microsecond), g.GetPastP99.Round(time.Microsecond))
	w.Flush()
}
