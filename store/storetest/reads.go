package storetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runReads(t *testing.T, newStore Factory) {
	// seed writes the same subject under both tenants with different values.
	seed := func(t *testing.T) *bundle {
		b := setup(t, newStore)
		for _, tenant := range []string{tenantA, tenantB} {
			v := func(s string) string { return tenant + ":" + s }
			b.tick("2026-01-01T00:00:00Z")
			b.assert(key(tenant, "mira", "city"), v("Oslo"), "2026-01-01T00:00:00Z", "e1")
			b.assert(key(tenant, "mira", "employer"), v("Acme"), "2026-01-01T00:00:00Z", "e1")
			b.assert(key(tenant, "mira", "pet"), v("cat"), "2026-01-01T00:00:00Z", "e1")
			b.tick("2026-02-01T00:00:00Z")
			b.assert(key(tenant, "mira", "city"), v("Bergen"), "2026-02-01T00:00:00Z", "e2")
			b.retract(key(tenant, "mira", "pet"), "2026-02-01T00:00:00Z", "e2")
			b.assert(key(tenant, "kai", "city"), v("Rome"), "2026-01-15T00:00:00Z", "e3")
		}
		b.tick("2026-03-01T00:00:00Z")
		return b
	}

	t.Run("GetSeesOnlyItsTenant", func(t *testing.T) {
		t.Parallel()
		b := seed(t)
		require.Equal(t, "acme:Bergen", b.value(key(tenantA, "mira", "city"), "", ""))
		require.Equal(t, "globex:Bergen", b.value(key(tenantB, "mira", "city"), "", ""))
		require.Equal(t, "acme:Oslo", b.value(key(tenantA, "mira", "city"), "2026-01-20T00:00:00Z", ""))
		require.Nil(t, b.get(key("initech", "mira", "city"), "", ""), "a third tenant sees nothing")
		f := b.get(key(tenantA, "mira", "city"), "", "")
		require.Equal(t, tenantA, f.Tenant)
		require.Equal(t, "mira", f.Subject)
		require.Equal(t, "city", f.Attribute)
		require.Equal(t, b.at("2026-02-01T00:00:00Z"), f.RecordedAt)
		require.Nil(t, f.RetractedAt)
		require.Equal(t, 0, f.SchemaVersion)
	})

	t.Run("GetBeforeAnythingIsNil", func(t *testing.T) {
		t.Parallel()
		b := seed(t)
		require.Nil(t, b.get(key(tenantA, "mira", "city"), "2025-12-31T23:59:59Z", ""))
		require.Nil(t, b.get(key(tenantA, "mira", "city"), "", "2025-12-31T00:00:00Z"), "nothing was known then")
		require.Nil(t, b.get(key(tenantA, "nobody", "city"), "", ""))
	})

	t.Run("State", func(t *testing.T) {
		t.Parallel()
		b := seed(t)
		state, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"city": "acme:Bergen", "employer": "acme:Acme"}, values(t, state))
		past, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{AsOf: b.at("2026-01-20T00:00:00Z")})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"city": "acme:Oslo", "employer": "acme:Acme", "pet": "acme:cat"}, values(t, past))
		belief, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{KnownAt: b.at("2026-01-20T00:00:00Z")})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"city": "acme:Oslo", "employer": "acme:Acme", "pet": "acme:cat"}, values(t, belief),
			"before February's writes we believed Oslo and a cat, now too")
		for _, f := range append(state, past...) {
			require.Equal(t, tenantA, f.Tenant)
		}
		none, err := b.store.State(b.ctx, "initech", "mira", sgam.At{})
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("History", func(t *testing.T) {
		t.Parallel()
		b := seed(t)
		hist, err := b.store.History(b.ctx, key(tenantA, "mira", "city"))
		require.NoError(t, err)
		require.Len(t, hist, 3)
		for i, f := range hist {
			require.Equal(t, tenantA, f.Tenant)
			if i > 0 {
				require.Greater(t, f.ID, hist[i-1].ID, "history is in write order")
			}
		}
		none, err := b.store.History(b.ctx, key("initech", "mira", "city"))
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("Trace", func(t *testing.T) {
		t.Parallel()
		b := seed(t)
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e2", Kind: "message", Content: "moved to Bergen"})
		require.NoError(t, err, "a placeholder is filled in")
		f := b.get(key(tenantA, "mira", "city"), "", "")
		tr, err := b.store.Trace(b.ctx, tenantA, f.ID)
		require.NoError(t, err)
		require.Len(t, tr.Chain, 2)
		require.Equal(t, f.ID, tr.Chain[0].ID)
		require.Nil(t, tr.Chain[1].Supersedes)
		byID := map[string]sgam.Episode{}
		for _, e := range tr.Episodes {
			require.Equal(t, tenantA, e.Tenant)
			byID[e.ID] = e
		}
		require.Equal(t, "moved to Bergen", byID["e2"].Content)
		require.Equal(t, sgam.KindUnknown, byID["e1"].Kind, "e1 is still a placeholder")

		_, err = b.store.Trace(b.ctx, tenantB, f.ID)
		requireCode(t, err, sgam.NotFound, "fact_id")
		_, err = b.store.Trace(b.ctx, tenantA, 1<<40)
		requireCode(t, err, sgam.NotFound, "fact_id")
	})
}

func values(t *testing.T, facts []sgam.Fact) map[string]string {
	out := map[string]string{}
	for _, f := range facts {
		var s string
		require.NoError(t, json.Unmarshal(f.Value, &s))
		out[f.Attribute] = s
	}
	return out
}
