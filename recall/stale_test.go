package recall_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// mira tells the support story of issue 26 in tenant: e1 states a
// passport deadline and a preference for concise answers; e3 corrects the
// deadline; e6 revokes the preference; e4 and e5 are small talk.
func (w *world) mira(tenant string) {
	w.say(tenant, "e1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z",
		"Hi, I'm Mira. My passport deadline is 2026-07-15 and I prefer concise answers.", "mira", "passport_deadline", `"2026-07-15"`)
	w.clock.Set(ts(w.t, "2026-06-01T09:00:00Z"))
	_, err := w.store.Assert(w.ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "answer_style"},
		Value: []byte(`"concise"`), ValidFrom: ts(w.t, "2026-06-01T09:00:00Z"), Source: "e1"})
	require.NoError(w.t, err)
	w.say(tenant, "e3", "2026-06-03T09:00:00Z", "2026-06-03T09:00:00Z",
		"Correction: my passport deadline is 2026-06-30.", "mira", "passport_deadline", `"2026-06-30"`)
	w.say(tenant, "e4", "2026-06-04T09:00:00Z", "2026-06-04T09:00:00Z", "Thanks, that is all for today.", "", "", "")
	w.say(tenant, "e6", "2026-06-05T09:00:00Z", "2026-06-05T09:00:00Z", "I no longer want concise answers; detail is fine.", "", "", "")
	_, err = w.store.Retract(w.ctx, sgam.Retraction{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "answer_style"},
		At: ts(w.t, "2026-06-05T09:00:00Z"), Source: "e6"})
	require.NoError(w.t, err)
	w.clock.Set(ts(w.t, "2026-12-01T15:04:05Z"))
}

func evidenceIDs(c *recall.Context) []string {
	var ids []string
	for _, e := range c.Evidence {
		ids = append(ids, e.EpisodeID)
	}
	return ids
}

