package locomo

import (
	"context"
	"fmt"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
)

// Store is what a run writes episodes to and recalls from.
type Store interface {
	recall.Store
	AddEpisode(ctx context.Context, e sgam.Episode) (sgam.Episode, error)
}

// Ks are the cut-offs the report gives: turn recall@5, @10, @25 and
// session recall@1, @3.
var (
	TurnKs    = []int{5, 10, 25}
	SessionKs = []int{1, 3}
)

// RunOptions configure a run.
type RunOptions struct {
	// Progress, when set, is told the questions done of total.
	Progress func(done, total int)
	// Clock is recall's now; default the system clock (the store's, which
	// recorded the episodes: recall searches what was recorded by now).
	Clock sgam.Clock
	// Embedder, when set with Vectors, makes recall fuse vector search
	// with the lexical (the episodes must be embedded: Embed).
	Embedder llm.Embedder
	Vectors  sgam.VectorSearch
}

// Results are the figures of a run: every conversation together, and
// the first and second half of them apart (the first half is the one to
// tune on; the second says how it generalizes).
type Results struct {
	All    *Report `json:"all"`
	Tuned  *Report `json:"tuned"`  // conversations 1-5
	Unseen *Report `json:"unseen"` // conversations 6-10
	// Episodes captured, questions asked (categories 1-4), and how
	// evidence was searched ("lexical", "lexical+vector (MODEL)").
	Episodes  int    `json:"episodes"`
	Questions int    `json:"questions"`
	Search    string `json:"search"`
	// Embedding is what embedding the episodes cost, when they were.
	Embedding *EmbedCost `json:"embedding,omitempty"`
	// Lexical is the same questions asked by words alone, beside fused
	// figures, when both were asked for (sgam eval locomo --compare).
	Lexical *Results `json:"lexical,omitempty"`
	// Contexts are what the contexts an agent would be given held, by
	// evidence mode and budget (context.go).
	Contexts ContextResults `json:"contexts"`
}

// ContextResults are the context figures of every conversation and of
// each half apart.
type ContextResults struct {
	All    []ContextFigures `json:"all"`
	Tuned  []ContextFigures `json:"tuned"`
	Unseen []ContextFigures `json:"unseen"`
}

// TenantOf is the tenant a conversation is captured under: one per
// conversation, so that no question can be answered from another's turns.
func TenantOf(c Conversation) string { return "locomo-" + c.ID }

// Content is the text an episode holds for a turn: the speaker's name,
// the words, and the caption of an image the speaker shared.
func Content(t Turn) string {
	s := t.Speaker + ": " + t.Text
	if t.Caption != "" {
		s += " [shares an image: " + t.Caption + "]"
	}
	return s
}

// Capture writes every turn of the conversations as an episode: its id
// the turn's dia_id, its session "session_N", occurring at the session's
// date and time plus one second per turn (their order).
func Capture(ctx context.Context, s Store, convs []Conversation) (int, error) {
	n := 0
	for _, c := range convs {
		for _, sess := range c.Sessions {
			for i, t := range sess.Turns {
				_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: TenantOf(c), ID: t.DiaID, Session: fmt.Sprintf("session_%d", sess.N),
					Kind: sgam.KindMessage, Content: Content(t), OccurredAt: sess.At.Add(time.Duration(i) * time.Second)})
				if err != nil {
					return n, fmt.Errorf("locomo: %s %s: %w", c.ID, t.DiaID, err)
				}
				n++
			}
		}
	}
	return n, nil
}

// EmbedCost is what embedding the captured episodes cost: the episodes
// and texts' tokens (as the embedding server counted them) and the time
// of the whole load, storing the vectors included.
type EmbedCost struct {
	Model    string `json:"model"`
	Episodes int    `json:"episodes"`
	Tokens   int    `json:"tokens"`
	TimeMS   int64  `json:"time_ms"`
}

