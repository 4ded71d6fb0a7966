package recall

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall/when"
)

// ep is an episode of a session ("" for none).
func ep(id, session, content string) sgam.Episode {
	return sgam.Episode{Tenant: "acme", ID: id, Session: session, Content: content}
}

// occurred is e occurring at the RFC 3339 instant s.
func occurred(e sgam.Episode, s string) sgam.Episode {
	e.OccurredAt, _ = time.Parse(time.RFC3339, s)
	return e
}

func hitOf(e sgam.Episode, score float64) sgam.EpisodeHit {
	return sgam.EpisodeHit{Episode: e, Score: score}
}

// only are weights with every weight zero (the index's order alone) but
// those set by set.
func only(set func(*weights)) weights {
	w := defaultWeights
	w.session, w.sessionCoverage, w.after, w.before, w.far, w.coverage, w.period, w.dated = 0, 0, 0, 0, 0, 0, 0, 0
	w.asking = 0
	if set != nil {
		set(&w)
	}
	return w
}

func TestRankEvidence(t *testing.T) {
	question := ep("q", "s1", "what did you paint last week?")
	answer := ep("a", "s1", "a sunrise over the lake")
	aside := ep("x", "s2", "prices went up")
	type want struct {
		id    string
		score float64
	}
	for _, tc := range []struct {
		name  string
		p     pool
		terms []string
		limit int
		w     weights
		want  []want
	}{
		{name: "no hits", w: defaultWeights, limit: 5},
		{name: "the index's order, relative to the best",
			p:     pool{hits: []sgam.EpisodeHit{hitOf(ep("b", "", "b"), 4), hitOf(ep("a", "", "a"), 2), hitOf(ep("c", "", "c"), 1)}},
			limit: 5, w: only(nil),
			want: []want{{"b", 1}, {"a", 0.5}, {"c", 0.25}}},
		{name: "equal scores by id, cut at the limit",
			p:     pool{hits: []sgam.EpisodeHit{hitOf(ep("c", "", "c"), 1), hitOf(ep("b", "", "b"), 1), hitOf(ep("a", "", "a"), 1)}},
			limit: 2, w: only(nil),
			want: []want{{"a", 1}, {"b", 1}}},
		{name: "the turn after a question gains a share of its score; the question keeps less of its own",
			p: pool{hits: []sgam.EpisodeHit{hitOf(question, 2), hitOf(aside, 0.2)},
				windows: map[string]sgam.Window{"q": {After: []sgam.Episode{answer}}}},
			limit: 5, w: only(func(w *weights) { w.after, w.asking = 0.5, 0.1 }),
			want: []want{{"q", 0.9}, {"a", 0.5}, {"x", 0.1}}},
		{name: "a question in CJK full-width script asks too",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("z", "s1", "你上周画了什么？"), 2)},
				windows: map[string]sgam.Window{"z": {After: []sgam.Episode{answer}}}},
			limit: 5, w: only(func(w *weights) { w.after, w.asking = 0.5, 0.1 }),
			want: []want{{"z", 0.9}, {"a", 0.5}}},
		{name: "a question in Arabic script asks too",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("z", "s1", "ماذا رسمت؟"), 2)},
				windows: map[string]sgam.Window{"z": {After: []sgam.Episode{answer}}}},
			limit: 5, w: only(func(w *weights) { w.after, w.asking = 0.5, 0.1 }),
			want: []want{{"z", 0.9}, {"a", 0.5}}},
		{name: "the turn after a statement gains nothing from it",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("s", "s1", "we painted"), 2), hitOf(aside, 0.2)},
				windows: map[string]sgam.Window{"s": {After: []sgam.Episode{answer}}}},
			limit: 5, w: only(func(w *weights) { w.after, w.asking = 0.5, 0.1 }),
			want: []want{{"s", 1}, {"x", 0.1}, {"a", 0}}},
		{name: "the turn before a hit gains less; two away, the better of the two counts",
			p: pool{hits: []sgam.EpisodeHit{hitOf(answer, 2)},
				windows: map[string]sgam.Window{"a": {Before: []sgam.Episode{ep("p", "s1", "p"), question}, After: []sgam.Episode{ep("n", "s1", "n")}}}},
			limit: 5, w: only(func(w *weights) { w.before, w.far = 0.1, 0.35 }),
			want: []want{{"a", 1}, {"p", 0.35}, {"q", 0.1}, {"n", 0}}},
		{name: "a strong session lifts its turns",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("b", "s2", "b"), 2), hitOf(ep("a1", "s1", "a1"), 1.8), hitOf(ep("a2", "s1", "a2"), 1.8),
				hitOf(ep("a3", "s1", "a3"), 1.8)}},
			limit: 5, w: only(func(w *weights) { w.session, w.sessionTop = 1, 2 }),
			// s1 sums its best two (0.9 + 0.9), s2 has 1: s1 is the best.
			want: []want{{"a1", 1.9}, {"a2", 1.9}, {"a3", 1.9}, {"b", 1 + 1/1.8}}},
		{name: "coverage: the turn that says most of what was asked",
			p:     pool{hits: []sgam.EpisodeHit{hitOf(ep("rare", "", "lake lake lake"), 2), hitOf(ep("most", "", "we painted the lake at sunrise"), 1)}},
			terms: []string{"painting", "lake", "sunrise"}, limit: 5, w: only(func(w *weights) { w.coverage = 1.3 }),
			want: []want{{"most", 0.5 + 1.3}, {"rare", 1 + 1.3/3}}},
		{name: "session coverage: the session whose turns hold the question's terms between them",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("x", "s2", "the lake"), 2), hitOf(ep("a1", "s1", "the lake"), 1.8),
				hitOf(ep("a2", "s1", "at sunrise"), 1.8)}},
			terms: []string{"lake", "sunrise"}, limit: 5,
			w: only(func(w *weights) { w.session, w.sessionTop, w.sessionCoverage = 1, 1, 1 }),
			// s1: 0.9 + 2/2, s2: 1 + 1/2; without the coverage x (1 + 1)
			// would outrank a1 and a2 (0.9 + 0.9).
			want: []want{{"a1", 0.9 + 1}, {"a2", 0.9 + 1}, {"x", 1 + 1.5/1.9}}},
		{name: "an episode of the question's period",
			p: pool{hits: []sgam.EpisodeHit{hitOf(occurred(ep("out", "", "out"), "2023-06-01T10:00:00Z"), 2), hitOf(occurred(ep("in", "", "in"), "2023-05-31T23:00:00Z"), 1)},
				period: when.Parse("what did we do in May 2023?", time.Now()).Period},
			limit: 5, w: only(func(w *weights) { w.period = 1 }),
			want: []want{{"in", 0.5 + 1}, {"out", 1}}},
		{name: "a question that asks when: the turn that says when",
			p: pool{hits: []sgam.EpisodeHit{hitOf(ep("a", "", "we went hiking"), 2), hitOf(ep("b", "", "we went hiking last week"), 1.5)},
				asksWhen: true},
			limit: 5, w: only(func(w *weights) { w.dated = 0.7 }),
			want: []want{{"b", 0.75 + 0.7}, {"a", 1}}},
		{name: "a question that does not ask when: the index's order",
			p:     pool{hits: []sgam.EpisodeHit{hitOf(ep("a", "", "we went hiking"), 2), hitOf(ep("b", "", "we went hiking last week"), 1.5)}},
			limit: 5, w: only(func(w *weights) { w.dated = 0.7 }),
			want: []want{{"a", 1}, {"b", 0.75}}},
		{name: "fused scores, relative to the best",
			p: pool{hits: fuse([]sgam.EpisodeHit{hitOf(ep("a", "", "a"), 4), hitOf(ep("b", "", "b"), 2)},
				[]sgam.EpisodeHit{hitOf(ep("b", "", "b"), 0.9), hitOf(ep("c", "", "c"), 0.5)}, 10, defaultWeights)},
			limit: 5, w: only(nil),
			// a 1, b 0.5 + 0.7 × 1, c 0.7 × 0; relative to b's.
			want: []want{{"b", 1}, {"a", 1 / 1.2}, {"c", 0}}},
		{name: "the default weights: the answer after the question outranks a hit of another session",
			p: pool{hits: []sgam.EpisodeHit{hitOf(question, 2), hitOf(aside, 1)},
				windows: map[string]sgam.Window{"q": {After: []sgam.Episode{answer}}}},
			terms: []string{"paint"}, limit: 2, w: defaultWeights,
			// q: own 1, covers the question (1.3), asks (0.9 of those),
			// the best session (1: s1 is q's 1 and its coverage 1, s2
			// x's 0.5); a: 0.5 of q's own (it answers q), and q's
			// session; x: own 0.5, session 0.5 / 2.
			want: []want{{"q", 0.9*(1+1.3) + 1}, {"a", 0.5*(1+1.3) + 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rankEvidence(tc.p, tc.terms, tc.limit, tc.w)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, w.id, got[i].Episode.ID, "place %d", i)
				require.InDelta(t, w.score, got[i].Score, 1e-9, w.id)
				require.Empty(t, got[i].Snippet, "render cuts the snippets")
			}
		})
	}
}

