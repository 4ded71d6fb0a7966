package storetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runEpisodes(t *testing.T, newStore Factory) {
	t.Run("AddGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Session: "s1", Kind: "message",
			Content: "hello", OccurredAt: b.at("2026-01-01T10:00:00+01:00"), Metadata: json.RawMessage(`{"b":1e2, "a":-0, "c":"ü"}`)})
		require.NoError(t, err)
		require.Equal(t, b.at("2026-01-01T09:00:00Z"), e.OccurredAt)
		require.Equal(t, `{"a":-0,"b":1e2,"c":"ü"}`, string(e.Metadata), "metadata is canonical, numbers as written")
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantB, ID: "e1", Kind: "message", Content: "other tenant"})
		require.NoError(t, err, "ids are per tenant")
		gen, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, Session: "s2", Content: "no id"})
		require.NoError(t, err)
		require.NotEmpty(t, gen.ID)
		require.Equal(t, sgam.KindMessage, gen.Kind)

		got, err := b.store.Episode(b.ctx, tenantA, "e1")
		require.NoError(t, err)
		require.True(t, sgam.EpisodesEqual(e, got), "got %+v want %+v", got, e)
		_, err = b.store.Episode(b.ctx, "initech", "e1")
		requireCode(t, err, sgam.NotFound, "episode_id")

		all, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Len(t, all, 2)
		s1, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Session: "s1"})
		require.NoError(t, err)
		require.Len(t, s1, 1)
		other, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantB})
		require.NoError(t, err)
		require.Len(t, other, 1)
		require.Equal(t, "other tenant", other[0].Content)
	})

	t.Run("Idempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		first, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "hello"})
		require.NoError(t, err)
		b.tick("2026-01-02T00:00:00Z")
		again, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "hello"})
		require.NoError(t, err, "a retry is a repeat")
		require.True(t, sgam.EpisodesEqual(first, again))
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "changed"})
		requireCode(t, err, sgam.Conflict, "episode_id")

		k1, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, IdempotencyKey: "req-7", Content: "hi"})
		require.NoError(t, err)
		k2, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, IdempotencyKey: "req-7", Content: "hi"})
		require.NoError(t, err)
		require.Equal(t, k1.ID, k2.ID)
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, IdempotencyKey: "req-7", Content: "other"})
		requireCode(t, err, sgam.Conflict, "idempotency_key")
		k3, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantB, IdempotencyKey: "req-7", Content: "hi"})
		require.NoError(t, err, "idempotency keys are per tenant")
		require.NotEqual(t, k1.ID, k3.ID)
	})

	t.Run("PlaceholderFilledIn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.assert(key(tenantA, "mira", "city"), "Oslo", "2026-01-01T00:00:00Z", "late")
		ph, err := b.store.Episode(b.ctx, tenantA, "late")
		require.NoError(t, err)
		require.Equal(t, sgam.KindUnknown, ph.Kind)
		_, err = b.store.Episode(b.ctx, tenantB, "late")
		requireCode(t, err, sgam.NotFound, "")
		b.tick("2026-01-05T00:00:00Z")
		e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "late", Kind: "tool", Content: "city=Oslo"})
		require.NoError(t, err)
		require.Equal(t, "tool", e.Kind)
		require.Equal(t, ph.RecordedAt, e.RecordedAt, "recorded_at is when the store first heard of it")
		b.requireClean()
	})
}