// Embed embeds every captured episode with e, as the queue's embedding
// job does in a server, telling progress the episodes done, and returns
// what it cost.
func Embed(ctx context.Context, s sgam.Embeddings, e llm.Embedder, total int, progress func(done, total int)) (cost EmbedCost, err error) {
	cost.Model = e.Model()
	start := time.Now()
	defer func() { cost.TimeMS = time.Since(start).Milliseconds() }()
	for {
		eps, err := s.EpisodesToEmbed(ctx, e.Model(), 256)
		if err != nil || len(eps) == 0 {
			return cost, err
		}
		texts := make([]string, len(eps))
		for i, ep := range eps {
			texts[i] = ep.Content
		}
		vecs, tokens, err := e.Embed(ctx, texts)
		cost.Tokens += tokens
		if err != nil {
			return cost, fmt.Errorf("locomo: embed: %w", err)
		}
		vs := make([]sgam.EpisodeVector, len(eps))
		for i, ep := range eps {
			vs[i] = sgam.EpisodeVector{Tenant: ep.Tenant, EpisodeID: ep.ID, Vector: vecs[i], RecordedAt: ep.RecordedAt}
		}
		if _, err := s.PutEmbeddings(ctx, e.Model(), vs); err != nil {
			return cost, err
		}
		cost.Episodes += len(eps)
		if progress != nil {
			progress(min(cost.Episodes, total), total)
		}
	}
}

// Run asks every question of categories 1-4 through recall, with no
// model and no network, and scores the cited episodes against the
// question's evidence turns. The episodes must be captured already.
func Run(ctx context.Context, s Store, convs []Conversation, opts RunOptions) (*Results, error) {
	clock := opts.Clock
	if clock == nil {
		clock = sgam.SystemClock{}
	}
	r := recall.New(s).WithClock(clock)
	r.WithEmbedder(opts.Embedder, opts.Vectors)
	res := &Results{All: &Report{}, Tuned: &Report{}, Unseen: &Report{}}
	total := 0
	for _, c := range convs {
		for _, q := range c.Questions {
			if q.Category >= 1 && q.Category <= 4 {
				total++
			}
		}
	}
	maxK := TurnKs[len(TurnKs)-1]
	var all, tuned, unseen contexts
	for ci, c := range convs {
		for _, q := range c.Questions {
			if q.Category < 1 || q.Category > 4 {
				continue
			}
			start := time.Now()
			// The ranking: the best maxK episodes, whatever their score.
			ctxt, err := r.Recall(ctx, recall.Query{Tenant: TenantOf(c), Question: q.Text, Evidence: recall.EvidenceAlways,
				EvidenceLimit: maxK, TokenBudget: recall.MaxBudget, Hops: recall.None})
			elapsed := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("locomo: %s: %q: %w", c.ID, q.Text, err)
			}
			ranked := make([]string, len(ctxt.Evidence))
			for i, e := range ctxt.Evidence {
				ranked[i] = e.EpisodeID
			}
			turn, session := map[int]float64{}, map[int]float64{}
			for _, k := range TurnKs {
				turn[k] = TurnRecall(q.Evidence, ranked, k)
			}
			for _, k := range SessionKs {
				session[k] = SessionRecall(q.Evidence, ranked, k)
			}
			res.All.Add(q.Category, turn, session, elapsed)
			if ci < 5 {
				res.Tuned.Add(q.Category, turn, session, elapsed)
			} else {
				res.Unseen.Add(q.Category, turn, session, elapsed)
			}
			half := &tuned
			if ci >= 5 {
				half = &unseen
			}
			for _, mode := range ContextModes {
				for _, budget := range ContextBudgets {
					ctxt, err := r.Recall(ctx, recall.Query{Tenant: TenantOf(c), Question: q.Text, Evidence: mode,
						EvidenceLimit: ContextLimit, TokenBudget: budget})
					if err != nil {
						return nil, fmt.Errorf("locomo: %s: %q: %w", c.ID, q.Text, err)
					}
					all.add(mode, budget, q, ctxt)
					half.add(mode, budget, q, ctxt)
				}
			}
			res.Questions++
			if opts.Progress != nil {
				opts.Progress(res.Questions, total)
			}
		}
	}
	res.Contexts = ContextResults{All: all.figures(), Tuned: tuned.figures(), Unseen: unseen.figures()}
	return res, nil
}
