package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runTemporal(t *testing.T, newStore Factory) {
	t.Run("PassportStory", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "passport_deadline")
		// The neighbour tenant holds the same key with other values throughout.
		kb := key(tenantB, "mira", "passport_deadline")

		b.tick("2026-06-01T09:00:00Z")
		b.episode(tenantA, "e1", "Mira: my passport renewal deadline is July 15.", "2026-06-01T09:00:00Z")
		b.assert(k, "2026-07-15", "2026-06-01T09:00:00Z", "e1")
		b.assert(kb, "1999-01-01", "2026-05-01T00:00:00Z", "x1")

		b.tick("2026-06-03T10:00:00Z")
		b.episode(tenantA, "e2", "Correction: the passport deadline is June 30, not July 15.", "2026-06-03T10:00:00Z")
		r := b.assert(k, "2026-06-30", "2026-06-03T10:00:00Z", "e2")
		require.NotNil(t, r.Fact.Supersedes, "the correction supersedes the first value")

		b.tick("2026-06-05T12:00:00Z")
		b.episode(tenantA, "e0", "Mira: the consulate said August 1.", "2026-05-30T08:00:00Z")
		b.assert(k, "2026-08-01", "2026-05-30T08:00:00Z", "e0")
		b.assert(kb, "1999-12-31", "2026-06-02T00:00:00Z", "x2")

		now := b.get(k, "", "")
		require.NotNil(t, now)
		require.JSONEq(t, `"2026-06-30"`, string(now.Value), "current value")
		require.Equal(t, []string{"e2"}, now.Sources)
		require.Equal(t, "2026-07-15", b.value(k, "2026-06-02T00:00:00Z", ""), "value on June 2")
		require.Equal(t, "2026-08-01", b.value(k, "2026-05-31T00:00:00Z", ""), "value on May 31 (delayed extraction)")
		require.Equal(t, "2026-07-15", b.value(k, "2026-06-04T00:00:00Z", "2026-06-03T09:59:00Z"),
			"believed about June 4 before e2 was recorded")
		require.Equal(t, "", b.value(k, "2026-05-31T00:00:00Z", "2026-06-04T00:00:00Z"), "e0 was not known on June 4")
		require.Equal(t, "", b.value(k, "2026-05-29T00:00:00Z", ""), "nothing before May 30")

		hist, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, hist, 4, "first value, its closed copy, the correction, the delayed extraction")
		require.NotNil(t, hist[0].RetractedAt, "the open first row was retracted, not edited")
		require.Equal(t, b.at("2026-06-03T10:00:00Z"), *hist[0].RetractedAt)
		require.Nil(t, hist[0].ValidTo)
		require.Equal(t, b.at("2026-06-03T10:00:00Z"), *hist[1].ValidTo, "its copy is closed at the correction")
		require.Equal(t, []string{"e1"}, hist[1].Sources, "the closed copy keeps its evidence")
		for _, f := range hist {
			require.Equal(t, tenantA, f.Tenant)
		}

		tr, err := b.store.Trace(b.ctx, tenantA, now.ID)
		require.NoError(t, err)
		require.Len(t, tr.Chain, 2)
		require.Equal(t, hist[0].ID, tr.Chain[1].ID)
		contents := map[string]string{}
		for _, e := range tr.Episodes {
			contents[e.ID] = e.Content
		}
		require.Equal(t, map[string]string{
			"e2": "Correction: the passport deadline is June 30, not July 15.",
			"e1": "Mira: my passport renewal deadline is July 15.",
		}, contents)

		require.Equal(t, "1999-12-31", b.value(kb, "", ""), "the neighbour keeps its own value")
		_, err = b.store.Trace(b.ctx, tenantB, now.ID)
		requireCode(t, err, sgam.NotFound, "fact_id")
		b.requireClean()
	})

	t.Run("Replace", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		b.tick("2026-02-01T00:00:00Z")
		first := b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e1")
		b.tick("2026-03-01T00:00:00Z")
		second := b.assert(k, "Bergen", "2026-02-15T00:00:00Z", "e2")
		require.Equal(t, first.Fact.ID, *second.Fact.Supersedes)
		require.Nil(t, second.Fact.ValidTo)
		require.Equal(t, "Oslo", b.value(k, "2026-02-14T00:00:00Z", ""))
		require.Equal(t, "Bergen", b.value(k, "2026-02-15T00:00:00Z", ""), "valid_from is inclusive")
		require.Equal(t, "Oslo", b.value(k, "2026-02-20T00:00:00Z", "2026-02-28T00:00:00Z"), "known_at before the replacement")
		b.requireClean()
	})

	t.Run("RepeatIsIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		first := b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e1")
		b.tick("2026-01-02T00:00:00Z")
		again := b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e2")
		require.True(t, again.NoChange)
		require.Equal(t, first.Fact.ID, again.Fact.ID)
		require.Equal(t, []string{"e1", "e2"}, again.Fact.Sources, "the repeat's source is extra evidence")
		hist, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, hist, 1, "no new row")
		// A past-belief read shows the evidence known then.
		f := b.get(k, "", "2026-01-01T12:00:00Z")
		require.Equal(t, []string{"e1"}, f.Sources)
		b.requireClean()
	})

	t.Run("ConflictAtEqualValidFrom", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e1")
		_, err := b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: jsonString("Bergen"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e2"})
		requireCode(t, err, sgam.Conflict, "valid_from")
		// The same instant written with another offset is the same instant.
		_, err = b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: jsonString("Bergen"), ValidFrom: b.at("2026-01-01T02:00:00+02:00"), Source: "e2"})
		requireCode(t, err, sgam.Conflict, "valid_from")
		_, err = b.store.Retract(b.ctx, sgam.Retraction{Key: k, At: b.at("2026-01-01T00:00:00Z"), Source: "e2"})
		requireCode(t, err, sgam.Conflict, "at")
		hist, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, hist, 1, "nothing written")
		_, err = b.store.Episode(b.ctx, tenantA, "e2")
		requireCode(t, err, sgam.NotFound, "") // a rejected write leaves no placeholder episode
		b.requireClean()
	})

	t.Run("RepeatedValueIsABoundary", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		b.tick("2026-02-01T00:00:00Z")
		b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e1")
		b.tick("2026-02-02T00:00:00Z")
		r := b.assert(k, "Oslo", "2026-01-20T00:00:00Z", "e2")
		require.False(t, r.NoChange, "a re-affirmation at a new valid_from is a new row")
		b.tick("2026-02-03T00:00:00Z")
		d := b.assert(k, "Bergen", "2026-01-10T00:00:00Z", "e3")
		require.Equal(t, b.at("2026-01-20T00:00:00Z"), *d.Fact.ValidTo, "the delayed assertion stops at the re-affirmation")
		require.Equal(t, "Oslo", b.value(k, "2026-01-05T00:00:00Z", ""))
		require.Equal(t, "Bergen", b.value(k, "2026-01-15T00:00:00Z", ""))
		require.Equal(t, "Oslo", b.value(k, "2026-01-25T00:00:00Z", ""))
		b.requireClean()
	})

	t.Run("DelayedAssertionEndsAtNextRow", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		b.assert(k, "Oslo", "2026-03-01T00:00:00Z", "e1")
		d := b.assert(k, "Bergen", "2026-01-01T00:00:00Z", "e0")
		require.Equal(t, b.at("2026-03-01T00:00:00Z"), *d.Fact.ValidTo)
		require.Nil(t, d.Fact.Supersedes)
		require.Equal(t, "Oslo", b.value(k, "2026-04-01T00:00:00Z", ""), "the current value stays current")
		hist, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, hist, 2, "later rows are untouched")
		require.Nil(t, hist[0].RetractedAt)
		b.requireClean()
	})

	t.Run("RetractIsATombstone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "likes")
		kb := key(tenantB, "mira", "likes")
		b.tick("2026-01-10T00:00:00Z")
		b.assert(k, "jazz", "2026-01-01T00:00:00Z", "e1")
		b.assert(kb, "jazz", "2026-01-01T00:00:00Z", "x1")
		b.tick("2026-02-10T00:00:00Z")
		r := b.retract(k, "2026-02-01T00:00:00Z", "e2")
		require.True(t, r.Fact.Tombstone)
		require.Equal(t, []string{"e2"}, r.Fact.Sources, "the revocation has provenance")
		require.Equal(t, "", b.value(k, "", ""), "reads treat a tombstone as no value")
		require.Equal(t, "jazz", b.value(k, "2026-01-15T00:00:00Z", ""))
		require.Equal(t, "jazz", b.value(k, "", "2026-02-01T00:00:00Z"), "before the revocation was recorded")
		require.Equal(t, "jazz", b.value(kb, "", ""), "the neighbour still likes jazz")

		state, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{})
		require.NoError(t, err)
		require.Empty(t, state, "state omits retracted attributes")

		// A delayed assertion stops where the revocation starts.
		b.tick("2026-03-10T00:00:00Z")
		d := b.assert(k, "blues", "2026-01-20T00:00:00Z", "e3")
		require.Equal(t, b.at("2026-02-01T00:00:00Z"), *d.Fact.ValidTo)
		require.Equal(t, "", b.value(k, "", ""))

		again := b.retract(k, "2026-02-01T00:00:00Z", "e4")
		require.True(t, again.NoChange)
		hist, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		var tombstones int
		for _, f := range hist {
			if f.Tombstone {
				tombstones++
				require.Nil(t, f.Value)
			}
		}
		require.Equal(t, 1, tombstones, "history shows the tombstone")
		b.requireClean()
	})

	t.Run("MixedOffsetsOrderCorrectly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		// 09:30+02:00 is 07:30Z, before 08:00Z, though its text sorts after.
		b.assert(k, "late", "2026-01-01T08:00:00Z", "e1")
		d := b.assert(k, "early", "2026-01-01T09:30:00+02:00", "e2")
		require.Equal(t, b.at("2026-01-01T08:00:00Z"), *d.Fact.ValidTo)
		require.Equal(t, "early", b.value(k, "2026-01-01T07:45:00Z", ""))
		require.Equal(t, "late", b.value(k, "2026-01-01T10:00:00+01:00", ""))
		b.requireClean()
	})

	t.Run("ClockSetBackStaysMonotonic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		other := key(tenantA, "kai", "city")
		b.tick("2026-06-10T00:00:00Z")
		b.assert(k, "a", "2026-01-01T00:00:00Z", "e1")
		b.tick("2026-06-20T00:00:00Z")
		b.assert(k, "z", "2025-01-01T00:00:00Z", "e2") // delayed: touches no row of k
		b.assert(other, "x", "2025-01-01T00:00:00Z", "e2")
		require.Equal(t, "a", b.value(k, "2026-04-01T00:00:00Z", "2026-06-15T00:00:00Z"))

		b.tick("2026-06-01T00:00:00Z") // set back
		r := b.assert(k, "b", "2026-03-01T00:00:00Z", "e3")
		require.False(t, r.Fact.RecordedAt.Before(b.at("2026-06-20T00:00:00Z")), "transaction time never runs backwards, store-wide")
		require.Equal(t, "a", b.value(k, "2026-04-01T00:00:00Z", "2026-06-15T00:00:00Z"), "what was believed on June 15 does not change")
		e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "late", Kind: "message", Content: "late"})
		require.NoError(t, err)
		require.False(t, e.RecordedAt.Before(b.at("2026-06-20T00:00:00Z")))

		// A write that inserts no row (a repeat) moves the clock too.
		b.tick("2026-07-01T00:00:00Z")
		rep := b.assert(k, "b", "2026-03-01T00:00:00Z", "e4")
		require.True(t, rep.NoChange)
		b.tick("2026-06-25T00:00:00Z")
		r = b.assert(other, "y", "2026-02-01T00:00:00Z", "e5")
		require.False(t, r.Fact.RecordedAt.Before(b.at("2026-07-01T00:00:00Z")), "after a repeat-only write")
		b.requireClean()
	})
}
