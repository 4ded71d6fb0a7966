package recall

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// ep is an episode of a session ("" for none).
func ep(id, session, content string) sgam.Episode {
	return sgam.Episode{Tenant: "acme", ID: id, Session: session, Content: content}
}

func hitOf(e sgam.Episode, score float64) sgam.EpisodeHit {
	return sgam.EpisodeHit{Episode: e, Score: score}
}

// only are weights with every weight zero (the index's order alone) but
// those set by set.
func only(set func(*weights)) weights {
	w := defaultWeights
	w.session, w.after, w.before, w.far, w.coverage = 0, 0, 0, 0, 0
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
		{name: "the turn after a hit gains a share of its score",
			p: pool{hits: []sgam.EpisodeHit{hitOf(question, 2), hitOf(aside, 0.2)},
				windows: map[string]sgam.Window{"q": {After: []sgam.Episode{answer}}}},
			limit: 5, w: only(func(w *weights) { w.after = 0.2 }),
			want: []want{{"q", 1}, {"a", 0.2}, {"x", 0.1}}},
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
		{name: "fused scores are spread over [0, 1]",
			p: pool{fused: true, hits: []sgam.EpisodeHit{hitOf(ep("b", "", "b"), 1.0/61+1.0/62), hitOf(ep("a", "", "a"), 1.0/61),
				hitOf(ep("c", "", "c"), 1.0/62)}},
			limit: 5, w: only(nil),
			want: []want{{"b", 1}, {"a", (1.0/61 - 1.0/62) / (1.0 / 61)}, {"c", 0}}},
		{name: "the default weights: the answer after the question outranks a hit of another session",
			p: pool{hits: []sgam.EpisodeHit{hitOf(question, 2), hitOf(aside, 1)},
				windows: map[string]sgam.Window{"q": {After: []sgam.Episode{answer}}}},
			terms: []string{"paint"}, limit: 2, w: defaultWeights,
			// q: own 1, covers the question (1.3), the best session (1);
			// a: 0.2 of q's own, and q's session; x: own 0.5, session 0.5.
			want: []want{{"q", 1 + 1.3 + 1}, {"a", 0.2*(1+1.3) + 1}}},
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
	a, b, c := ep("a", "", "a"), ep("b", "", "b"), ep("c", "", "c")
	lexical := []sgam.EpisodeHit{hitOf(a, 9), hitOf(b, 3)}
	near := []sgam.EpisodeHit{hitOf(b, 0.9), hitOf(c, 0.8)}
	got := fuse(lexical, near, 10, defaultWeights)
	ids := []string{}
	for _, h := range got {
		ids = append(ids, h.Episode.ID)
	}
	require.Equal(t, []string{"b", "a", "c"}, ids, "in both lists first; then equal ranks by id")
	require.InDelta(t, 1.0/62+1.0/61, got[0].Score, 1e-12)
	require.InDelta(t, 1.0/61, got[1].Score, 1e-12)
	require.Len(t, fuse(lexical, near, 2, defaultWeights), 2)
}

func TestSearchDepth(t *testing.T) {
	w := defaultWeights
	for limit, depth := range map[int]int{1: 30, 3: 30, 5: 40, 10: 80, 25: 200, MaxEvidence: sgam.MaxSearchLimit} {
		require.Equal(t, depth, w.searchDepth(limit), "limit %d", limit)
	}
	hits := []sgam.EpisodeHit{hitOf(ep("a", "s", ""), 3), hitOf(ep("b", "", ""), 2), hitOf(ep("c", "s", ""), 1)}
	w.expanded = 2
	require.Equal(t, []string{"a"}, w.expand(hits), "the best two, of a session")
}
