package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// llmFlags are the model flags of a command that extracts. The API key
// comes only from the environment or a file, never from a flag.
type llmFlags struct {
	baseURL, model, mode string
	timeout              time.Duration
	attempts, maxTokens  int
}

func (f *llmFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.baseURL, "llm-base-url", "", "the model server's OpenAI-compatible API root, with its /v1 ($"+llm.EnvBaseURL+")")
	fs.StringVar(&f.model, "llm-model", "", "the model's name ($"+llm.EnvModel+")")
	fs.StringVar(&f.mode, "llm-mode", "", "how to ask for JSON: json_schema (default), json_object or tools ($"+llm.EnvMode+")")
	fs.DurationVar(&f.timeout, "llm-timeout", 0, "timeout of one model request (default 120s; $"+llm.EnvTimeout+")")
	fs.IntVar(&f.attempts, "llm-attempts", 0, "attempts of one model request, retrying 429, 5xx and timeouts (default 4; $"+llm.EnvAttempts+")")
	fs.IntVar(&f.maxTokens, "llm-max-tokens", 0, fmt.Sprintf("max_tokens of an answer (default %d; $%s)", llm.DefaultMaxTokens, llm.EnvMaxTokens))
}

// llmFields are the CLI's names of the fields of llm.Config's errors.
var llmFields = map[string]string{"base_url": "--llm-base-url", "model": "--llm-model", "mode": "--llm-mode", "api_key": llm.EnvAPIKey,
	"timeout": "--llm-timeout", "max_attempts": "--llm-attempts", "max_tokens": "--llm-max-tokens"}

// modelHelp is how to configure a model, for errors and help texts.
const modelHelp = `set SGAM_LLM_BASE_URL and SGAM_LLM_MODEL (or --llm-base-url and --llm-model), and SGAM_LLM_API_KEY or SGAM_LLM_API_KEY_FILE if the server needs a key; docs/extraction.md has working settings for OpenAI, vLLM, llama.cpp, Ollama and LM Studio`

// get returns the configured model, or nil when none is configured.
func (f *llmFlags) get() (llm.Model, error) {
	cfg, ok, err := f.config()
	if err != nil || !ok {
		return nil, err
	}
	m, err := llm.New(cfg)
	return m, llmError(err)
}

// llmError names the fields of llm.Config's errors as the CLI does.
func llmError(err error) error {
	for field, name := range llmFields {
		err = sgam.RenameField(err, field, name)
	}
	return err
}

// config returns the model's configuration from the environment and the
// flags; ok is false when neither configures one.
func (f *llmFlags) config() (cfg llm.Config, ok bool, err error) {
	cfg, ok, err = llm.FromEnv(os.Getenv)
	if err != nil {
		return cfg, false, sgam.Errorf(sgam.Invalid, "SGAM_LLM", "%v", err)
	}
	if f.baseURL != "" {
		cfg.BaseURL, ok = f.baseURL, true
	}
	if f.model != "" {
		cfg.Model, ok = f.model, true
	}
	if f.mode != "" {
		if cfg.Mode, err = llm.ParseMode(f.mode); err != nil {
			return cfg, false, sgam.Errorf(sgam.Invalid, "--llm-mode", "%v", err)
		}
	}
	switch {
	case f.timeout < 0 || f.timeout > llm.MaxTimeout:
		return cfg, false, sgam.Errorf(sgam.Invalid, "--llm-timeout", "must be between 1ms and %s, not %s", llm.MaxTimeout, f.timeout)
	case f.attempts < 0 || f.attempts > llm.MaxAttemptsLimit:
		return cfg, false, sgam.Errorf(sgam.Invalid, "--llm-attempts", "must be between 1 and %d, not %d", llm.MaxAttemptsLimit, f.attempts)
	case f.maxTokens < 0 || f.maxTokens > llm.MaxMaxTokens:
		return cfg, false, sgam.Errorf(sgam.Invalid, "--llm-max-tokens", "must be between 1 and %d, not %d", llm.MaxMaxTokens, f.maxTokens)
	}
	if f.timeout > 0 {
		cfg.Timeout = f.timeout
	}
	if f.attempts > 0 {
		cfg.MaxAttempts = f.attempts
	}
	if f.maxTokens > 0 {
		cfg.MaxTokens = f.maxTokens
	}
	return cfg, ok, nil
}

