package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// runStats: a tenant's counts are of its own rows only.
func runStats(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	_, err := b.store.ApplySchema(b.ctx, tenantA, []byte(`attributes:
  city: {memory: profile, type: string}
  dob: {memory: profile, type: date, sensitive: true}
`), false)
	require.NoError(t, err)
	b.tick("2026-01-01T00:00:00Z")
	for _, id := range []string{"e1", "e2"} {
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: id, Content: "text of " + id})
		require.NoError(t, err)
	}
	for _, a := range []sgam.Assertion{
		{Key: key(tenantA, "mira", "city"), Value: []byte(`"Oslo"`), ValidFrom: b.at("2025-01-01T00:00:00Z"), Source: "e1"},
		{Key: key(tenantA, "mira", "city"), Value: []byte(`"Bergen"`), ValidFrom: b.at("2025-06-01T00:00:00Z"), Source: "e2"},
		{Key: key(tenantA, "kai", "city"), Value: []byte(`"Lyon"`), ValidFrom: b.at("2025-01-01T00:00:00Z"), Source: "e2"},
		{Key: key(tenantA, "kai", "dob"), Value: []byte(`"1990-01-01"`), ValidFrom: b.at("2025-01-01T00:00:00Z"), Source: "e2"},
	} {
		b.tick("2026-01-02T00:00:00Z")
		_, err := b.store.Assert(b.ctx, a)
		require.NoError(t, err)
	}
	require.NoError(t, b.store.QueueExtraction(b.ctx, tenantA, []string{"e1"}, false))

	st, err := b.store.Stats(b.ctx, tenantA)
	require.NoError(t, err)
	require.Equal(t, 2, st.Subjects)
	require.Equal(t, 3, st.Facts, "Oslo closed by Bergen, Bergen, Lyon; the date of birth waits")
	require.Equal(t, 2, st.Episodes)
	require.Equal(t, 1, st.Pending)
	require.Zero(t, st.Signals)
	require.Equal(t, 1, st.Queued)
	require.Empty(t, st.Extractions)
	require.ElementsMatch(t, []string{"kai", "mira"}, st.RecentSubjects)

	other, err := b.store.Stats(b.ctx, tenantB)
	require.NoError(t, err)
	require.Equal(t, sgam.TenantStats{Extractions: map[string]int{}, RecentSubjects: []string{}}, other)
	_, err = b.store.Stats(b.ctx, "")
	requireCode(t, err, sgam.Invalid, "tenant")
}
