package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// runFactsFrom: the rows an episode is a source of (by its assertion or a
// corroborating link), of the subjects asked, as recorded by known_at, and
// the rows that closed them: what recall says of a stale episode.
func runFactsFrom(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	style, city := key(tenantA, "mira", "answer_style"), key(tenantA, "mira", "city")
	for _, tenant := range []string{tenantA, tenantB} {
		b.tick("2026-06-01T09:00:00Z")
		b.episode(tenant, "e1", "Hi, I'm Mira from Oslo. I prefer concise answers.", "2026-06-01T09:00:00Z")
		b.episode(tenant, "e2", "Still in Oslo.", "2026-06-03T09:00:00Z")
		b.episode(tenant, "e6", "I no longer want concise answers; detail is fine.", "2026-06-05T09:00:00Z")
		b.episode(tenant, "e7", "I moved to Bergen.", "2026-06-06T09:00:00Z")
	}
	b.assert(style, "concise", "2026-06-01T09:00:00Z", "e1")
	b.assert(city, "Oslo", "2026-06-01T09:00:00Z", "e1")
	b.assert(key(tenantB, "mira", "city"), "Lima", "2026-06-01T09:00:00Z", "e1")
	b.tick("2026-06-03T09:00:00Z")
	b.assert(city, "Oslo", "2026-06-01T09:00:00Z", "e2") // a repeat: e2 corroborates
	b.tick("2026-06-05T09:00:00Z")
	b.retract(style, "2026-06-05T09:00:00Z", "e6")
	b.tick("2026-06-06T09:00:00Z")
	b.assert(city, "Bergen", "2026-06-06T09:00:00Z", "e7")
	b.tick("2026-06-07T09:00:00Z")

	from := func(tenant string, episodes, subjects []string, knownAt string) []sgam.Fact {
		t.Helper()
		var k time.Time
		if knownAt != "" {
			k = b.at(knownAt)
		}
		rows, err := b.store.FactsFrom(b.ctx, tenant, episodes, subjects, k)
		require.NoError(t, err)
		require.True(t, slices.IsSortedFunc(rows, func(a, b sgam.Fact) int { return int(a.ID - b.ID) }), "by fact id")
		for _, f := range rows {
			require.Equal(t, tenant, f.Tenant)
			require.Contains(t, subjects, f.Subject)
			if knownAt != "" {
				require.False(t, f.RecordedAt.After(k), "recorded by known_at: %+v", f)
			}
		}
		return rows
	}
	// believed finds the row of attribute with value (nil: a tombstone)
	// believed at knownAt (zero: now).
	believed := func(rows []sgam.Fact, attribute string, value *string, knownAt time.Time) *sgam.Fact {
		for i, f := range rows {
			if f.Attribute != attribute || f.RetractedAt != nil && (knownAt.IsZero() || !f.RetractedAt.After(knownAt)) {
				continue
			}
			if value == nil && f.Tombstone {
				return &rows[i]
			}
			var v string
			if value != nil && !f.Tombstone && json.Unmarshal(f.Value, &v) == nil && v == *value {
				return &rows[i]
			}
		}
		return nil
	}
	str := func(s string) *string { return &s }

	// e1's statements, now: both closed, each with the row that closed it.
	rows := from(tenantA, []string{"e1"}, []string{"mira"}, "")
	concise := believed(rows, "answer_style", str("concise"), time.Time{})
	require.NotNil(t, concise, "%+v", rows)
	require.Equal(t, b.at("2026-06-05T09:00:00Z"), *concise.ValidTo)
	tomb := believed(rows, "answer_style", nil, time.Time{})
	require.NotNil(t, tomb, "the tombstone that revoked it: %+v", rows)
	require.Equal(t, b.at("2026-06-05T09:00:00Z"), tomb.ValidFrom)
	require.Equal(t, []string{"e6"}, tomb.Sources)
	oslo := believed(rows, "city", str("Oslo"), time.Time{})
	require.NotNil(t, oslo)
	require.Equal(t, b.at("2026-06-06T09:00:00Z"), *oslo.ValidTo)
	require.Contains(t, oslo.Sources, "e1")
	bergen := believed(rows, "city", str("Bergen"), time.Time{})
	require.NotNil(t, bergen, "the value that closed Oslo")
	require.Equal(t, []string{"e7"}, bergen.Sources)

	// By a corroborating link too.
	rows = from(tenantA, []string{"e2"}, []string{"mira"}, "")
	require.NotNil(t, believed(rows, "city", str("Oslo"), time.Time{}), "e2 corroborates Oslo: %+v", rows)
	require.NotNil(t, believed(rows, "city", str("Bergen"), time.Time{}))
	require.Nil(t, believed(rows, "answer_style", str("concise"), time.Time{}), "e2 said nothing of answer_style")

	// As believed on June 4: concise held, and nothing had closed it.
	june4 := b.at("2026-06-04T00:00:00Z")
	rows = from(tenantA, []string{"e1"}, []string{"mira"}, "2026-06-04T00:00:00Z")
	concise = believed(rows, "answer_style", str("concise"), june4)
	require.NotNil(t, concise)
	require.Nil(t, believed(rows, "answer_style", nil, june4))
	require.Nil(t, believed(rows, "city", str("Bergen"), june4))

	// Only the subjects asked; only the tenant's own.
	require.Empty(t, from(tenantA, []string{"e1"}, []string{"omar"}, ""))
	rows = from(tenantB, []string{"e1", "e2", "e6", "e7"}, []string{"mira"}, "")
	require.Len(t, rows, 1)
	require.JSONEq(t, `"Lima"`, string(rows[0].Value))
	require.Empty(t, from(tenantB, nil, []string{"mira"}, ""))

	_, err := b.store.FactsFrom(b.ctx, tenantA, make([]string, sgam.MaxSubjectsLookup+1), []string{"mira"}, time.Time{})
	requireCode(t, err, sgam.Invalid, "episodes")
	_, err = b.store.FactsFrom(b.ctx, "", []string{"e1"}, []string{"mira"}, time.Time{})
	requireCode(t, err, sgam.Invalid, "tenant")
}