// need returns the configured model, or an error that says how to
// configure one.
func (f *llmFlags) need() (llm.Model, error) {
	m, err := f.get()
	if err == nil && m == nil {
		err = sgam.Errorf(sgam.Invalid, "--llm-base-url", "no model is configured: %s", modelHelp)
	}
	return m, err
}

// queueFlags configure the queue of a command that runs workers.
type queueFlags struct {
	workers       int
	grace         time.Duration
	jobTimeout    time.Duration
	rescueAfter   time.Duration
	budgetRecheck time.Duration
	maxAttempts   int
}

func (f *queueFlags) add(c *cobra.Command, workers int) {
	fs := c.Flags()
	fs.IntVar(&f.workers, "workers", workers, "extractions run at once by this process (0: none)")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "on shutdown, how long in-flight extractions may take to finish before they are released")
	fs.DurationVar(&f.jobTimeout, "job-timeout", 0, "bound of one attempt of a job, at least the model's worst case: --llm-attempts × --llm-timeout and a minute's wait between them (default that, and a tenth of it between 5s and 1m)")
	fs.DurationVar(&f.rescueAfter, "rescue-after", 0, "a job running this long is taken for one whose worker died, and run again; more than --job-timeout (default 15m, or --job-timeout and 5m when longer)")
	fs.DurationVar(&f.budgetRecheck, "budget-recheck", time.Minute, "how long a job of a tenant whose token budget is spent waits before it looks again")
	fs.IntVar(&f.maxAttempts, "max-attempts", 6, "attempts of a job before it fails for good")
}

func (f *queueFlags) check() error {
	switch {
	case f.workers < 0 || f.workers > 1024:
		return sgam.Errorf(sgam.Invalid, "--workers", "must be between 0 and 1024, not %d", f.workers)
	case f.jobTimeout < 0:
		return sgam.Errorf(sgam.Invalid, "--job-timeout", "must not be negative")
	case f.rescueAfter < 0:
		return sgam.Errorf(sgam.Invalid, "--rescue-after", "must not be negative")
	case f.budgetRecheck < 10*time.Millisecond:
		return sgam.Errorf(sgam.Invalid, "--budget-recheck", "must be at least 10ms")
	case f.maxAttempts < 1 || f.maxAttempts > 100:
		return sgam.Errorf(sgam.Invalid, "--max-attempts", "must be between 1 and 100, not %d", f.maxAttempts)
	}
	return nil
}

