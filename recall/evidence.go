package recall

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// Evidence is ranked in two steps: the full-text index ranks episodes by
// their words (BM25 on SQLite, ts_rank on PostgreSQL), and then the
// conversation around them counts. A turn that answers a question often
// shares few words with it, while the turns beside it, or others of its
// session, do ("what did Mira paint?" is answered by "a sunrise", said
// after "what did you paint?"). So a candidate's score is its own
// (relative to the best), plus sessionWeight times its session's score
// (the sum of its best sessionTop candidates, relative to the best
// session's), plus the scores of its neighbours in the session (the
// episodes just before and after it in occurred_at order, and less, those
// two away); the neighbours of the best candidates that the index did not
// find become candidates themselves; and an episode that holds more of
// the question's terms scores higher (coverageWeight). The weights were
// tuned on the first
// five LoCoMo conversations (`sgam eval locomo` reports the other five
// apart) and name nothing of that data set.
const (
	sessionWeight = 1.0
	sessionTop    = 2
	afterWeight   = 0.2  // of the episode just before: its answer may follow
	beforeWeight  = 0.1  // of the episode just after
	farWeight     = 0.35 // of the better of the two episodes two away
	// The index ranks candidateDepth episodes per episode to cite (at
	// least minCandidates), and the best expanded of them get their
	// neighbours read.
	candidateDepth = 8
	minCandidates  = 30
	expanded       = 10
	// coverageWeight counts, in a candidate's own score, the fraction of
	// the question's distinct terms its words hold (by stem): BM25 sums
	// the terms it matches, so one rare word said twice can outrank a turn
	// that says most of what was asked. It enters before the neighbours'
	// weights, so a turn beside one that covers the question gains too.
	coverageWeight = 1.3
	// maxCoverageTerms bounds the words of an episode read for coverage.
	maxCoverageTerms = 256
)

// candidate is an episode that may be cited, with its own relative score
// and what is known of its neighbours: prev[0] just before it, prev[1]
// two before; next likewise.
type candidate struct {
	episode    sgam.Episode
	own, score float64
	prev, next [2]*candidate
}

// evidence finds the episodes to cite: the index's candidates reranked
// with their conversation, the best q.EvidenceLimit of them.
func (g *gather) evidence() ([]sgam.EpisodeHit, error) {
	limit := g.q.EvidenceLimit
	depth := min(sgam.MaxSearchLimit, max(minCandidates, candidateDepth*limit))
	g.out.Search = "lexical"
	hits, err := g.r.store.SearchEpisodes(g.ctx, sgam.SearchQuery{Tenant: g.q.Tenant, Text: g.q.Question, Limit: depth, KnownAt: g.at.KnownAt, NoSnippet: true})
	if err != nil {
		return nil, err
	}
	fused := false
	if g.r.embed != nil && g.r.vectors != nil {
		if hits, fused, err = g.fuse(hits, depth); err != nil {
			return nil, err
		}
	}
	if len(hits) == 0 {
		return hits, nil
	}
	// A candidate's own score is relative to the best one's; fused scores
	// lie close together (1/61, 1/62, ...), so they are spread over [0, 1]
	// first, as the conversation's weights expect.
	best, floor := hits[0].Score, 0.0
	if fused {
		floor = hits[len(hits)-1].Score
		best -= floor
	}
	if best <= 0 {
		best = 1
	}
	by := map[string]*candidate{}
	var all []*candidate
	add := func(e sgam.Episode, own float64) *candidate {
		if c, ok := by[e.ID]; ok {
			return c
		}
		c := &candidate{episode: e, own: own}
		by[e.ID] = c
		all = append(all, c)
		return c
	}
	sessions := map[string][]float64{}
	for _, h := range hits {
		own := (h.Score - floor) / best
		add(h.Episode, own)
		if s := h.Episode.Session; s != "" {
			sessions[s] = append(sessions[s], own)
		}
	}
	terms := words.Terms(g.q.Question, words.MaxTerms)
	var ids []string
	for _, h := range hits[:min(expanded, len(hits))] {
		if h.Episode.Session != "" {
			ids = append(ids, h.Episode.ID)
		}
	}
	windows, err := g.r.store.Around(g.ctx, g.q.Tenant, ids, 2, g.at.KnownAt)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		w := windows[id]
		seq := append(append(append([]sgam.Episode{}, w.Before...), by[id].episode), w.After...)
		cs := make([]*candidate, len(seq))
		for i, e := range seq {
			cs[i] = add(e, 0)
		}
		for i, c := range cs {
			for d := 1; d <= 2; d++ {
				if i-d >= 0 {
					c.prev[d-1] = cs[i-d]
				}
				if i+d < len(cs) {
					c.next[d-1] = cs[i+d]
				}
			}
		}
	}
	bestSession := 0.0
	sessionScore := map[string]float64{}
	for s, scores := range sessions {
		slices.SortFunc(scores, func(a, b float64) int { return cmp.Compare(b, a) })
		for _, v := range scores[:min(sessionTop, len(scores))] {
			sessionScore[s] += v
		}
		bestSession = max(bestSession, sessionScore[s])
	}
	own := func(c *candidate) float64 {
		if c == nil {
			return 0
		}
		return c.own
	}
	asked := map[string]bool{}
	var initials [256]bool // the first bytes of the asked stems
	for _, t := range terms {
		st := words.Stem(t)
		asked[st] = true
		if st != "" {
			initials[st[0]] = true
		}
	}
	if len(asked) > 0 {
		// Each word is stemmed once per recall: the candidates share most
		// of their words, and stemming is the dear part. The Porter
		// stemmer only rewrites a word's end and keeps its first letter,
		// so a word whose first byte starts no asked stem is not stemmed.
		stemOf := map[string]string{} // word → its stem if asked, else ""
		seen := map[string]bool{}
		for _, c := range all {
			clear(seen)
			for i, t := range words.Tokens(c.episode.Content) {
				if i == maxCoverageTerms {
					break
				}
				if t == "" || !initials[t[0]] {
					continue
				}
				st, ok := stemOf[t]
				if !ok {
					if st = words.Stem(t); !asked[st] {
						st = ""
					}
					stemOf[t] = st
				}
				if st != "" {
					seen[st] = true
				}
			}
			c.own += coverageWeight * float64(len(seen)) / float64(len(asked))
		}
	}
	for _, c := range all {
		c.score = c.own + afterWeight*own(c.prev[0]) + beforeWeight*own(c.next[0]) + farWeight*max(own(c.prev[1]), own(c.next[1]))
		if bestSession > 0 {
			c.score += sessionWeight * sessionScore[c.episode.Session] / bestSession
		}
	}
	slices.SortStableFunc(all, func(a, b *candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.episode.ID, b.episode.ID)
	})
	out := make([]sgam.EpisodeHit, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		// Snippets are cut for the cited episodes only.
		out = append(out, sgam.EpisodeHit{Episode: c.episode, Score: c.score, Snippet: words.Snippet(c.episode.Content, terms, maxSnippetBytes)})
	}
	return out, nil
}

