package cli

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/bench"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) benchRecallCommand() *cobra.Command {
	var opts bench.RecallOptions
	var pg string
	c := &cobra.Command{
		Use:   "recall",
		Short: "Measure recall (exact state plus lexical evidence) over a large store, and the index's cost on capture",
		Long: `Measure recall over one tenant of --episodes synthetic episodes (words drawn
from a Zipf distribution over 20,000 words, each naming one of 1,000
subjects) and --facts facts citing them, beside a second tenant with the same
words: --questions questions, one after the other, each naming a subject and
words of what it said, answered with the defaults (5 evidence episodes, 800
tokens). It prints the mean, p50 and p99 per question. Then the store
settles and as many questions are asked again: SQLite, once idle, merges
its full-text index and then truncates its WAL (the first questions ran
beside that merge); on PostgreSQL it runs VACUUM (ANALYZE), the work
autovacuum does after a load.

Then, with --capture N, it captures N episodes one after the other into a
fresh store with the full-text index and into one without it (its triggers
dropped), alternating rounds, and prints the ratio: what indexing costs a
capture, measured in the same run. SQLite by default; --postgres measures
recall on an empty PostgreSQL database instead (the capture ratio is
SQLite's only).`,
		Example: `  sgam bench recall --episodes 100000 --facts 1000000
  sgam bench recall --postgres postgres://localhost/sgam_bench --episodes 100000 --facts 1000000 --capture 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Episodes < 1000 || opts.Episodes > 10_000_000:
				return sgam.Errorf(sgam.Invalid, "--episodes", "must be between 1000 and 10000000")
			case opts.Facts < 0 || opts.Facts%1000 != 0:
				return sgam.Errorf(sgam.Invalid, "--facts", "must be a multiple of 1000")
			case opts.Questions < 1 || opts.Questions > 1_000_000:
				return sgam.Errorf(sgam.Invalid, "--questions", "must be between 1 and 1000000")
			case opts.Capture < 0 || opts.Capture > 1_000_000:
				return sgam.Errorf(sgam.Invalid, "--capture", "must be between 0 and 1000000")
			case pg != "" && !store.IsPostgres(pg):
				return sgam.Errorf(sgam.Invalid, "--postgres", "must be a postgres:// URL")
			case opts.Seeded && pg == "":
				return sgam.Errorf(sgam.Invalid, "--seeded", "needs --postgres: a SQLite run starts from a fresh file")
			}
			opts.DSN = pg
			dir, err := os.MkdirTemp("", "sgam-bench-recall-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			opts.Dir = dir
			progress := &phases{a: a, prefix: "bench recall"}
			opts.Progress = progress.update
			res, err := bench.Recall(a.ctx, opts)
			progress.finish()
			if err != nil {
				return err
			}
			return a.show(res, func(out io.Writer) error {
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(w, "store\t%s, one tenant of %d episodes and %d facts\n", res.Store, res.Episodes, res.Facts)
				fmt.Fprintf(w, "recall\t%s mean, p50 %s, p99 %s (%d questions)\n", ms(res.Mean), ms(res.P50), ms(res.P99), res.Questions)
				if res.Settled != nil {
					fmt.Fprintf(w, "settled\t%s mean, p50 %s, p99 %s (as many again, once the store had settled: %.1f s after the first)\n", ms(res.Settled.Mean), ms(res.Settled.P50), ms(res.Settled.P99), res.Settle.Seconds())
				}
				fmt.Fprintf(w, "answer\t%.1f facts, %.1f evidence episodes, %.0f tokens on average\n", res.FactsPerAnswer, res.EvidencePerAnswer, res.TokensPerAnswer)
				if res.CaptureRatio > 0 {
					fmt.Fprintf(w, "capture\t%s per episode with the index, %s without: %.2fx\n", ms(res.CaptureIndexed), ms(res.CapturePlain), res.CaptureRatio)
				}
				return w.Flush()
			})
		},
	}
	f := c.Flags()
	f.IntVar(&opts.Episodes, "episodes", 100_000, "episodes in the tenant")
	f.IntVar(&opts.Facts, "facts", 1_000_000, "facts citing them")
	f.IntVar(&opts.Questions, "questions", 2000, "questions recalled one after the other")
	f.IntVar(&opts.Capture, "capture", 5000, "episodes captured with and without the index (0: skip)")
	f.BoolVar(&opts.Seeded, "seeded", false, "the store holds an earlier run's data of the same sizes: write nothing, only ask (with --postgres)")
	f.StringVar(&pg, "postgres", "", "measure recall on this empty PostgreSQL database (postgres:// URL) instead of SQLite")
	return c
}
