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
// (relative to the best), plus its session's score, plus the scores of
// its neighbours in the session (the episodes just before and after it in
// occurred_at order, and less, those two away); the neighbours of the best
// candidates that the index did not find become candidates themselves;
// and an episode that holds more of the question's terms scores higher.
// The ranking is pure: gather reads the candidates and their neighbours,
// rankEvidence orders them.

// weights are the parameters of the evidence's ranking. The weights and
// the candidates' depths were tuned on the first five LoCoMo
// conversations (`sgam eval locomo` reports the other five apart) and
// name nothing of that data set; maxCoverageTerms is a bound on work.
type weights struct {
	// session weighs a candidate's session's score: the sum of the
	// session's best sessionTop candidates' own scores, relative to the
	// best session's.
	session    float64
	sessionTop int
	// after weighs the own score of the episode just before a candidate
	// (the candidate may be its answer), before that of the episode just
	// after, and far the better of the two episodes two away.
	after, before, far float64
	// coverage weighs, in a candidate's own score, the fraction of the
	// question's distinct terms its words hold (by stem): BM25 sums the
	// terms it matches, so one rare word said twice can outrank a turn
	// that says most of what was asked. It enters before the neighbours'
	// weights, so a turn beside one that covers the question gains too.
	coverage float64
	// The index ranks depth episodes per episode to cite (at least
	// minCandidates), and the best expanded of them get their neighbours
	// read.
	depth, minCandidates, expanded int
	// maxCoverageTerms bounds the words of an episode read for coverage.
	maxCoverageTerms int
	// vector weighs an episode's similarity to the question's vector in
	// its fused score (fuse): the lexical score relative to the best one
	// plus vector times the similarity relative to the nearest's, so the
	// vectors reorder the lexical ranking by at most vector of the best
	// lexical score, and bring in what the words missed.
	vector float64
	// bar is, under EvidenceAuto, the least score an episode cited needs,
	// as a fraction of the best one's (aboveBar). It is the highest of
	// 0.1, 0.2, ... that kept turn recall@10 (evidence limit 10) on LoCoMo
	// conversations 1-5 within 0.01 of EvidenceAlways's: 0.5 lost 0.003,
	// 0.6 lost 0.013 (sgam eval locomo, docs/recall.md).
	bar float64
}

// defaultWeights are the weights recall ranks by.
var defaultWeights = weights{
	session:          1.0,
	sessionTop:       2,
	after:            0.2,
	before:           0.1,
	far:              0.35,
	coverage:         1.3,
	depth:            8,
	minCandidates:    30,
	expanded:         10,
	maxCoverageTerms: 256,
	vector:           0.5,
	bar:              0.5,
}

// around is how many episodes on each side of a candidate count as its
// neighbours: the one just before or after, and the one two away.
const around = 2

// searchDepth is how many episodes the index ranks for limit episodes to
// cite.
func (w weights) searchDepth(limit int) int {
	return min(sgam.MaxSearchLimit, max(w.minCandidates, w.depth*limit))
}

// expand returns the ids of the hits (best first) whose neighbours are
// read: the best expanded of them that belong to a session.
func (w weights) expand(hits []sgam.EpisodeHit) []string {
	var ids []string
	for _, h := range hits[:min(w.expanded, len(hits))] {
		if h.Episode.Session != "" {
			ids = append(ids, h.Episode.ID)
		}
	}
	return ids
}

// pool is what the evidence is ranked from: the index's hits for the
// question, best first (lexical, or fused with the vectors' nearest), and
// the conversation around the expanded ones, by episode id.
type pool struct {
	hits    []sgam.EpisodeHit
	windows map[string]sgam.Window
}

// candidate is an episode that may be cited, with its own relative score
// and what is known of its neighbours: prev[0] just before it, prev[1]
// two before; next likewise.
type candidate struct {
	episode    sgam.Episode
	own, score float64
	prev, next [around]*candidate
}

