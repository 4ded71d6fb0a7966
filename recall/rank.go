package recall

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall/when"
	"github.com/sgam-dev/sgam/words"
)

// Evidence is ranked in two steps: the full-text index ranks episodes by
// their words (BM25 on SQLite, ts_rank on PostgreSQL), and then the
// conversation around them counts. A turn that answers a question often
// shares few words with it, while the turns beside it, or others of its
// session, do ("what did Mira paint?" is answered by "a sunrise", said
// after "what did you paint?"). So a candidate's score is its own
// (relative to the best; less for a turn that asks something), plus its
// session's score, plus the scores of its neighbours in the session (the
// episode just before it when that one asks something, the one just
// after it, and less, those two away, in occurred_at order); the
// neighbours of the best candidates that the index did not find become
// candidates themselves;
// an episode that holds more of the question's terms scores higher, and
// so does a session whose episodes hold more of them together (evidence
// that needs two turns of a session); an episode that occurred in the
// period the question names ("in May 2023", "on June 2") scores higher,
// and so does one that says when something happened ("last week", "on
// Friday") when the question asks when.
// The ranking is pure: gather reads the candidates and their neighbours,
// rankEvidence orders them.

// weights are the parameters of the evidence's ranking. The weights and
// the candidates' depths were tuned on the first five LoCoMo
// conversations (`sgam eval locomo` reports the other five apart) and
// name nothing of that data set; maxCoverageTerms is a bound on work.
type weights struct {
	// session weighs a candidate's session's score: the sum of the
	// session's best sessionTop hits' own scores (as the index ranked
	// them), plus sessionCoverage times the fraction of the question's
	// distinct terms (by stem) that the session's candidates hold
	// together, relative to the best session's. The coverage of a session
	// finds the session of a question whose terms two turns hold between
	// them: with sessionCoverage 1 (the best of 0, 0.3, 0.6, 0.8, 1, 1.3
	// and 1.5) turn recall@10 on LoCoMo conversations 1-5 is 0.749, 0.745
	// without it.
	session         float64
	sessionTop      int
	sessionCoverage float64
	// after weighs the own score of the episode just before a candidate
	// when that episode asks something (holds a "?"): in a conversation
	// the turn after a question is most often its answer. before weighs
	// that of the episode just after, and far the better of the two
	// episodes two away. A candidate that asks keeps 1-asking of its own
	// score: a question repeats the words of what is asked of the memory
	// and rarely holds the answer itself.
	// On LoCoMo conversations 1-5, turn recall@10 lexical (fused with
	// all-MiniLM-L6-v2) is 0.750 (0.767) with the turn after any episode
	// gaining 0.2 of its score, questions or not, and nothing for asking;
	// 0.761 (0.776) with 0.5 after a question, 0.2 after any other, and
	// asking 0.1 (of 0.4, 0.5, 0.6 by 0.1, 0.2, 0.3: 0.754-0.761, 0.771-
	// 0.776); 0.765 (0.779) with 0.1 after any other, 0.768 (0.781) with
	// 0.05 or 0 (so the turn after one that does not ask gains nothing).
	// Then after 0.4 or 0.6, asking 0.2, before 0, 0.2, far 0.25 or 0.45
	// gave 0.763-0.768 (0.775-0.783): no better than noise.
	after, before, far float64
	asking             float64
	// coverage weighs, in a candidate's own score, the fraction of the
	// question's distinct terms its words hold (by stem): BM25 sums the
	// terms it matches, so one rare word said twice can outrank a turn
	// that says most of what was asked. It enters before the neighbours'
	// weights, so a turn beside one that covers the question gains too.
	coverage float64
	// period is added to the own score of a candidate that occurred in
	// the period the question names ("what did Mira paint in May 2023?",
	// "on June 2"), and the episodes that occurred in a period of at most
	// periodDays days become candidates (the first periodRead of them)
	// when the index did not find them: a question that names its day
	// often shares few words with the turns of that day. With 1 the
	// episodes of the period come first among those that match the
	// question alike: turn recall@10 on conversations 1-5 is 0.749, 0.735
	// without the period (0.746 without its episodes read); 0.5 gave
	// 0.746, 1.5 0.748, 3 0.747. Reading 50, 100 or 200 episodes ranked
	// alike; a period longer than a month (a year) is not read, for its
	// first episodes are no better candidates than any (on conversations
	// 1-5 the same figures either way).
	period     float64
	periodDays int
	periodRead int
	// dated is added to the own score of a candidate that says when
	// something happened (when.Mentions) when the question asks when
	// ("when did ...", "how long ...", "what year ..."): the turn that
	// answers says "last week" or "on Friday", and the episode's time
	// does the rest. On conversations 1-5, turn recall@10 is 0.738
	// without it, 0.745 with 0.3, 0.749 with 0.5 and 0.7 (0.7 the better
	// at recall@5), 0.748 with 1.
	dated float64
	// The index ranks depth episodes per episode to cite (at least
	// minCandidates), and the best expanded of them get their neighbours
	// read: with the other weights here, turn recall@10 on conversations
	// 1-5 is 0.740 with 10, 0.749 with 15, and 0.749 with 20, which is
	// less at recall@5; 25 to 40 were no better, and every window read
	// costs time.
	depth, minCandidates, expanded int
	// expandBar is the least score, as a fraction of the best hit's, of
	// a hit whose neighbours are read: a weak hit's conversation seldom
	// holds the answer, and a question with one common word has many
	// weak hits, each window a read. On conversations 1-5 turn
	// recall@10 (lexical) is 0.770 with none, 0.768 with 0.2, 0.769 with
	// 0.35, 0.763 with 0.5 (6-10: 0.748, 0.749, 0.749, 0.750); at 0.35 a
	// recall of `sgam bench http`'s workload costs about 15% less, at 0.5
	// about 30%. A hit of no score (one of the question's period) is read
	// as before.
	expandBar float64
	// maxCoverageTerms bounds the words of an episode read for coverage.
	maxCoverageTerms int
	// vector weighs an episode's similarity to the question's vector in
	// its fused score (fuse): the lexical score relative to the best one
	// plus vector times the similarity relative to the nearest's, so the
	// vectors reorder the lexical ranking by at most vector of the best
	// lexical score, and bring in what the words missed. With
	// all-MiniLM-L6-v2, turn recall@10 on LoCoMo conversations 1-5 is
	// 0.761 with 0.5, 0.763 with 0.6, 0.766 with 0.7 and 0.8 (0.7 the
	// better at recall@25), 0.764 with 1.
	// Left out because none beat that 0.766 on conversations 1-5 by more
	// than noise, or did not hold on 6-10 (all with all-MiniLM-L6-v2):
	// giving every candidate its similarity, even those below the
	// nearest's last (0.766 with this floor; 0.761 with the tenant's
	// 400th nearest as the floor, 0.758 with its least similar); the
	// similarity relative to 0 (0.756), or with a floor 0.2 or 0.3 below
	// the nearest's (0.763, 0.764); its square or square root (0.765,
	// 0.760); the max of the two parts, not their sum (0.768), or
	// vector*sim*(1-lexical) (0.760); the similarity added after the
	// conversation's ranking, not before (0.755); the vector search 100
	// or 150 deep, not the index's depth (0.766, 0.768); and a session
	// scoring 0.4 times its best candidate's similarity, with the
	// neighbours of the vectors' 5 nearest read too: 0.774 on 1-5 but
	// 0.746 on 6-10, against 0.749 without them.
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
	sessionCoverage:  1.0,
	after:            0.5,
	before:           0.1,
	far:              0.35,
	asking:           0.1,
	coverage:         1.3,
	period:           1.0,
	periodDays:       31,
	periodRead:       100,
	dated:            0.7,
	depth:            8,
	minCandidates:    30,
	expanded:         15,
	expandBar:        0.35,
	maxCoverageTerms: 256,
	vector:           0.7,
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

// expand returns the places among the hits (best first) of the episodes
// whose neighbours are read: the best expanded of them that belong to a
// session and score at least expandBar of the best.
func (w weights) expand(hits []sgam.EpisodeHit) []int {
	var at []int
	least := 0.0 // scores that are not positive are all read
	if len(hits) > 0 {
		least = w.expandBar * hits[0].Score
	}
	for i, h := range hits[:min(w.expanded, len(hits))] {
		if h.Episode.Session != "" && (h.Score <= 0 || h.Score >= least) {
			at = append(at, i)
		}
	}
	return at
}

// pool is what the evidence is ranked from: the index's hits for the
// question, best first (lexical, or fused with the vectors' nearest),
// then the episodes of the question's period that the index did not
// find (score 0), and the conversation around the expanded ones, by
// episode id; with what the question says of time: the period it names
// (zero when none) and whether it asks when.
type pool struct {
	hits     []sgam.EpisodeHit
	windows  map[string]sgam.Window
	period   when.Period
	asksWhen bool
}

// candidate is an episode that may be cited, with its own relative score
// and what is known of its neighbours: prev[0] just before it, prev[1]
// two before; next likewise.
type candidate struct {
	episode    *sgam.Episode // in the pool, which outlives the ranking
	own, score float64
	prev, next [around]*candidate
	// asks: the episode holds a question mark (weights.after), in Latin,
	// CJK full-width or Arabic script.
	asks bool
	// holds has bit i set when the episode's words hold the question's
	// i-th distinct stem (cover).
	holds uint64
}

// asks reports whether text holds a question mark, in Latin, CJK
// full-width or Arabic script: each looked for on its own, as
// strings.ContainsAny with runes beyond ASCII walks the text rune by rune.
func asks(text string) bool {
	return strings.IndexByte(text, '?') >= 0 || strings.Contains(text, "？") || strings.Contains(text, "؟")
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
	// The candidates, a hundred or so a recall, are taken from one slab
	// sized for every episode the pool holds; one beyond it (none) would
	// be allocated alone, as an append must not move those pointed to.
	n := len(p.hits)
	for _, win := range p.windows {
		n += len(win.Before) + len(win.After)
	}
	slab := make([]candidate, 0, n)
	by := make(map[string]*candidate, n)
	all := make([]*candidate, 0, n)
	add := func(e *sgam.Episode, own float64) *candidate {
		if c, ok := by[e.ID]; ok {
			return c
		}
		var c *candidate
		if len(slab) < cap(slab) {
			slab = slab[:len(slab)+1]
			c = &slab[len(slab)-1]
		} else {
			c = new(candidate)
		}
		*c = candidate{episode: e, own: own, asks: asks(e.Content)}
		by[e.ID] = c
		all = append(all, c)
		return c
	}
	sessions := map[string][]float64{}
	for i := range p.hits {
		h := &p.hits[i]
		own := h.Score / best
		add(&h.Episode, own)
		if s := h.Episode.Session; s != "" {
			sessions[s] = append(sessions[s], own)
		}
	}
	for _, j := range w.expand(p.hits) {
		id := p.hits[j].Episode.ID
		win := p.windows[id]
		cs := make([]*candidate, 0, len(win.Before)+1+len(win.After))
		for i := range win.Before {
			cs = append(cs, add(&win.Before[i], 0))
		}
		cs = append(cs, by[id])
		for i := range win.After {
			cs = append(cs, add(&win.After[i], 0))
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
	sessionScore := make(map[string]float64, len(sessions))
	for s, scores := range sessions {
		slices.SortFunc(scores, func(a, b float64) int { return cmp.Compare(b, a) })
		for _, v := range scores[:min(w.sessionTop, len(scores))] {
			sessionScore[s] += v
		}
	}
	if asked := cover(all, terms, w); asked > 0 {
		held := make(map[string]uint64, len(sessions)) // the stems a session's candidates hold
		for _, c := range all {
			if s := c.episode.Session; s != "" {
				held[s] |= c.holds
			}
		}
		for s, h := range held {
			sessionScore[s] += w.sessionCoverage * float64(bits.OnesCount64(h)) / float64(asked)
		}
	}
	bestSession := 0.0
	for _, v := range sessionScore {
		bestSession = max(bestSession, v)
	}
	for _, c := range all {
		if p.period.Holds(c.episode.OccurredAt) {
			c.own += w.period
		}
		if p.asksWhen && when.Mentions(c.episode.Content) {
			c.own += w.dated
		}
	}
	own := func(c *candidate) float64 {
		if c == nil {
			return 0
		}
		return c.own
	}
	for _, c := range all {
		mine, answered := c.own, 0.0
		if c.asks {
			mine *= 1 - w.asking
		}
		if c.prev[0] != nil && c.prev[0].asks {
			answered = w.after * c.prev[0].own
		}
		c.score = mine + answered + w.before*own(c.next[0]) + w.far*max(own(c.prev[1]), own(c.next[1]))
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
		out = append(out, sgam.EpisodeHit{Episode: *c.episode, Score: c.score})
	}
	return out
}

// cover adds to each candidate's own score w.coverage times the fraction
// of the question's distinct terms (by stem) that its words hold, marks
// which it holds (the first 64 stems: a question has at most
// words.MaxTerms), and returns how many distinct stems were asked.
func cover(all []*candidate, terms []string, w weights) int {
	asked := map[string]int{} // stem → its bit
	// The heads (words.StemHead) of the asked stems, as a bit set by the
	// head's two bytes; a one-byte head sets every second byte of its
	// first.
	var heads [1 << 16 / 64]uint64
	set := func(i int) { heads[i/64] |= 1 << (i % 64) }
	for _, t := range terms {
		st := words.Stem(t)
		if _, ok := asked[st]; !ok {
			asked[st] = len(asked)
		}
		switch h := words.StemHead(st); len(h) {
		case 1:
			for b := range 256 {
				set(int(h[0])<<8 | b)
			}
		case 2:
			set(int(h[0])<<8 | int(h[1]))
		}
	}
	if len(asked) == 0 {
		return 0
	}
	// Each word is stemmed once per recall: the candidates share most of
	// their words, and stemming is the dear part. A word whose head
	// starts no asked stem's head cannot stem to one, so it is not
	// stemmed. A question has at most words.MaxTerms distinct terms, so
	// the stems a candidate holds are a bit set.
	// word → its stem's bit, -1 if not asked: about two words a candidate
	// on `sgam bench http`'s store, room made for them at once.
	bitOf := make(map[string]int, 2*len(all))
	for _, c := range all {
		var seen uint64
		n := 0
		words.EachToken(c.episode.Content, func(t string) bool {
			if n++; n > w.maxCoverageTerms {
				return false
			}
			if t == "" {
				return true
			}
			h := words.StemHead(t)
			i := int(h[0]) << 8 // a one-byte word: only a one-byte head starts it
			if len(h) == 2 {
				i |= int(h[1])
			}
			if heads[i/64]&(1<<(i%64)) == 0 {
				return true
			}
			bit, ok := bitOf[t]
			if !ok {
				bit = -1
				if st := words.Stem(t); st != "" {
					if i, ok := asked[st]; ok {
						bit = i
					}
				}
				bitOf[t] = bit
			}
			if bit >= 0 && bit < 64 {
				seen |= 1 << bit
			}
			return true
		})
		c.holds |= seen
		c.own += w.coverage * float64(bits.OnesCount64(seen)) / float64(len(asked))
	}
	return len(asked)
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
