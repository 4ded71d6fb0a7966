package cli

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/bench"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) benchExtractCommand() *cobra.Command {
	var opts bench.ExtractOptions
	var pg string
	c := &cobra.Command{
		Use:   "extract",
		Short: "Measure the write path: capture and extraction per episode, and throughput with a slow model",
		Long: `Measure the extraction pipeline against a fake OpenAI-compatible model served in
this process (no network, no tokens), on a fresh store holding --facts facts
(the reference workload: 1,000 subjects, each then given one current value):

  per episode   capture, prompt, the model's answer (at once), validation,
                commit and record, one episode after the other (--episodes)
  calls         model calls per episode, and when extracting them all again
                with nothing changed (0: answered from the records)
  prompt        prompt tokens per episode, and the prompt's size beside the
                same episodes' in a store of 1,000 facts
  throughput    --throughput episodes through the queue with --workers
                workers and a model that takes --latency per call

The store is SQLite in a temporary folder (--dir to keep it), or the empty
PostgreSQL database or schema of --postgres.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Facts < 1000 || opts.Facts%1000 != 0:
				return sgam.Errorf(sgam.Invalid, "--facts", "must be a positive multiple of 1000")
			case opts.Episodes < 10 || opts.Episodes > 100_000:
				return sgam.Errorf(sgam.Invalid, "--episodes", "must be between 10 and 100000")
			case opts.ThroughputEpisodes < 0 || opts.ThroughputEpisodes > 100_000:
				return sgam.Errorf(sgam.Invalid, "--throughput", "must be between 0 and 100000")
			case opts.Workers < 1 || opts.Workers > 1024:
				return sgam.Errorf(sgam.Invalid, "--workers", "must be between 1 and 1024")
			case opts.Latency < 0:
				return sgam.Errorf(sgam.Invalid, "--latency", "must not be negative")
			case pg != "" && !store.IsPostgres(pg):
				return sgam.Errorf(sgam.Invalid, "--postgres", "must be a postgres:// URL")
			}
			opts.DSN = pg
			if opts.Dir == "" {
				dir, err := os.MkdirTemp("", "sgam-bench-extract-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				opts.Dir = dir
			} else if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
				return err
			}
			progress := &phases{a: a, prefix: "bench extract"}
			opts.Progress = progress.update
			res, err := bench.Extract(a.ctx, opts)
			progress.finish()
			if err != nil {
				return err
			}
			return a.show(res, func(out io.Writer) error {
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(w, "store\t%s, %d facts\n", res.Store, res.Facts)
				fmt.Fprintf(w, "per episode\t%s mean, p50 %s, p99 %s (%d episodes, the model answering at once)\n",
					ms(res.PerEpisode), ms(res.P50), ms(res.P99), res.Episodes)
				fmt.Fprintf(w, "model calls\t%.2f per episode; %d when extracting them all again\n", res.CallsPerEpisode, res.AgainCalls)
				fmt.Fprintf(w, "prompt\t%.0f tokens per episode; %.0f bytes, %.0f bytes for the same episodes in a store of 1,000 facts\n",
					res.PromptTokens, res.PromptBytes, res.PromptBytesSmall)
				if res.ThroughputEpisodes > 0 {
					fmt.Fprintf(w, "throughput\t%.1f episodes/s (%d episodes, %d workers, model latency %s; bound %.1f)\n",
						res.EpisodesPerS, res.ThroughputEpisodes, res.Workers, res.Latency, float64(res.Workers)/res.Latency.Seconds())
				}
				return w.Flush()
			})
		},
	}
	f := c.Flags()
	f.IntVar(&opts.Facts, "facts", 1_000_000, "facts in the store before measuring")
	f.IntVar(&opts.Episodes, "episodes", 500, "episodes extracted one after the other")
	f.IntVar(&opts.ThroughputEpisodes, "throughput", 400, "episodes extracted through the queue (0: skip)")
	f.IntVar(&opts.Workers, "workers", 16, "workers of the throughput run")
	f.DurationVar(&opts.Latency, "latency", 500*time.Millisecond, "the fake model's latency in the throughput run")
	f.StringVar(&opts.Dir, "dir", "", "keep the SQLite databases in this folder")
	f.StringVar(&pg, "postgres", "", "measure this empty PostgreSQL database (postgres:// URL) instead of SQLite")
	return c
}
