package recall_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// TestCurrentIsGet: for random histories (asserts, corrections, late
// backdated values, retractions), every fact recall presents as current
// is what Get answers at the instants recall says it used, every value Get
// has is presented, and no past fact holds at as_of.
func TestCurrentIsGet(t *testing.T) {
	w := newWorld(t)
	start := ts(t, "2026-01-01T00:00:00Z")
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		tenant := fmt.Sprintf("t%d", n)
		clock := start
		ops := rapid.IntRange(1, 25).Draw(rt, "ops")
		for i := range ops {
			clock = clock.Add(time.Duration(rapid.IntRange(1, 48).Draw(rt, "tick")) * time.Hour)
			w.clock.Set(clock)
			subject := fmt.Sprintf("s%d", rapid.IntRange(0, 2).Draw(rt, "subject"))
			k := sgam.Key{Tenant: tenant, Subject: subject, Attribute: fmt.Sprintf("a%d", rapid.IntRange(0, 2).Draw(rt, "attribute"))}
			validFrom := start.Add(time.Duration(rapid.IntRange(0, 60*24).Draw(rt, "valid")) * time.Hour)
			ep := fmt.Sprintf("e%d", i)
			_, err := w.store.AddEpisode(w.ctx, sgam.Episode{Tenant: tenant, ID: ep, Content: subject + " said something about " + k.Attribute, OccurredAt: validFrom})
			require.NoError(rt, err)
			if rapid.IntRange(0, 4).Draw(rt, "retract") == 0 {
				_, err = w.store.Retract(w.ctx, sgam.Retraction{Key: k, At: validFrom, Source: ep})
			} else {
				_, err = w.store.Assert(w.ctx, sgam.Assertion{Key: k, Value: []byte(fmt.Sprintf(`"v%d"`, rapid.IntRange(0, 3).Draw(rt, "value"))), ValidFrom: validFrom, Source: ep})
			}
			if sgam.ErrorCode(err) == sgam.Conflict {
				continue // a different value at the same valid_from
			}
			require.NoError(rt, err)
		}
		w.clock.Set(clock.Add(time.Hour))
		subject := fmt.Sprintf("s%d", rapid.IntRange(0, 2).Draw(rt, "asked"))
		q := recall.Query{Tenant: tenant, Question: "what about " + subject + "?", TokenBudget: recall.MaxBudget, EvidenceLimit: recall.None}
		if rapid.Bool().Draw(rt, "as_of") {
			q.AsOf = start.Add(time.Duration(rapid.IntRange(0, 60*24).Draw(rt, "as_of_h")) * time.Hour)
		}
		if rapid.Bool().Draw(rt, "known_at") {
			q.KnownAt = clock.Add(-time.Duration(rapid.IntRange(0, ops*48).Draw(rt, "known_at_h")) * time.Hour)
		}
		if rapid.Bool().Draw(rt, "past") {
			q.Question = "what was " + subject + " before?"
		}
		if rapid.Bool().Draw(rt, "newlines") {
			q.Question = "what about\n  " + subject + " on\nJune 2, 2026?"
		}
		c, err := w.r.Recall(w.ctx, q)
		require.NoError(rt, err)
		require.Equal(rt, recall.Tokens(c.Rendered), c.Tokens, "a block's tokens are its lines'")
		at := sgam.At{AsOf: c.AsOf, KnownAt: c.KnownAt}
		shown := map[sgam.Key]bool{}
		for _, f := range c.Facts {
			require.Equal(rt, tenant, f.Tenant)
			got, err := w.store.Get(w.ctx, f.Key(), at)
			require.NoError(rt, err)
			switch f.Status {
			case recall.Current:
				require.NotNil(rt, got, "%s is presented as current but has no value at %v", f.Key(), at)
				require.Equal(rt, got.ID, f.ID)
				require.Equal(rt, string(got.Value), string(f.Value))
				shown[f.Key()] = true
			case recall.Past:
				require.False(rt, got != nil && got.ID == f.ID, "past fact %d holds at as_of", f.ID)
				require.NotNil(rt, f.ValidTo)
				require.False(rt, f.ValidTo.After(c.AsOf))
			default:
				rt.Fatalf("status %q", f.Status)
			}
		}
		if len(c.Subjects) == 0 {
			return // the subject has no believed row: nothing to present
		}
		for a := range 3 {
			k := sgam.Key{Tenant: tenant, Subject: subject, Attribute: fmt.Sprintf("a%d", a)}
			got, err := w.store.Get(w.ctx, k, at)
			require.NoError(rt, err)
			require.Equal(rt, got != nil, shown[k], "%s: Get has %v, recall shows %v", k, got != nil, shown[k])
		}
	})
}

