// Package queue runs extraction in the background, durably: the store
// records that an episode needs extraction in the transaction that
// captures it (an outbox, sgam.ExtractionQueue), a dispatcher hands queued
// episodes to River (github.com/riverqueue/river) as unique jobs, and
// River's workers extract them, with its retries and backoff, rescue of
// jobs whose worker died, and several processes sharing the work. On
// PostgreSQL River's tables live in the ledger's database; on SQLite in a
// file of their own beside the ledger (path + ".queue").
//
// Delivery is at least once and extraction is idempotent: an episode
// extracted already is skipped, a prompt answered already is answered from
// its record, and a fact written twice from one episode is the ledger's
// idempotent repeat.
//
// With an Embedder configured, the queue also keeps every episode's
// vector up to date for recall's vector search (embed.go).
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
)

// QueueName is River's queue of extraction jobs.
const QueueName = "sgam_extract"

// ExtractArgs are an extraction job's arguments: ids only, never content.
type ExtractArgs struct {
	Tenant    string `json:"tenant"`
	EpisodeID string `json:"episode_id"`
	Again     bool   `json:"again,omitempty"`
	// Asked is when an again request was queued: each request is a job
	// of its own, so that one made while an earlier job of the episode
	// runs is not taken for it (and lost).
	Asked time.Time `json:"asked,omitzero"`
}

// Kind implements river.JobArgs.
func (ExtractArgs) Kind() string { return "sgam_extract" }

// InsertOpts implements river.JobArgsWithInsertOpts: one job per episode
// (and again flag) until it ends. A completed job does not count (River's
// default keeps it unique for as long as River keeps it): an episode may
// be extracted again.
func (ExtractArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

// Config configures a Queue. Zero fields take the defaults.
type Config struct {
	// Workers is how many extractions this process runs at once; 0 runs
	// none (the process only dispatches).
	Workers int
	// MaxAttempts bounds the attempts of a job (default 6): a job that
	// fails them all is failed, visible, and retried only on request.
	MaxAttempts int
	// JobTimeout bounds one attempt. A model call has its own timeouts
	// and retries inside it, so it may not be shorter than the model's
	// worst case (llm.Model.WorstCase), or it would cut off calls the
	// client would have finished, each paid for; default that worst case
	// and the Margin (10m without a model). An attempt it cuts off counts,
	// and leaves a failed record with what it cost.
	JobTimeout time.Duration
	// RescueAfter is how long a job may stay running before River takes it
	// for a job whose worker died: more than JobTimeout (default 15m, or
	// JobTimeout and 5m when that is longer).
	RescueAfter time.Duration
	// PollInterval is how often idle workers look for jobs, and the
	// dispatcher for queued episodes (default 1s).
	PollInterval time.Duration
	// BudgetRecheck is how long a job of a tenant whose token budget is
	// spent waits before it looks again (default 1m); it loses no attempt.
	BudgetRecheck time.Duration
	// Logger gets River's warnings and the queue's; default: discarded.
	Logger *slog.Logger
	// Embedder, when set, embeds every episode of the store (its
	// content) in the background, for recall's vector search: see
	// embed.go. Embeddings, required with it, is where the vectors go
	// (the store's optional capability).
	Embedder   llm.Embedder
	Embeddings sgam.Embeddings
}

// DefaultJobTimeout is the job timeout for a model whose worst case is
// worst: that, and the Margin.
func DefaultJobTimeout(worst time.Duration) time.Duration { return worst + Margin(worst) }

// Margin is the time a job (or an immediate extraction) is given for the
// store beyond its model's worst case: a tenth of it, at least 5s and at
// most a minute. (The commit of a record that has an answer runs under
// its own deadline, extract.Extractor's, whatever the job's.)
func Margin(worst time.Duration) time.Duration { return min(max(worst/10, 5*time.Second), time.Minute) }

// defaultRescueAfter is the rescue delay for a job timeout.
func defaultRescueAfter(jobTimeout time.Duration) time.Duration {
	return max(15*time.Minute, jobTimeout+5*time.Minute)
}

// withDefaults fills in the defaults for the extractor's model (nil:
// none) and checks the timeouts against it. Its errors name the field
// (job_timeout, rescue_after).
func (c Config) withDefaults(m llm.Model) (Config, error) {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 6
	}
	// Without a model, the only jobs that run are the embedding job's,
	// which go on from where a timeout cut them.
	worst, timeout := time.Duration(0), 10*time.Minute
	if m != nil {
		worst = m.WorstCase()
		timeout = DefaultJobTimeout(worst)
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = timeout
	}
	if c.JobTimeout < worst {
		return c, sgam.Errorf(sgam.Invalid, "job_timeout", "%s is shorter than the model client's worst case, %s (its attempts, each to its timeout, and the waits between them): "+
			"it would cut off calls the client would finish; give it at least that, or lower the model's timeout or attempts", c.JobTimeout, worst)
	}
	if c.RescueAfter <= 0 {
		c.RescueAfter = defaultRescueAfter(c.JobTimeout)
	}
	if c.RescueAfter <= c.JobTimeout {
		return c, sgam.Errorf(sgam.Invalid, "rescue_after", "%s is not longer than a job's timeout, %s: a job still running would be taken for one whose worker died, and run twice", c.RescueAfter, c.JobTimeout)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Embedder != nil {
		if c.Embeddings == nil {
			return c, sgam.Errorf(sgam.Invalid, "embeddings", "an embedder is configured with no store of vectors to keep its vectors in")
		}
		if err := sgam.CheckModel("embedding model", c.Embedder.Model()); err != nil {
			return c, err
		}
	}
	if c.BudgetRecheck <= 0 {
		c.BudgetRecheck = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Store is what a Queue needs of a store: the extractor's roles, and the
// extraction queue's, store-wide.
type Store interface {
	extract.Store
	sgam.ExtractionQueue
	sgam.ExtractionDispatch
}

// client is the part of a river.Client the queue uses, whatever its
// driver's transaction type.
type client interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	InsertMany(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
}

// Queue dispatches and works extraction jobs.
type Queue struct {
	store Store
	x     *extract.Extractor
	cfg   Config
	river client
	close func() error

	mu      sync.Mutex
	stop    context.CancelFunc
	stopped chan struct{}
	// stopping is set once Stop begins: a job whose context is cancelled
	// then is given back, not failed.
	stopping atomic.Bool

	embed embedState
}

// riverConfig is the River configuration of cfg with w as the worker.
func riverConfig(cfg Config, w *worker) *river.Config {
	rc := &river.Config{
		Logger:               cfg.Logger,
		MaxAttempts:          cfg.MaxAttempts,
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.RescueAfter,
		FetchPollInterval:    cfg.PollInterval,
		FetchCooldown:        min(100*time.Millisecond, cfg.PollInterval),
		Workers:              river.NewWorkers(),
	}
	river.AddWorker(rc.Workers, w)
	if cfg.Workers > 0 {
		rc.Queues = map[string]river.QueueConfig{QueueName: {MaxWorkers: cfg.Workers}}
	}
	addEmbedWorker(rc, cfg, w)
	return rc
}

// Start starts the workers (if any) and the dispatcher. They run until
// Stop.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop != nil {
		return errors.New("the queue is running already")
	}
	if q.cfg.Workers > 0 {
		if err := q.river.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start the queue's workers: %w", err)
		}
	}
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q.stop, q.stopped = cancel, make(chan struct{})
	go func() {
		defer close(q.stopped)
		q.dispatchLoop(dctx)
	}()
	return nil
}