// rankEvidence orders the pool's episodes by their score with their
// conversation, given the question's terms, and returns the best limit of
// them, each with its score (and no snippet: render cuts those it shows).
func rankEvidence(p pool, terms []string, limit int, w weights) []sgam.EpisodeHit {
	if len(p.hits) == 0 {
		return nil
	}
	// A candidate's own score is relative to the best one's.
	best := p.hits[0].Score
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
	for _, h := range p.hits {
		own := h.Score / best
		add(h.Episode, own)
		if s := h.Episode.Session; s != "" {
			sessions[s] = append(sessions[s], own)
		}
	}
	for _, id := range w.expand(p.hits) {
		win := p.windows[id]
		seq := append(append(append([]sgam.Episode{}, win.Before...), by[id].episode), win.After...)
		cs := make([]*candidate, len(seq))
		for i, e := range seq {
			cs[i] = add(e, 0)
		}
		for i, c := range cs {
			for d := 1; d <= around; d++ {
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
		for _, v := range scores[:min(w.sessionTop, len(scores))] {
			sessionScore[s] += v
		}
		bestSession = max(bestSession, sessionScore[s])
	}
	cover(all, terms, w)
	own := func(c *candidate) float64 {
		if c == nil {
			return 0
		}
		return c.own
	}
	for _, c := range all {
		c.score = c.own + w.after*own(c.prev[0]) + w.before*own(c.next[0]) + w.far*max(own(c.prev[1]), own(c.next[1]))
		if bestSession > 0 {
			c.score += w.session * sessionScore[c.episode.Session] / bestSession
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
		out = append(out, sgam.EpisodeHit{Episode: c.episode, Score: c.score})
	}
	return out
}

// cover adds to each candidate's own score w.coverage times the fraction
// of the question's distinct terms (by stem) that its words hold.
func cover(all []*candidate, terms []string, w weights) {
	asked := map[string]bool{}
	var initials [256]bool // the first bytes of the asked stems
	for _, t := range terms {
		st := words.Stem(t)
		asked[st] = true
		if st != "" {
			initials[st[0]] = true
		}
	}
	if len(asked) == 0 {
		return
	}
	// Each word is stemmed once per recall: the candidates share most of
	// their words, and stemming is the dear part. The Porter stemmer only
	// rewrites a word's end and keeps its first letter, so a word whose
	// first byte starts no asked stem is not stemmed.
	stemOf := map[string]string{} // word → its stem if asked, else ""
	seen := map[string]bool{}
	for _, c := range all {
		clear(seen)
		for i, t := range words.Tokens(c.episode.Content) {
			if i == w.maxCoverageTerms {
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
		c.own += w.coverage * float64(len(seen)) / float64(len(asked))
	}
}

// fuse ranks the lexical hits and the vectors' nearest episodes together,
// best first (equal scores by episode id), at most depth of them: an
// episode's fused score is its lexical score relative to the best one
// (0 when the words did not find it) plus w.vector times its similarity
// relative to the nearest's, from 0 for the last of near to 1 for the
// first. The conversation's ranking then starts from it.
//
// Reciprocal rank fusion (1/(60 + rank) from each list) was used before:
// it keeps only the ranks, and the conversation's ranking needs the
// lexical scores' spread (a turn that matches half as well counts half as
// much, while ranks spread evenly). On LoCoMo it cost more than the
// vectors brought (turn recall@10 0.686 against 0.708 lexical on the
// conversations the weights were not tuned on, with all-MiniLM-L6-v2).
func fuse(lexical, near []sgam.EpisodeHit, depth int, w weights) []sgam.EpisodeHit {
	score := map[string]float64{}
	byID := map[string]sgam.EpisodeHit{}
	if len(lexical) > 0 {
		best := lexical[0].Score
		if best <= 0 {
			best = 1 // as rankEvidence: scores that are not positive keep their order
		}
		for _, h := range lexical {
			score[h.Episode.ID] += h.Score / best
			byID[h.Episode.ID] = h
		}
	}
	if len(near) > 0 {
		top, floor := near[0].Score, near[len(near)-1].Score
		for _, h := range near {
			rel := 1.0 // all equally near
			if top > floor {
				rel = (h.Score - floor) / (top - floor)
			}
			score[h.Episode.ID] += w.vector * rel
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
	return out[:min(len(out), depth)]
}