// openQueue opens the queue of --db over s with the model m (may be nil).
// A --job-timeout shorter than the model's worst case, or a
// --rescue-after not longer than the job timeout, is refused.
func (a *app) openQueue(s store.Store, m llm.Model, qf queueFlags) (*queue.Queue, error) {
	cfg := queue.Config{Workers: qf.workers, PollInterval: 200 * time.Millisecond, JobTimeout: qf.jobTimeout, RescueAfter: qf.rescueAfter,
		BudgetRecheck: qf.budgetRecheck, MaxAttempts: qf.maxAttempts,
		Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	emb, err := a.embedder()
	if err != nil {
		return nil, err
	}
	if emb != nil {
		cfg.Embedder, cfg.Embeddings = emb, s
	}
	q, err := queue.Open(a.ctx, a.db, s, extract.New(s, m), cfg)
	return q, sgam.RenameField(sgam.RenameField(err, "job_timeout", "--job-timeout"), "rescue_after", "--rescue-after")
}

// stopQueue stops q, giving in-flight extractions grace to finish.
func stopQueue(q *queue.Queue, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return q.Stop(ctx)
}

func (a *app) workerCommand() *cobra.Command {
	var lf llmFlags
	var qf queueFlags
	c := &cobra.Command{
		Use:   "worker",
		Short: "Run extraction jobs from the queue until stopped",
		Long: `Run extraction jobs from the durable queue until interrupted (SIGINT or
SIGTERM). Several workers, and the workers of 'sgam serve', may run on one
database: on PostgreSQL from any machine, on SQLite from processes on the
file's machine. A job whose worker died is taken up again by another after
River's rescue delay. On shutdown, extractions in flight get --grace to
finish; the rest are released for another worker, losing no attempt.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := qf.check(); err != nil {
				return err
			}
			if qf.workers == 0 {
				return sgam.Errorf(sgam.Invalid, "--workers", "must be at least 1 for a worker")
			}
			m, err := lf.need()
			if err != nil {
				return err
			}
			s, err := a.open(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			q, err := a.openQueue(s, m, qf)
			if err != nil {
				return err
			}
			if err := q.Start(a.ctx); err != nil {
				q.Stop(context.Background())
				return err
			}
			fmt.Fprintf(a.stderr, "sgam worker: %d workers on %s, model %s (%s)\n", qf.workers, redactDSN(a.db), m.Name(), m.Mode())
			<-a.ctx.Done()
			fmt.Fprintln(a.stderr, "sgam worker: stopping")
			return stopQueue(q, qf.grace)
		},
	}
	lf.add(c)
	qf.add(c, 4)
	return c
}

// redactDSN hides a password in a database URL.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

func (a *app) rememberCommand() *cobra.Command {
	var lf llmFlags
	var e sgam.Episode
	c := &cobra.Command{
		Use:   `remember "TEXT"`,
		Short: "Capture what was said and extract it now: the immediate path",
		Long: `Capture TEXT as an episode of --tenant and extract it at once, in this
process: one model call proposes updates, the schema and the ledger decide
what is stored. Prints the facts written and the candidates rejected, with
their reasons. For what the next turn of an agent depends on; ordinary turns
go through 'sgam ingest' and the background workers.

The episode is captured with its place in the extraction queue, held back
from the workers while this process extracts it. If the extraction does
not commit (the model fails in a way a retry may mend, the command is
interrupted or killed), the workers ('sgam worker', 'sgam serve') extract
it: at once when this process could say so, else once the hold passes
(the model's worst case and two margins of a tenth of it, each between 5s
and a minute). Exit 1 when the extraction failed.`,
		Example: `  sgam remember "Mira: my passport renewal deadline is July 15." --subject mira`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"content": "TEXT", "session": "--session", "kind": "--kind", "episode_id": "--id"})
			m, err := lf.need()
			if err != nil {
				return err
			}
			return a.withStore(func(s store.Store) error {
				e.Tenant, e.Content = a.tenant, args[0]
				in := ingest.New(s, extract.New(s, m))
				res, err := in.Capture(a.ctx, e, ingest.ModeNow)
				// Interrupted, Close gives the episode to the workers at once.
				in.Close(a.ctx)
				if err != nil {
					return err
				}
				if res.Record == nil {
					fmt.Fprintf(a.stderr, "sgam: interrupted: episode %s is captured and queued; the extraction workers extract it\n", res.Episode.ID)
					return exitError{code: ExitFailure}
				}
				err = a.show(res.Record, func(io.Writer) error {
					a.printExtraction(*res.Record, res.Skipped)
					return nil
				})
				if err != nil {
					return err
				}
				if res.Record.Status == sgam.ExtractionFailed {
					if res.Queued {
						fmt.Fprintf(a.stderr, "sgam: the extraction of episode %s failed; it is queued, and the extraction workers try again\n", res.Episode.ID)
					}
					return exitError{code: ExitFailure}
				}
				return nil
			})
		},
	}
	f := c.Flags()
	f.StringSliceVar(&e.Subjects, "subject", nil, "a subject the text is about (repeatable): its stored values are shown to the model")
	f.StringVar(&e.Session, "session", "", "session or conversation id")
	f.StringVar(&e.Kind, "kind", sgam.KindMessage, "kind of the episode")
	f.StringVar(&e.ID, "id", "", "episode id (default: generated)")
	lf.add(c)
	return c
}

// printExtraction prints what an extraction wrote and rejected.
func (a *app) printExtraction(r sgam.Extraction, skipped bool) {
	w := a.stdout
	if skipped {
		fmt.Fprintf(w, "episode %s was extracted already (%s); nothing was asked\n", r.EpisodeID, r.ID)
	}
	cost := fmt.Sprintf("%d model calls, %d+%d tokens", r.Calls, r.TokensIn, r.TokensOut)
	if r.Cached {
		cost = "answered from " + r.CachedFrom + ", no tokens"
	}
	fmt.Fprintf(w, "episode %s: %s (%s)\n", r.EpisodeID, r.Status, cost)
	for _, c := range r.Accepted {
		what := string(c.Value)
		if c.Change == extract.ChangeRetract {
			what = "retracted"
		}
		ref := ""
		switch {
		case c.FactID != 0:
			ref = fmt.Sprintf(" (fact %d)", c.FactID)
		case c.PendingID != "":
			ref = " (pending " + c.PendingID + ")"
		}
		fmt.Fprintf(w, "  %-9s %s.%s = %s from %s%s\n", c.Outcome, c.Subject, c.Attribute, what, fmtTime(c.ValidFrom), ref)
	}
	for _, rj := range r.Rejected {
		field := ""
		if rj.Field != "" {
			field = " " + rj.Field + ":"
		}
		fmt.Fprintf(w, "  rejected  updates[%d] %s:%s %s\n", rj.Index, rj.Reason, field, rj.Message)
	}
	if r.Unchanged > 0 {
		fmt.Fprintf(w, "  %d updates the model marked no_change\n", r.Unchanged)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning   %s\n", warn)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error     %s\n", r.Error)
	}
}

func (a *app) extractCommand() *cobra.Command {
	var lf llmFlags
	var episode string
	var dryRun, again bool
	c := &cobra.Command{
		Use:   "extract --episode ID [--dry-run]",
		Short: "Extract one episode now, or show its prompt and candidates (--dry-run)",
		Long: `Extract one captured episode in this process. --dry-run prints the prompt the
model gets, asks the model (if one is configured) and prints the candidates
it proposes with what validation makes of them: nothing is written, not even
a record. An episode extracted already from the same content is not asked
again unless --again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"episode_id": "--episode"})
			if episode == "" {
				return sgam.Errorf(sgam.Invalid, "--episode", "is required")
			}
			var m llm.Model
			var err error
			if dryRun {
				m, err = lf.get()
			} else {
				m, err = lf.need()
			}
			if err != nil {
				return err
			}
			return a.withStore(func(s store.Store) error {
				res, err := extract.New(s, m).Extract(a.ctx, a.tenant, episode, extract.Options{DryRun: dryRun, Again: again})
				if err != nil && !(dryRun && res.Prompt.User != "") {
					return err
				}
				return a.show(map[string]any{"prompt": res.Prompt.Text(), "schema": res.Prompt.Schema, "record": res.Record, "error": errText(err)}, func(w io.Writer) error {
					if dryRun {
						fmt.Fprintf(w, "%s\n\n", res.Prompt.Text())
						if m == nil {
							fmt.Fprintf(w, "(no model is configured, so nothing was asked: %s)\n", modelHelp)
							return nil
						}
						if err != nil {
							return err
						}
						fmt.Fprintln(w, "--- the model's answer, validated (nothing written):")
					}
					a.printExtraction(res.Record, res.Skipped)
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&episode, "episode", "", "the episode to extract")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the prompt and the candidates; write nothing")
	c.Flags().BoolVar(&again, "again", false, "extract an episode extracted already")
	lf.add(c)
	return c
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *app) budgetCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "budget",
		Short: "Set and show a tenant's token budget for extraction",
		Long: `Each tenant may have a budget of model tokens per UTC day for extraction,
set by the operator. When it is spent, the tenant's extraction jobs wait
(nothing is lost) until the next day, or until the budget is raised.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var n int
	set := &cobra.Command{
		Use:   "set --tokens-per-day N",
		Short: "Set --tenant's tokens per day (0: no limit)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"tokens_per_day": "--tokens-per-day"})
			if !cmd.Flags().Changed("tokens-per-day") {
				return sgam.Errorf(sgam.Invalid, "--tokens-per-day", "is required (0 for no limit)")
			}
			return a.withStore(func(s store.Store) error {
				if err := s.SetBudget(a.ctx, a.tenant, n); err != nil {
					return err
				}
				return a.showBudget(s)
			})
		},
	}
	set.Flags().IntVar(&n, "tokens-per-day", 0, "model tokens (prompt and answer) per UTC day; 0: no limit")
	show := &cobra.Command{
		Use:   "show",
		Short: "Show --tenant's budget and what it spent today",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error { return a.showBudget(s) })
		},
	}
	c.AddCommand(set, show)
	return c
}

func (a *app) showBudget(s sgam.Store) error {
	b, err := s.Budget(a.ctx, a.tenant)
	if err != nil {
		return err
	}
	return a.show(b, func(w io.Writer) error {
		limit := "no limit"
		if b.TokensPerDay > 0 {
			limit = fmt.Sprintf("%d tokens per day", b.TokensPerDay)
		}
		fmt.Fprintf(w, "tenant %s: %s; spent today %d; resets at %s\n", b.Tenant, limit, b.SpentToday, fmtTime(b.ResetsAt))
		if b.Exhausted() {
			fmt.Fprintln(w, "the budget is spent: extraction jobs wait until it resets or is raised")
		}
		return nil
	})
}

// printSummary prints what a set of extractions did.
func (a *app) printSummary(s ingest.Summary) {
	fmt.Fprintf(a.stdout, "extracted %d of %d episodes: %d facts written, %d pending review, %d failed; %d model calls, %d tokens\n",
		s.Ended-s.Failed, s.Episodes, s.Facts, s.Pending, s.Failed, s.Calls, s.Tokens)
	reasons := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(a.stdout, "  rejected %-18s %d\n", r, s.Rejected[r])
	}
}

// runAndWait works the queue in this process with workers until every
// episode of refs has ended since an instant, showing progress, and
// returns the summary.
func (a *app) runAndWait(s store.Store, m llm.Model, qf queueFlags, refs []queue.Ref, since time.Time) (ingest.Summary, error) {
	q, err := a.openQueue(s, m, qf)
	if err != nil {
		return ingest.Summary{}, err
	}
	if err := q.Start(a.ctx); err != nil {
		q.Stop(context.Background())
		return ingest.Summary{}, err
	}
	p := &phases{a: a, prefix: "extract"}
	sum, werr := ingest.Wait(a.ctx, s, refs, since, 200*time.Millisecond, func(pr queue.Progress) {
		p.update("extracting", pr.Ended, pr.Total)
	})
	p.finish()
	if err := stopQueue(q, qf.grace); err != nil && werr == nil {
		werr = err
	}
	return sum, werr
}

// embedder is the embedding endpoint the environment configures
// (SGAM_EMBED_BASE_URL, SGAM_EMBED_MODEL; the key SGAM_EMBED_API_KEY or
// SGAM_EMBED_API_KEY_FILE), or nil when it configures none.
func (a *app) embedder() (llm.Embedder, error) {
	cfg, ok, err := llm.EmbedConfigFromEnv(os.Getenv)
	if err != nil || !ok {
		return nil, err
	}
	return llm.NewEmbedder(cfg)
}

// recaller is recall over s, with vectors when an embedding endpoint is
// configured.
func (a *app) recaller(s store.Store) (*recall.Recaller, error) {
	emb, err := a.embedder()
	if err != nil {
		return nil, err
	}
	return recall.New(s).WithEmbedder(emb, s), nil
}