// Stop stops the dispatcher and the workers: in-flight extractions get
// until ctx ends to finish; then they are cancelled, and released for
// another worker (snoozed, losing no attempt). It closes the queue.
func (q *Queue) Stop(ctx context.Context) error {
	q.stopping.Store(true)
	q.mu.Lock()
	stop, stopped := q.stop, q.stopped
	q.mu.Unlock()
	var err error
	if stop != nil {
		stop()
		<-stopped
		if q.cfg.Workers > 0 {
			if err = q.river.Stop(ctx); err != nil && ctx.Err() != nil {
				hard, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = q.river.StopAndCancel(hard)
				cancel()
			}
		}
	}
	return errors.Join(err, q.close())
}

// dispatchBatch bounds the episodes handed to River per round.
const dispatchBatch = 500

// dispatchLoop moves queued episodes to River until ctx ends.
func (q *Queue) dispatchLoop(ctx context.Context) {
	t := time.NewTicker(q.cfg.PollInterval)
	defer t.Stop()
	for {
		n, err := q.dispatch(ctx)
		if err != nil && ctx.Err() == nil {
			q.cfg.Logger.Warn("sgam queue: dispatch failed", "error", err)
		}
		q.dispatchEmbed(ctx)
		if n == dispatchBatch {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// dispatch hands one batch of queued episodes to River, and returns how
// many. An episode dispatched twice (by two processes at once, or after a
// crash between insert and dequeue) is one unique job while it has not
// ended, and a later duplicate skips an episode extracted already.
func (q *Queue) dispatch(ctx context.Context) (int, error) {
	queued, err := q.store.QueuedExtractions(ctx, dispatchBatch, true)
	if err != nil || len(queued) == 0 {
		return 0, err
	}
	params := make([]river.InsertManyParams, len(queued))
	for i, e := range queued {
		args := ExtractArgs{Tenant: e.Tenant, EpisodeID: e.EpisodeID, Again: e.Again}
		if e.Again {
			args.Asked = e.QueuedAt
		}
		params[i] = river.InsertManyParams{Args: args}
	}
	if _, err := q.river.InsertMany(ctx, params); err != nil {
		return 0, fmt.Errorf("insert extraction jobs: %w", err)
	}
	if err := q.store.DequeueExtractions(ctx, queued); err != nil {
		return 0, err
	}
	return len(queued), nil
}

// worker works extraction jobs.
type worker struct {
	river.WorkerDefaults[ExtractArgs]
	q *Queue
}

// Work extracts one episode. A spent budget (the Extractor checks it
// before it asks the model), no model, or a shutdown snooze the job (no
// attempt lost); a model failure that a retry may mend, the job's own
// timeout among them, returns the error (River counts the attempt and
// retries with backoff); one that no retry mends, or the last attempt's,
// fails the job for good. What River keeps of an error is its kind alone
// (jobError): the extraction record, which forget deletes, has the rest.
func (w *worker) Work(ctx context.Context, job *river.Job[ExtractArgs]) error {
	a := job.Args
	q := w.q
	if q.x.Model() == nil {
		return river.JobSnooze(q.cfg.BudgetRecheck)
	}
	last := job.Attempt >= job.MaxAttempts
	_, err := q.x.Extract(ctx, a.Tenant, a.EpisodeID, extract.Options{Again: a.Again, LastAttempt: last})
	switch {
	case err == nil:
		return nil
	case sgam.ErrorCode(err) == sgam.NotFound:
		return nil // forgotten meanwhile: nothing to extract
	case errors.As(err, new(*extract.BudgetError)):
		return river.JobSnooze(q.cfg.BudgetRecheck)
	case errors.Is(ctx.Err(), context.Canceled) && q.stopping.Load():
		// Shutting down: another worker takes it. Only a cancel is the
		// shutdown's; a deadline is the job's own timeout, which counts the
		// attempt even while Stop waits for the job.
		return river.JobSnooze(0)
	case !sgam.Retryable(err):
		return river.JobCancel(jobError(err))
	}
	return jobError(err)
}

// Status counts extraction jobs by state.
type Status struct {
	Queued    int `json:"queued"`    // captured, not yet handed to the workers
	Available int `json:"available"` // waiting for a worker (scheduled and retrying ones too)
	Running   int `json:"running"`
	Completed int `json:"completed"` // still kept by River (a day by default)
	Failed    int `json:"failed"`    // gave up; sgam ingest retry re-queues them
}

// Status counts the jobs of every tenant (tenant empty) or of one.
func (q *Queue) Status(ctx context.Context, tenant string) (Status, error) {
	var st Status
	queued, err := q.store.QueuedExtractions(ctx, 10000, false)
	if err != nil {
		return st, err
	}
	for _, e := range queued {
		if tenant == "" || e.Tenant == tenant {
			st.Queued++
		}
	}
	err = q.eachJob(ctx, nil, func(j *rivertype.JobRow, a ExtractArgs) error {
		if tenant != "" && a.Tenant != tenant {
			return nil
		}
		switch j.State {
		case rivertype.JobStateRunning:
			st.Running++
		case rivertype.JobStateCompleted:
			st.Completed++
		case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
			st.Failed++
		default:
			st.Available++
		}
		return nil
	})
	return st, err
}

// Retry makes a tenant's failed jobs (every tenant's when empty)
// available again, with fresh attempts, and returns how many.
func (q *Queue) Retry(ctx context.Context, tenant string) (int, error) {
	var ids []int64
	err := q.eachJob(ctx, []rivertype.JobState{rivertype.JobStateDiscarded, rivertype.JobStateCancelled}, func(j *rivertype.JobRow, a ExtractArgs) error {
		if tenant == "" || a.Tenant == tenant {
			ids = append(ids, j.ID)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if _, err := q.river.JobRetry(ctx, id); err != nil {
			return 0, fmt.Errorf("retry job %d: %w", id, err)
		}
	}
	return len(ids), nil
}

// eachJob calls fn for every extraction job in states (all when nil).
func (q *Queue) eachJob(ctx context.Context, states []rivertype.JobState, fn func(*rivertype.JobRow, ExtractArgs) error) error {
	params := river.NewJobListParams().Kinds(ExtractArgs{}.Kind()).First(1000)
	if states != nil {
		params = params.States(states...)
	}
	for {
		res, err := q.river.JobList(ctx, params)
		if err != nil {
			return fmt.Errorf("list extraction jobs: %w", err)
		}
		for _, j := range res.Jobs {
			var a ExtractArgs
			if err := jsonUnmarshal(j.EncodedArgs, &a); err != nil {
				return fmt.Errorf("job %d: %w", j.ID, err)
			}
			if err := fn(j, a); err != nil {
				return err
			}
		}
		if len(res.Jobs) < 1000 || res.LastCursor == nil {
			return nil
		}
		params = params.After(res.LastCursor)
	}
}