// TestStaleEvidenceProperty: for random histories, an evidence episode is
// marked superseded on a key exactly when it stated a value of the key,
// believed at known_at, and none of its believed statements there holds
// at as_of or starts after it (read from History, not FactsFrom); every
// mark's row is the episode's and not current.
func TestStaleEvidenceProperty(t *testing.T) {
	w := newWorld(t)
	start := ts(t, "2026-01-01T00:00:00Z")
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		tenant := fmt.Sprintf("p%d", n)
		clock := start
		ops := rapid.IntRange(1, 20).Draw(rt, "ops")
		var episodes []string
		for i := range ops {
			clock = clock.Add(time.Duration(rapid.IntRange(1, 48).Draw(rt, "tick")) * time.Hour)
			w.clock.Set(clock)
			k := sgam.Key{Tenant: tenant, Subject: "mira", Attribute: fmt.Sprintf("a%d", rapid.IntRange(0, 1).Draw(rt, "attribute"))}
			validFrom := start.Add(time.Duration(rapid.IntRange(0, 60*24).Draw(rt, "valid")) * time.Hour)
			ep := fmt.Sprintf("e%d", i)
			// An episode may speak again of what an earlier one said.
			if i > 0 && rapid.IntRange(0, 3).Draw(rt, "again") == 0 {
				ep = episodes[rapid.IntRange(0, len(episodes)-1).Draw(rt, "which")]
			} else {
				_, err := w.store.AddEpisode(w.ctx, sgam.Episode{Tenant: tenant, ID: ep, Content: "mira news " + ep, OccurredAt: validFrom})
				require.NoError(rt, err)
				episodes = append(episodes, ep)
			}
			var err error
			if rapid.IntRange(0, 3).Draw(rt, "retract") == 0 {
				_, err = w.store.Retract(w.ctx, sgam.Retraction{Key: k, At: validFrom, Source: ep})
			} else {
				_, err = w.store.Assert(w.ctx, sgam.Assertion{Key: k, Value: []byte(fmt.Sprintf(`"v%d"`, rapid.IntRange(0, 3).Draw(rt, "value"))), ValidFrom: validFrom, Source: ep})
			}
			if sgam.ErrorCode(err) == sgam.Conflict {
				continue
			}
			require.NoError(rt, err)
		}
		w.clock.Set(clock.Add(time.Hour))
		// A short limit leaves out episodes that ended shown statements:
		// those brought in are marked as the rest are.
		q := recall.Query{Tenant: tenant, Question: "mira news", Subjects: []string{"mira"}, TokenBudget: recall.MaxBudget,
			EvidenceLimit: rapid.SampledFrom([]int{1, 2, 3, recall.MaxEvidence}).Draw(rt, "limit")}
		if rapid.Bool().Draw(rt, "as_of") {
			q.AsOf = start.Add(time.Duration(rapid.IntRange(0, 60*24).Draw(rt, "as_of_h")) * time.Hour)
		}
		if rapid.Bool().Draw(rt, "known_at") {
			q.KnownAt = clock.Add(-time.Duration(rapid.IntRange(0, ops*48).Draw(rt, "known_at_h")) * time.Hour)
		}
		c, err := w.r.Recall(w.ctx, q)
		require.NoError(rt, err)
		at := sgam.At{AsOf: c.AsOf, KnownAt: c.KnownAt}
		believed := func(f sgam.Fact) bool {
			return !f.RecordedAt.After(at.KnownAt) && (f.RetractedAt == nil || f.RetractedAt.After(at.KnownAt))
		}
		for _, e := range c.Evidence {
			marked := map[string]recall.Superseded{}
			for _, s := range e.Superseded {
				require.Equal(rt, "mira", s.Subject)
				marked[s.Attribute] = s
			}
			for a := range 2 {
				attr := fmt.Sprintf("a%d", a)
				rows, err := w.store.History(w.ctx, sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attr})
				require.NoError(rt, err)
				stated, live := false, false
				for _, f := range rows {
					if f.Tombstone || !slices.Contains(f.Sources, e.EpisodeID) || f.RecordedAt.After(at.KnownAt) {
						continue
					}
					stated = true
					if believed(f) && (f.ValidFrom.After(at.AsOf) || f.ValidTo == nil || f.ValidTo.After(at.AsOf)) {
						live = true
					}
				}
				s, isMarked := marked[attr]
				require.Equal(rt, stated && !live, isMarked, "%s on %s at %v: stated %v, live %v, marked %+v", e.EpisodeID, attr, at, stated, live, s)
				if isMarked {
					got, err := w.store.Get(w.ctx, sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attr}, at)
					require.NoError(rt, err)
					require.False(rt, got != nil && got.ID == s.FactID, "a marked row is not current")
				}
			}
		}
	})
}