func TestFuse(t *testing.T) {
	a, b, c, d := ep("a", "", "a"), ep("b", "", "b"), ep("c", "", "c"), ep("d", "", "d")
	ids := func(hits []sgam.EpisodeHit) []string {
		out := []string{}
		for _, h := range hits {
			out = append(out, h.Episode.ID)
		}
		return out
	}
	w := defaultWeights
	w.vector = 0.5
	lexical := []sgam.EpisodeHit{hitOf(a, 8), hitOf(b, 6), hitOf(c, 2)}
	near := []sgam.EpisodeHit{hitOf(c, 0.9), hitOf(d, 0.7), hitOf(b, 0.5)}
	got := fuse(lexical, near, 10, w)
	// a 1; b 0.75 + 0; c 0.25 + 0.5; d 0 + 0.5 × 0.5.
	require.Equal(t, []string{"a", "b", "c", "d"}, ids(got))
	for i, want := range []float64{1, 0.75, 0.75, 0.25} {
		require.InDelta(t, want, got[i].Score, 1e-12, got[i].Episode.ID)
	}
	require.Equal(t, []string{"a", "b"}, ids(fuse(lexical, near, 2, w)), "at most depth")

	// The lexical order is kept but where the vectors' weight can change
	// it: a lexical score well ahead stays ahead whatever the vectors say.
	require.Equal(t, []string{"a", "b", "c"}, ids(fuse(lexical, nil, 10, w)))
	lexical = []sgam.EpisodeHit{hitOf(a, 8), hitOf(b, 6), hitOf(c, 3)}
	far := []sgam.EpisodeHit{hitOf(c, 0.9), hitOf(b, 0.1)}
	require.Equal(t, []string{"a", "c", "b"}, ids(fuse(lexical, far, 10, w)), "c: 0.375 + 0.5 over b: 0.75 + 0; a, 1, ahead")

	// No lexical hit (a question of stop words): the vectors' order; one
	// nearest episode, or several equally near, count fully.
	require.Equal(t, []string{"c", "d", "b"}, ids(fuse(nil, near, 10, w)))
	one := fuse(nil, []sgam.EpisodeHit{hitOf(d, 0.3)}, 10, w)
	require.Equal(t, []string{"d"}, ids(one))
	require.InDelta(t, 0.5, one[0].Score, 1e-12)
	// Scores that are not positive keep their order.
	require.Equal(t, []string{"a", "b"}, ids(fuse([]sgam.EpisodeHit{hitOf(a, 0), hitOf(b, -1)}, nil, 10, w)))
}

func TestSearchDepth(t *testing.T) {
	w := defaultWeights
	for limit, depth := range map[int]int{1: 30, 3: 30, 5: 40, 10: 80, 25: 200, MaxEvidence: sgam.MaxSearchLimit} {
		require.Equal(t, depth, w.searchDepth(limit), "limit %d", limit)
	}
	hits := []sgam.EpisodeHit{hitOf(ep("a", "s", ""), 3), hitOf(ep("b", "", ""), 2), hitOf(ep("c", "s", ""), 1)}
	w.expanded = 2
	ids := func(hits []sgam.EpisodeHit, at []int) []string {
		out := []string{}
		for _, i := range at {
			out = append(out, hits[i].Episode.ID)
		}
		return out
	}
	require.Equal(t, []string{"a"}, ids(hits, w.expand(hits)), "the best two, of a session")
	w.expanded = 10
	weak := []sgam.EpisodeHit{hitOf(ep("a", "s", ""), 3), hitOf(ep("b", "s", ""), 1.05), hitOf(ep("c", "s", ""), 1), hitOf(ep("d", "s", ""), 0)}
	require.Equal(t, []string{"a", "b", "d"}, ids(weak, w.expand(weak)), "those of at least 0.35 of the best, and those of no score")
}