func TestStaleEvidenceIsMarked(t *testing.T) {
	w := newWorld(t)
	w.mira("acme")
	w.say("globex", "e1", "2026-06-01T09:00:00Z", "2026-12-01T15:04:05Z", "Mira prefers concise answers, and no longer wants them.", "", "", "")

	c := w.recall(recall.Query{Tenant: "acme", Question: "Does Mira still prefer concise answers?", Evidence: recall.EvidenceAlways, EvidenceLimit: 2})
	t.Log(c.Rendered)
	golden(t, "revoked_always.txt", c.Rendered)
	require.Equal(t, []string{"e6", "e1"}, evidenceIDs(c), "the revoking episode above the stale one")
	require.Empty(t, c.Evidence[0].Superseded)
	require.Len(t, c.Evidence[1].Superseded, 1)
	s := c.Evidence[1].Superseded[0]
	require.Equal(t, "answer_style", s.Attribute)
	require.JSONEq(t, `"concise"`, string(s.Value))
	require.Equal(t, recall.Revoked, s.How)
	require.Equal(t, "e6", s.ByEpisode)
	require.Equal(t, ts(t, "2026-06-05T09:00:00Z"), s.Until)
	require.Contains(t, c.Rendered, `(superseded: mira.answer_style "concise" revoked 2026-06-05 by e6)`)

	// The deadline: e1's value was replaced by e3's, which ranks first;
	// small talk is not marked.
	c = w.recall(recall.Query{Tenant: "acme", Question: "When is Mira's passport deadline?", Evidence: recall.EvidenceAlways})
	t.Log(c.Rendered)
	ids := evidenceIDs(c)
	require.Less(t, indexOf(ids, "e3"), indexOf(ids, "e1"), "%v", ids)
	for _, e := range c.Evidence {
		switch e.EpisodeID {
		case "e1":
			require.Len(t, e.Superseded, 1, "only the key asked about: %+v", e.Superseded)
			require.Equal(t, recall.Replaced, e.Superseded[0].How)
			require.Equal(t, "e3", e.Superseded[0].ByEpisode)
		default:
			require.Empty(t, e.Superseded, e.EpisodeID)
		}
	}

	// About the past, e1 is the answer and nothing is stale then.
	c = w.recall(recall.Query{Tenant: "acme", Question: "What did Mira prefer on June 2, 2026?", Evidence: recall.EvidenceAlways})
	t.Log(c.Rendered)
	require.Contains(t, evidenceIDs(c), "e1")
	for _, e := range c.Evidence {
		require.Empty(t, e.Superseded, e.EpisodeID)
	}
	require.NotContains(t, c.Rendered, "superseded:")

	// Evidence auto (the default): the none line says what ended the
	// value and quotes e6; the stale e1 is not cited.
	c = w.recall(recall.Query{Tenant: "acme", Question: "Does Mira still prefer concise answers?"})
	require.NotContains(t, evidenceIDs(c), "e1")
	require.Contains(t, c.Rendered, `no value of answer_style of mira since 2026-06-05 (revoked by e6: "I no longer want concise answers; detail is fine.")`)
	golden(t, "revoked.txt", c.Rendered)
	// The JSON says the same: the key without a value, and the row that
	// ended it, with its source and its words.
	require.Len(t, c.Absent, 1)
	ab := c.Absent[0]
	require.Equal(t, "mira", ab.Subject)
	require.Equal(t, "answer_style", ab.Attribute)
	require.NotNil(t, ab.Ended)
	require.True(t, ab.Ended.Tombstone)
	require.Equal(t, []string{"e6"}, ab.Ended.Sources)
	require.Equal(t, "I no longer want concise answers; detail is fine.", ab.Ended.Quote)
	never := w.recall(recall.Query{Tenant: "acme", Question: "What is Mira's shoe size?", Attributes: []string{"shoe_size"}, Subjects: []string{"mira"}})
	require.Equal(t, []recall.Absent{{Subject: "mira", Attribute: "shoe_size"}}, never.Absent, "never had a value: nothing ended it")

	// The other tenant, with the same words, sees none of it.
	c = w.recall(recall.Query{Tenant: "globex", Question: "Does Mira still prefer concise answers?", Evidence: recall.EvidenceAlways})
	require.NotContains(t, c.Rendered, "superseded")
	require.Empty(t, c.Facts)
	for _, ab := range c.Absent {
		require.Nil(t, ab.Ended, "globex has no row of its own that ended a value")
	}
	for _, e := range c.Evidence {
		require.Empty(t, e.Superseded)
	}
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return len(ids) + 1000
}

// TestStaleChain: of a chain of corrections (e0's August 1 replaced by
// e1's July 15, itself replaced by e2's June 30), each episode that ended
// a shown statement is shown above it, and an episode brought in for
// that is marked as the rest are.
func TestStaleChain(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	for _, limit := range []int{1, 2, 3, 5} {
		c := w.recall(recall.Query{Tenant: "acme", Question: "What did the consulate letter say?", Evidence: recall.EvidenceAlways, EvidenceLimit: limit})
		ids := evidenceIDs(c)
		require.NotEmpty(t, ids, "limit %d", limit)
		require.LessOrEqual(t, len(ids), limit)
		for i, e := range c.Evidence {
			if e.EpisodeID != "e2" {
				require.NotEmpty(t, e.Superseded, "limit %d: %s said what is no longer so: %v", limit, e.EpisodeID, ids)
			}
			for _, s := range e.Superseded {
				if j := slices.Index(ids, s.ByEpisode); j >= 0 {
					require.Less(t, j, i, "limit %d: %s, which ended %s's statement, is above it: %v", limit, s.ByEpisode, e.EpisodeID, ids)
				}
			}
		}
		if limit >= 3 {
			require.Equal(t, []string{"e2", "e1", "e0"}, ids)
		}
	}
	// The other tenant sees none of it.
	require.Empty(t, evidenceIDs(w.recall(recall.Query{Tenant: "globex", Question: "What did the consulate letter say?", Evidence: recall.EvidenceAlways})))
}
