package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
)

// Embedding episodes, when Config.Embedder is set: the dispatcher loop
// looks for episodes without a vector of the embedder's model and, when
// it finds one, inserts the embedding job (unique: at most one waits or
// runs per model, across processes). The job embeds every such episode of
// every tenant, a batch at a time, storing each batch's vectors under the
// episodes' own tenants, until none is left; then it deletes the vectors
// of other models. A change of model (a new Embedder.Model()) so embeds
// every stored episode again, from its content, extracting nothing, and
// drops the old vectors once the new ones are all there. Every process of
// one store must use one embedding model.

// EmbedQueueName is River's queue of the embedding job: its own, so that
// it never takes an extraction worker, and one worker per process.
const EmbedQueueName = "sgam_embed"

// EmbedArgs are the embedding job's arguments: the model it embeds with.
type EmbedArgs struct {
	Model string `json:"model"`
}

// Kind implements river.JobArgs.
func (EmbedArgs) Kind() string { return "sgam_embed" }

// InsertOpts implements river.JobArgsWithInsertOpts: one job per model
// until it ends, so that the dispatcher may insert it at every round.
func (EmbedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: EmbedQueueName, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

const (
	// embedBatch is how many episodes one request embeds, and one
	// PutEmbeddings stores.
	embedBatch = llm.MaxEmbedBatch
	// maxSkipped bounds the episodes a job passes over (their texts
	// refused by the server) before it stops.
	maxSkipped = 256
	// minCutBytes is the shortest beginning of a refused text that is
	// tried before the episode is passed over.
	minCutBytes = 1 << 10
	// checkDuty bounds the share of the dispatcher's time spent looking
	// for episodes to embed (the look walks every embedded episode when
	// none is left): the next look waits checkDuty times the last one's
	// duration, and at least the poll interval.
	checkDuty = 20
)

// embedPause is how long the dispatcher of a process whose job failed for
// good (a refused key, an unknown model, an unusable answer) or passed
// episodes over waits before it inserts the job again: the same failure
// would come back at once.
const embedPause = 10 * time.Minute

// embedState is the dispatcher's and the job's memory in one process.
type embedState struct {
	mu      sync.Mutex
	next    time.Time // the dispatcher's next look
	paused  time.Time // no job inserted before
	dropped string    // the model whose full pass dropped the other models' vectors
}

func (s *embedState) pause(d time.Duration) {
	s.mu.Lock()
	s.paused = time.Now().Add(d)
	s.mu.Unlock()
}

// addEmbedWorker registers the embedding job's worker and queue on rc.
func addEmbedWorker(rc *river.Config, cfg Config, w *worker) {
	if cfg.Embedder == nil {
		return
	}
	river.AddWorker(rc.Workers, &embedWorker{w: w})
	if rc.Queues != nil {
		rc.Queues[EmbedQueueName] = river.QueueConfig{MaxWorkers: 1}
	}
}

// dispatchEmbed inserts the embedding job when an episode lacks a vector
// of the embedder's model, at most as often as checkDuty allows.
func (q *Queue) dispatchEmbed(ctx context.Context) {
	e := q.cfg.Embedder
	if e == nil {
		return
	}
	now := time.Now()
	q.embed.mu.Lock()
	due := !now.Before(q.embed.next) && !now.Before(q.embed.paused)
	q.embed.mu.Unlock()
	if !due {
		return
	}
	st := q.cfg.Embeddings
	model := e.Model()
	todo, err := st.EpisodesToEmbed(ctx, model, 1)
	took := time.Since(now)
	q.embed.mu.Lock()
	q.embed.next = time.Now().Add(max(q.cfg.PollInterval, checkDuty*took))
	q.embed.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			q.cfg.Logger.Warn("sgam queue: looking for episodes to embed failed", "model", model, "error", err)
		}
		return
	}
	if len(todo) == 0 {
		return
	}
	if _, err := q.river.InsertMany(ctx, []river.InsertManyParams{{Args: EmbedArgs{Model: model}}}); err != nil && ctx.Err() == nil {
		q.cfg.Logger.Warn("sgam queue: inserting the embedding job failed", "model", model, "error", err)
	}
}

// embedWorker works the embedding job.
type embedWorker struct {
	river.WorkerDefaults[EmbedArgs]
	w *worker // whose q is set once the queue is made
}

