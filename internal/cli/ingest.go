package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) ingestCommand() *cobra.Command {
	var lf llmFlags
	var qf queueFlags
	var noExtract, noWait bool
	c := &cobra.Command{
		Use:   "ingest FILE",
		Short: "Capture the episodes of a JSONL file and extract them",
		Long: `Capture the episodes of FILE (- for standard input), one JSON object per line:

  {"tenant","episode_id","session","kind","content","occurred_at",
   "subjects":[...],"metadata":{...},"retention","idempotency_key"}

Only content is required; --tenant fills a missing tenant. A line with
neither episode_id nor idempotency_key gets the SHA-256 of its text as its
idempotency key ("ingest-sha256:…"), so identical lines are one episode:
give them ids to keep them apart. Each episode is
captured together with its place in the extraction queue, so no crash loses
one. Then ingest works the queue with --workers in this process (beside any
'sgam worker' or 'sgam serve' on the same database) until every episode's
extraction has ended, with a progress bar on a terminal, and prints a
summary: episodes, facts written, candidates rejected by reason, model calls
and tokens. Running it again on the same file captures nothing new and calls
no model.

--no-extract only captures (no model needed); --no-wait returns after
capture and leaves the extraction to the workers.

Without a model (see docs/extraction.md) the episodes are captured all the
same and their extractions wait in the queue, visible in 'sgam ingest
status', until a worker with a model runs them; ingest then says so and
how to configure one, and exits 2.

Exit status: 0 when every episode was captured and its extraction ended
(rejected candidates are an outcome, not a failure); 1 when an extraction
failed after its retries (see 'sgam ingest retry'); 2 when a line is bad
(the message names the line and the field, and the other lines still go
in), or when no model is configured to extract what was queued.`,
		Example: `  SGAM_LLM_BASE_URL=http://localhost:11434/v1 SGAM_LLM_MODEL=qwen3:8b sgam ingest chat.jsonl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := qf.check(); err != nil {
				return err
			}
			if noExtract && noWait {
				return sgam.Errorf(sgam.Invalid, "--no-wait", "--no-extract waits for nothing; give one of them")
			}
			var model llm.Model
			if !noExtract && !noWait {
				var err error
				if model, err = lf.get(); err != nil {
					return err
				}
			}
			in := a.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
				}
				defer f.Close()
				in = f
			}
			return a.withStore(func(s store.Store) error {
				mode := ingest.ModeBackground
				if noExtract {
					mode = ingest.ModeNone
				}
				lines, err := ingest.New(s, nil).CaptureLines(a.ctx, in, a.tenant, mode)
				if err != nil {
					return err
				}
				refs, bad := lines.Refs, lines.Bad
				fmt.Fprintf(a.stderr, "captured %d episodes (%d new, %d already there), %d queued for extraction, %d bad lines\n",
					lines.Captured, lines.Captured-lines.Repeats, lines.Repeats, len(refs), len(bad))
				// Without a model the episodes are captured all the same, and
				// their extractions wait in the queue for one.
				waiting := model == nil && !noExtract && !noWait && len(refs) > 0
				var sum ingest.Summary
				if model != nil && len(refs) > 0 {
					if sum, err = a.runAndWait(s, model, qf, refs, lines.Since); err != nil {
						return err
					}
				}
				err = a.show(map[string]any{"captured": lines.Captured, "already_there": lines.Repeats, "queued": len(refs),
					"bad_lines": len(bad), "extraction": sum, "waiting_for_a_model": waiting}, func(io.Writer) error {
					if !noExtract && !noWait && !waiting {
						a.printSummary(sum)
					}
					return nil
				})
				if err != nil {
					return err
				}
				for _, b := range bad {
					fmt.Fprintf(a.stderr, "sgam: %v\n", b)
				}
				switch {
				case waiting:
					fmt.Fprintf(a.stderr, "sgam: --llm-base-url: no model is configured, so the %d queued extractions wait ('sgam ingest status' shows them): %s. Once one is, 'sgam worker' (or this command again) extracts them; to capture only, add --no-extract; to return after capture, --no-wait\n", len(refs), modelHelp)
					return exitError{code: ExitUsage}
				case len(bad) > 0:
					return exitError{code: ExitUsage}
				case sum.Failed > 0:
					fmt.Fprintf(a.stderr, "sgam: %d extractions failed after their retries; 'sgam ingest retry' queues them again\n", sum.Failed)
					return exitError{code: ExitFailure}
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&noExtract, "no-extract", false, "capture only: nothing is queued, no model is needed")
	c.Flags().BoolVar(&noWait, "no-wait", false, "return after capture; the workers extract in the background")
	lf.add(c)
	qf.add(c, 4)
	c.AddCommand(a.ingestRetryCommand(), a.ingestStatusCommand())
	return c
}

// onQueue runs fn on the queue of --db, without workers, for --tenant
// (every tenant when all is set).
func (a *app) onQueue(all bool, fn func(q *queue.Queue, tenant string) error) error {
	return a.withExisting(func(s store.Store) error {
		q, err := a.openQueue(s, nil, queueFlags{rescueAfter: 15 * time.Minute, budgetRecheck: time.Minute, maxAttempts: 6})
		if err != nil {
			return err
		}
		defer q.Stop(a.ctx)
		tenant := a.tenant
		if all {
			tenant = ""
		}
		return fn(q, tenant)
	})
}

func (a *app) ingestRetryCommand() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "retry",
		Short: "Queue the extractions that failed after their retries again",
		Long: `Make the failed extraction jobs of --tenant (of every tenant with
--all-tenants) available again, with fresh attempts. 'sgam worker', 'sgam
serve' or 'sgam ingest' work them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.onQueue(all, func(q *queue.Queue, tenant string) error {
				n, err := q.Retry(a.ctx, tenant)
				if err != nil {
					return err
				}
				return a.show(map[string]int{"retried": n}, func(w io.Writer) error {
					fmt.Fprintf(w, "%d failed extractions queued again\n", n)
					return nil
				})
			})
		},
	}
	c.Flags().BoolVar(&all, "all-tenants", false, "retry every tenant's failed jobs")
	return c
}

