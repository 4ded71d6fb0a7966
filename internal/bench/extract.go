package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/internal/workload"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/queue"
	"github.com/sgam-dev/sgam/store"
)

// ExtractOptions select what `sgam bench extract` measures.
type ExtractOptions struct {
	// DSN is the store to measure: a postgres:// URL (an empty database or
	// schema), or empty for a fresh SQLite file in Dir.
	DSN string
	Dir string
	// Facts are loaded before measuring (the reference workload: 1,000
	// subjects), then each subject gets one current value of a fixed width,
	// so that a store of any size shows the same current state.
	Facts int
	// Episodes are extracted one after the other, the fake model answering
	// at once: the pipeline's own cost.
	Episodes int
	// Throughput: Workers extract ThroughputEpisodes through the queue,
	// the fake model taking Latency per call.
	Workers            int
	Latency            time.Duration
	ThroughputEpisodes int
	Progress           Progress
}

// ExtractResult is one run of the extraction benchmark.
type ExtractResult struct {
	Store    string `json:"store"`
	Facts    int    `json:"facts"`
	Episodes int    `json:"episodes"`
	// PerEpisode is the mean of capture plus extraction (prompt, the fake
	// model's answer, validation, commit, record), with percentiles.
	PerEpisode time.Duration `json:"per_episode_ns"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	// CallsPerEpisode is model calls per extracted episode; AgainCalls the
	// calls of extracting them all again with nothing changed (0).
	CallsPerEpisode float64 `json:"calls_per_episode"`
	AgainCalls      int     `json:"again_calls"`
	// PromptTokens is the mean prompt tokens per episode as the model
	// counted them (the fake counts bytes/4); PromptBytes the mean prompt
	// size, and PromptBytesSmall the same episodes' in a store of 1,000
	// facts: the prompt does not grow with the store.
	PromptTokens     float64 `json:"prompt_tokens_per_episode"`
	PromptBytes      float64 `json:"prompt_bytes"`
	PromptBytesSmall float64 `json:"prompt_bytes_small_store"`
	// Throughput through the queue with a slow model.
	Workers            int           `json:"workers"`
	Latency            time.Duration `json:"model_latency_ns"`
	ThroughputEpisodes int           `json:"throughput_episodes"`
	EpisodesPerS       float64       `json:"episodes_per_s"`
}

// fakeModel is an OpenAI-compatible server answering "sN now prefers X."
// with that update, after latency. It counts calls.
func fakeModel(latency *atomic.Int64) (*httptest.Server, *atomic.Int64) {
	calls := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if d := time.Duration(latency.Load()); d > 0 {
			time.Sleep(d)
		}
		user := req.Messages[1].Content
		ep := user[strings.LastIndex(user, "\">\n")+3:]
		ep = ep[:strings.Index(ep, "\n</episode>")]
		var subject, value string
		updates := []map[string]any{}
		if _, err := fmt.Sscanf(ep, "%s now prefers %s", &subject, &value); err == nil {
			value = strings.TrimSuffix(value, ".")
			updates = append(updates, map[string]any{"evidence": "now prefers " + value, "subject": subject, "attribute": "a",
				"current_value": nil, "change": "update", "value": value, "valid_from": nil})
		}
		content, _ := json.Marshal(map[string]any{"updates": updates})
		prompt := (len(req.Messages[0].Content) + len(user)) / 4
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "bench",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": len(content) / 4, "total_tokens": prompt + len(content)/4}})
	}))
	return srv, calls
}

// benchEpisode is episode j of a run: subject j % 1000 states a new value.
func benchEpisode(j int) sgam.Episode {
	return sgam.Episode{Tenant: workload.Tenant, ID: fmt.Sprintf("x%06d", j), Session: fmt.Sprintf("sess%d", j%50),
		Content:    fmt.Sprintf("s%d now prefers w%06d.", j%workload.Subjects, j),
		OccurredAt: workload.Base.Add(time.Duration(1e9+j) * time.Second)}
}

// seedExtract loads facts into s, then one current value of a fixed width per
// subject.
func seedExtract(ctx context.Context, s sgam.Store, facts int, progress func(done int)) error {
	for i := 0; i < facts; i += 1000 {
		if _, err := s.AssertMany(ctx, workload.Batch(i, min(1000, facts-i))); err != nil {
			return err
		}
		progress(i + 1000)
	}
	cur := make([]sgam.Assertion, workload.Subjects)
	for k := range cur {
		cur[k] = sgam.Assertion{Key: workload.Key(k), Value: []byte(fmt.Sprintf(`"cur-%04d"`, k)),
			ValidFrom: workload.Base.Add(time.Duration(facts+1e6+k) * time.Second), Source: "seed"}
	}
	_, err := s.AssertMany(ctx, cur)
	return err
}

// Extract runs the extraction benchmark.
func Extract(ctx context.Context, opts ExtractOptions) (ExtractResult, error) {
	res := ExtractResult{Facts: opts.Facts, Episodes: opts.Episodes, Workers: opts.Workers, Latency: opts.Latency, ThroughputEpisodes: opts.ThroughputEpisodes}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	latency := &atomic.Int64{}
	srv, calls := fakeModel(latency)
	defer srv.Close()
	model, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "bench"})
	if err != nil {
		return res, err
	}

	open := func(name string) (sgam.Store, string, error) { // the store measured
		dsn := opts.DSN
		if dsn == "" {
			dsn = filepath.Join(opts.Dir, name+".db")
		}
		s, err := store.Open(ctx, dsn, store.Options{})
		return s, dsn, err
	}
	res.Store = "sqlite"
	if opts.DSN != "" {
		res.Store = "postgres"
	}

	// The small store, for the prompt size of the same episodes: a SQLite
	// file whatever the store measured (the prompt is built above the
	// driver).
	small, err := store.Open(ctx, filepath.Join(opts.Dir, "small.db"), store.Options{})
	if err != nil {
		return res, err
	}
	if err := seedExtract(ctx, small, 1000, func(int) {}); err != nil {
		small.Close()
		return res, err
	}
	xs := extract.New(small, model)
	var smallBytes int
	for j := range opts.Episodes {
		e := benchEpisode(j)
		if _, err := small.AddEpisode(ctx, e); err != nil {
			small.Close()
			return res, err
		}
		r, err := xs.Extract(ctx, e.Tenant, e.ID, extract.Options{})
		if err != nil {
			small.Close()
			return res, err
		}
		smallBytes += len(r.Record.Prompt)
	}
	small.Close()

	big, bigDSN, err := open("big")
	if err != nil {
		return res, err
	}
	defer big.Close()
	if err := seedExtract(ctx, big, opts.Facts, func(done int) { progress("loading facts", done, opts.Facts) }); err != nil {
		return res, err
	}

	// The pipeline's own cost: capture and extract, one after the other.
	x := extract.New(big, model)
	durs := make([]time.Duration, opts.Episodes)
	var promptBytes, promptTokens int
	calls.Store(0)
	for j := range opts.Episodes {
		e := benchEpisode(j)
		start := time.Now()
		if _, err := big.AddEpisode(ctx, e); err != nil {
			return res, err
		}
		r, err := x.Extract(ctx, e.Tenant, e.ID, extract.Options{})
		if err != nil {
			return res, err
		}
		durs[j] = time.Since(start)
		if len(r.Record.Accepted) != 1 || r.Record.Accepted[0].Outcome != sgam.OutcomeWritten {
			return res, fmt.Errorf("episode %s: the extraction wrote %+v", e.ID, r.Record.Accepted)
		}
		promptBytes += len(r.Record.Prompt)
		promptTokens += r.Record.TokensIn
		progress("extracting", j+1, opts.Episodes)
	}
	var total time.Duration
	for _, d := range durs {
		total += d
	}
	res.PerEpisode = total / time.Duration(opts.Episodes)
	slices.Sort(durs)
	res.P50, res.P99 = durs[len(durs)/2], durs[len(durs)*99/100]
	res.CallsPerEpisode = float64(calls.Load()) / float64(opts.Episodes)
	res.PromptBytes = float64(promptBytes) / float64(opts.Episodes)
	res.PromptTokens = float64(promptTokens) / float64(opts.Episodes)
	res.PromptBytesSmall = float64(smallBytes) / float64(opts.Episodes)

	// Again, nothing changed: no call.
	calls.Store(0)
	for j := range opts.Episodes {
		e := benchEpisode(j)
		if _, err := x.Extract(ctx, e.Tenant, e.ID, extract.Options{Again: true}); err != nil {
			return res, err
		}
	}
	res.AgainCalls = int(calls.Load())

	// Throughput through the queue with a slow model.
	if opts.ThroughputEpisodes > 0 {
		latency.Store(int64(opts.Latency))
		q, err := queue.Open(ctx, bigDSN, big, extract.New(big, model), queue.Config{Workers: opts.Workers, PollInterval: 50 * time.Millisecond})
		if err != nil {
			return res, err
		}
		var refs []queue.Ref
		for j := range opts.ThroughputEpisodes {
			e := benchEpisode(opts.Episodes + j)
			if _, _, err := big.AddEpisodeToExtract(ctx, e, 0); err != nil {
				q.Stop(ctx)
				return res, err
			}
			refs = append(refs, queue.Ref{Tenant: e.Tenant, EpisodeID: e.ID})
		}
		start := time.Now()
		if err := q.Start(ctx); err != nil {
			q.Stop(ctx)
			return res, err
		}
		_, err = queue.Wait(ctx, big, refs, time.Time{}, 20*time.Millisecond, func(p queue.Progress) {
			progress("extracting through the queue", p.Ended, p.Total)
		})
		elapsed := time.Since(start)
		if serr := q.Stop(ctx); err == nil {
			err = serr
		}
		if err != nil {
			return res, err
		}
		res.EpisodesPerS = float64(opts.ThroughputEpisodes) / elapsed.Seconds()
	}
	return res, nil
}
