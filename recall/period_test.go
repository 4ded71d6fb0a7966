package recall_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/recall"
)

// TestPeriodEvidence: the episodes that occurred in the period a question
// names are evidence even when the question's words miss them, and rank
// first among those its words match alike; an episode recorded after the
// read's known_at is not among them.
func TestPeriodEvidence(t *testing.T) {
	w := newWorld(t)
	w.say("acme", "m1", "2026-05-02T10:00:00Z", "2026-05-02T10:00:00Z", "Mira: we adopted a puppy called Rex.", "", "", "")
	w.say("acme", "m2", "2026-06-10T10:00:00Z", "2026-06-10T10:00:00Z", "Mira: the weather was grey and cold.", "", "", "")
	w.say("acme", "m3", "2026-06-10T10:05:00Z", "2026-06-10T10:05:00Z", "Mira: the gallery took my painting.", "", "", "")
	w.say("acme", "m4", "2026-05-02T18:00:00Z", "2026-06-20T09:00:00Z", "Mira: and we bought him a basket.", "", "", "")
	w.say("globex", "g1", "2026-05-02T11:00:00Z", "2026-05-02T11:00:00Z", "Mira: a day at the beach.", "", "", "")
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))

	ask := func(q recall.Query) []string {
		q.Tenant, q.Evidence, q.EvidenceLimit = "acme", recall.EvidenceAlways, 2
		return evidenceIDs(w.recall(q))
	}
	// "happened" is no word of any episode: the day's are the evidence.
	require.Empty(t, ask(recall.Query{Question: "What happened at the zoo?"}))
	require.ElementsMatch(t, []string{"m1", "m4"}, ask(recall.Query{Question: "What happened on May 2, 2026?"}))
	require.Equal(t, []string{"m1"}, ask(recall.Query{Question: "What happened on May 2, 2026?", KnownAt: ts(t, "2026-06-01T00:00:00Z")}),
		"m4 was recorded later")
	// Every episode says "Mira": those of the day named come first.
	require.ElementsMatch(t, []string{"m2", "m3"}, ask(recall.Query{Question: "What did Mira do on June 10, 2026?"}))
	require.ElementsMatch(t, []string{"m1", "m4"}, ask(recall.Query{Question: "What did Mira do in May 2026?"}))
	// A range or a part of a month names no instant, but where to look.
	require.ElementsMatch(t, []string{"m2", "m3"}, ask(recall.Query{Question: "What did Mira do in early June 2026?"}))
	require.ElementsMatch(t, []string{"m1", "m4"}, ask(recall.Query{Question: "What did Mira do between May 1 and May 3, 2026?"}))
	require.ElementsMatch(t, []string{"m1", "m4"}, ask(recall.Query{Question: "What did Mira do the week before May 9, 2026?"}))
	c := w.recall(recall.Query{Tenant: "acme", Question: "What did Mira do in early June 2026?"})
	require.Equal(t, "now", c.Instants.AsOf, "a part of a month is no instant of valid time")

	// The period's episodes are the tenant's own: globex's day is not
	// acme's, and acme's is not globex's.
	other := w.recall(recall.Query{Tenant: "globex", Question: "What happened on May 2, 2026?", Evidence: recall.EvidenceAlways, EvidenceLimit: 5})
	require.Equal(t, []string{"g1"}, evidenceIDs(other))
	other = w.recall(recall.Query{Tenant: "globex", Question: "What did Mira do in early June 2026?", Evidence: recall.EvidenceAlways, EvidenceLimit: 5})
	require.NotContains(t, evidenceIDs(other), "m2")
	require.NotContains(t, evidenceIDs(other), "m3")

	// A period at the edge of the instants sgam knows (years 0001 to
	// 9999) is read up to that edge, never refused.
	for _, q := range []string{"What happened on December 31, 9999?", "What happened in December 9999?", "Mira as of 9999-12-31",
		"What happened the week after December 28, 9999?", "What happened two days after December 30, 9999?",
		"What happened 3 days before 0001-01-02?", "What happened the week before January 3, 0001?"} {
		_, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: q, Evidence: recall.EvidenceAlways})
		require.NoError(t, err, q)
	}
}