func (a *app) ingestStatusCommand() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Count the extraction jobs of --tenant by state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.onQueue(all, func(q *queue.Queue, tenant string) error {
				st, err := q.Status(a.ctx, tenant)
				if err != nil {
					return err
				}
				return a.show(st, func(w io.Writer) error {
					fmt.Fprintf(w, "queued %d, waiting for a worker %d, running %d, completed %d, failed %d\n",
						st.Queued, st.Available, st.Running, st.Completed, st.Failed)
					return nil
				})
			})
		},
	}
	c.Flags().BoolVar(&all, "all-tenants", false, "count every tenant's jobs")
	return c
}

func (a *app) reextractCommand() *cobra.Command {
	var lf llmFlags
	var qf queueFlags
	var episode, since string
	var noWait bool
	c := &cobra.Command{
		Use:   "reextract --episode ID | --since T",
		Short: "Extract episodes again, after a schema change say, at no token cost where nothing changed",
		Long: `Queue episodes of --tenant for extraction again: one (--episode), or every
episode that occurred at or after --since. A prompt identical to one the
model answered before (same model, schema version and content, same values
shown) is answered from its record, so re-extraction where nothing changed
makes no model call. Then it works the queue in this process until they
have ended, as 'sgam ingest' does; --no-wait leaves them to the workers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"episode_id": "--episode", "since": "--since"})
			if err := qf.check(); err != nil {
				return err
			}
			if (episode == "") == (since == "") {
				return sgam.Errorf(sgam.Invalid, "--episode", "give --episode or --since, one of them")
			}
			var model llm.Model
			if !noWait {
				var err error
				if model, err = lf.need(); err != nil {
					return err
				}
			}
			return a.withExisting(func(s store.Store) error {
				ids := []string{episode}
				if since != "" {
					t, err := timeFlag("since", since)
					if err != nil {
						return err
					}
					eps, err := s.Episodes(a.ctx, sgam.EpisodeQuery{Tenant: a.tenant, Since: t, Limit: 10000})
					if err != nil {
						return err
					}
					ids = ids[:0]
					for _, e := range eps {
						ids = append(ids, e.ID)
					}
					if len(eps) == 10000 {
						fmt.Fprintf(a.stderr, "sgam: more than 10000 episodes: these are the first; run again with --since %s for the rest\n", fmtTime(eps[len(eps)-1].OccurredAt))
					}
				}
				start := time.Now().Add(-time.Millisecond)
				if err := s.QueueExtraction(a.ctx, a.tenant, ids, true); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "queued %d episodes for extraction again\n", len(ids))
				if noWait || len(ids) == 0 {
					return nil
				}
				refs := make([]queue.Ref, len(ids))
				for i, id := range ids {
					refs[i] = queue.Ref{Tenant: a.tenant, EpisodeID: id}
				}
				sum, err := a.runAndWait(s, model, qf, refs, start)
				if err != nil {
					return err
				}
				if err := a.show(sum, func(io.Writer) error { a.printSummary(sum); return nil }); err != nil {
					return err
				}
				if sum.Failed > 0 {
					// Exit 1 under --json too: a script reads the code.
					return exitError{code: ExitFailure}
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&episode, "episode", "", "the episode to extract again")
	c.Flags().StringVar(&since, "since", "", "every episode that occurred at or after this instant (RFC 3339)")
	c.Flags().BoolVar(&noWait, "no-wait", false, "queue them and return")
	lf.add(c)
	qf.add(c, 4)
	return c
}