// Work embeds every episode without a vector of the model, a batch at a
// time, each batch stored as it comes: an attempt cut short by a shutdown,
// or by JobTimeout after it stored a batch, loses nothing, and is snoozed
// to go on at once; one that JobTimeout cut before it stored any counts as
// a failed attempt (a batch slower than the timeout would otherwise be
// sent again and again). A failure a retry may mend (429, 5xx, a timeout,
// a store that is busy) returns the error, for River to retry with
// backoff; one no retry mends (another 4xx, an unusable answer, vectors of another
// dimension than the stored ones) is logged, cancels the job, and pauses
// the dispatcher for embedPause.
func (ew *embedWorker) Work(ctx context.Context, job *river.Job[EmbedArgs]) error {
	q := ew.w.q
	e := q.cfg.Embedder
	log := q.cfg.Logger.With("model", e.Model())
	st := q.cfg.Embeddings
	model := e.Model()
	if job.Args.Model != model {
		err := fmt.Errorf("the job embeds with %q and this process with %q: every process of a store must use one embedding model", job.Args.Model, model)
		log.Warn("sgam queue: embedding job of another model", "error", err)
		return river.JobCancel(err)
	}
	permanent := func(err error) error {
		log.Error("sgam queue: embedding failed; the job ends, and is inserted again after a pause", "error", safeText(err), "pause", embedPause)
		q.embed.pause(embedPause)
		return river.JobCancel(jobError(err))
	}
	skipped := map[[2]string]bool{}
	stored, fruitless := 0, 0
	cut := func() error {
		if errors.Is(ctx.Err(), context.Canceled) || stored > 0 {
			return river.JobSnooze(0)
		}
		return errors.New("the job's timeout passed before a batch was stored")
	}
	for {
		if ctx.Err() != nil {
			return cut()
		}
		eps, err := st.EpisodesToEmbed(ctx, model, embedBatch+len(skipped))
		if err != nil {
			if ctx.Err() != nil {
				return cut()
			}
			return jobError(err)
		}
		todo := eps[:0]
		for _, ep := range eps {
			if !skipped[[2]string{ep.Tenant, ep.ID}] && len(todo) < embedBatch {
				todo = append(todo, ep)
			}
		}
		if len(todo) == 0 {
			break
		}
		vecs, refused, err := embedEpisodes(ctx, e, todo, log)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return cut()
		case sgam.Retryable(err):
			return jobError(err)
		default:
			return permanent(err)
		}
		vs := make([]sgam.EpisodeVector, 0, len(todo))
		for i, ep := range todo {
			if vecs[i] == nil {
				skipped[[2]string{ep.Tenant, ep.ID}] = true
				log.Warn("sgam queue: the embeddings server refuses an episode; it stays without a vector", "tenant", ep.Tenant, "episode_id", ep.ID, "error", safeText(refused[i]))
				continue
			}
			vs = append(vs, sgam.EpisodeVector{Tenant: ep.Tenant, EpisodeID: ep.ID, Vector: vecs[i], RecordedAt: ep.RecordedAt})
		}
		n, err := st.PutEmbeddings(ctx, model, vs)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return cut()
		case sgam.ErrorCode(err) == sgam.Invalid:
			return permanent(err) // another dimension than the stored vectors'
		default:
			return jobError(err)
		}
		stored += n
		// A batch of which nothing is kept was forgotten meanwhile (it is
		// listed no more); three in a row would be the store at odds with
		// itself, which must not spin.
		if n > 0 || len(vs) == 0 {
			fruitless = 0
		} else if fruitless++; fruitless >= 3 {
			return fmt.Errorf("the store kept none of %d batches of vectors in a row", fruitless)
		}
		if len(skipped) > maxSkipped {
			return permanent(fmt.Errorf("the server refused the texts of %d episodes", len(skipped)))
		}
	}
	if len(skipped) > 0 {
		log.Warn("sgam queue: embedding passed episodes over", "episodes", len(skipped), "pause", embedPause)
		q.embed.pause(embedPause)
		return nil
	}
	if stored > 0 {
		log.Debug("sgam queue: episodes embedded", "episodes", stored)
	}
	// Every episode has a vector of the model: other models' vectors are
	// of no more use. Once per process and model, since the delete reads
	// every vector.
	q.embed.mu.Lock()
	drop := q.embed.dropped != model
	q.embed.mu.Unlock()
	if drop {
		n, err := st.DropEmbeddings(ctx, model)
		if err != nil {
			if ctx.Err() != nil {
				return cut()
			}
			return jobError(err)
		}
		q.embed.mu.Lock()
		q.embed.dropped = model
		q.embed.mu.Unlock()
		if n > 0 {
			log.Info("sgam queue: vectors of other models dropped", "vectors", n)
		}
	}
	return nil
}

// embedEpisodes embeds the content of eps (the text recall searches).
// When the server refuses the batch for its input (400, 413, 422), the
// texts go one by one, and a refused one again at half its length, down
// to minCutBytes (its vector is that of its beginning, logged); a text
// refused even then gets no vector (nil), its error in refused. If every
// text is refused, the refusal is not about them, and is the error.
func embedEpisodes(ctx context.Context, e llm.Embedder, eps []sgam.Episode, log *slog.Logger) (vecs [][]float32, refused []error, err error) {
	texts := make([]string, len(eps))
	for i, ep := range eps {
		texts[i] = ep.Content
	}
	vecs, _, err = e.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		return nil, nil, fmt.Errorf("the embedder answered %d vectors for %d texts", len(vecs), len(texts))
	}
	if err == nil || !refusedInput(err) {
		return vecs, nil, err
	}
	vecs, refused = make([][]float32, len(eps)), make([]error, len(eps))
	failed := 0
	for i, text := range texts {
		// What an EmbedClient would send of it at most.
		text = llm.CutText(text, llm.MaxEmbedTextBytes)
		for {
			v, _, err := e.Embed(ctx, []string{text})
			if err == nil && len(v) != 1 {
				return nil, nil, fmt.Errorf("the embedder answered %d vectors for 1 text", len(v))
			}
			if err == nil {
				vecs[i] = v[0]
				if len(text) < len(texts[i]) {
					log.Info("sgam queue: an episode is embedded by its beginning, the server refusing more", "tenant", eps[i].Tenant, "episode_id", eps[i].ID,
						"bytes", len(text), "of", len(texts[i]))
				}
				break
			}
			if !refusedInput(err) {
				return nil, nil, err
			}
			if len(text) <= minCutBytes {
				refused[i] = err
				failed++
				break
			}
			text = llm.CutText(text, len(text)/2)
		}
	}
	if failed == len(eps) {
		return nil, nil, refused[len(eps)-1]
	}
	return vecs, refused, nil
}

// refusedInput reports an answer that blames the request's texts.
func refusedInput(err error) bool {
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindStatus {
		return false
	}
	switch le.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}