// rrfK is reciprocal rank fusion's constant: an episode ranked r-th in a
// list adds 1/(rrfK + r) (Cormack et al. 2009, whose 60 is the usual
// choice).
const rrfK = 60

// fuse adds the episodes nearest to the question's vector to the lexical
// hits, ranked by reciprocal rank fusion of the two lists; the fused
// score is what the conversation's ranking then starts from. When the
// embedding endpoint fails, recall goes on lexically and says so.
func (g *gather) fuse(hits []sgam.EpisodeHit, depth int) (_ []sgam.EpisodeHit, fused bool, err error) {
	model := g.r.embed.Model()
	vecs, _, err := g.r.embed.Embed(g.ctx, []string{g.q.Question})
	if err != nil || len(vecs) != 1 {
		if g.ctx.Err() != nil {
			return nil, false, g.ctx.Err()
		}
		g.out.Warnings = append(g.out.Warnings, "the embedding endpoint failed, so the evidence is lexical only: "+errText(err))
		return hits, false, nil
	}
	near, err := g.r.vectors.NearestEpisodes(g.ctx, sgam.VectorQuery{Tenant: g.q.Tenant, Model: model, Vector: vecs[0], Limit: depth, KnownAt: g.at.KnownAt})
	if sgam.ErrorCode(err) == sgam.Invalid {
		// The model answers vectors of another dimension than those
		// stored under its name (it was changed): lexical until the
		// queue has embedded the episodes again.
		g.out.Warnings = append(g.out.Warnings, "the stored vectors do not fit the question's, so the evidence is lexical only: "+err.Error())
		return hits, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(near) == 0 {
		// Nothing of the tenant is embedded under this model (yet): the
		// workers embed episodes in the background.
		g.out.Warnings = append(g.out.Warnings, "no episode of this tenant has a vector of model "+model+
			" yet, so the evidence is lexical only: the workers of sgam serve and sgam worker embed the episodes")
		return hits, false, nil
	}
	g.out.Search = "lexical+vector (" + model + ")"
	score := map[string]float64{}
	byID := map[string]sgam.EpisodeHit{}
	for _, list := range [][]sgam.EpisodeHit{hits, near} {
		for r, h := range list {
			score[h.Episode.ID] += 1 / float64(rrfK+r+1)
			if _, ok := byID[h.Episode.ID]; !ok {
				byID[h.Episode.ID] = h
			}
		}
	}
	out := make([]sgam.EpisodeHit, 0, len(byID))
	for id, h := range byID {
		h.Score = score[id]
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b sgam.EpisodeHit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Episode.ID, b.Episode.ID)
	})
	return out[:min(len(out), depth)], true, nil
}

// errText is an error's message for a warning (the llm package keeps keys
// out of its errors).
func errText(err error) string {
	if err == nil {
		return "no vector in the answer"
	}
	return err.Error()
}
