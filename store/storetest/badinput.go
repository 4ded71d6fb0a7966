package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runBadInput(t *testing.T, newStore Factory) {
	t.Parallel()
	b := setup(t, newStore)
	good := sgam.Assertion{Key: key(tenantA, "mira", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"}
	with := func(f func(a *sgam.Assertion)) sgam.Assertion {
		a := good
		f(&a)
		return a
	}
	big := json.RawMessage(`"` + strings.Repeat("x", sgam.DefaultMaxValueBytes) + `"`)
	cases := []struct {
		name  string
		a     sgam.Assertion
		field string
	}{
		{"empty tenant", with(func(a *sgam.Assertion) { a.Key.Tenant = "" }), "tenant"},
		{"tenant with space", with(func(a *sgam.Assertion) { a.Key.Tenant = "ac me" }), "tenant"},
		{"empty subject", with(func(a *sgam.Assertion) { a.Key.Subject = "" }), "subject"},
		{"subject with control character", with(func(a *sgam.Assertion) { a.Key.Subject = "mi\x00ra" }), "subject"},
		{"subject with padding", with(func(a *sgam.Assertion) { a.Key.Subject = " mira" }), "subject"},
		{"long subject", with(func(a *sgam.Assertion) { a.Key.Subject = strings.Repeat("m", 257) }), "subject"},
		{"empty attribute", with(func(a *sgam.Assertion) { a.Key.Attribute = "" }), "attribute"},
		{"attribute with slash", with(func(a *sgam.Assertion) { a.Key.Attribute = "a/b" }), "attribute"},
		{"missing value", with(func(a *sgam.Assertion) { a.Value = nil }), "value"},
		{"invalid JSON value", with(func(a *sgam.Assertion) { a.Value = json.RawMessage(`{"a":`) }), "value"},
		{"trailing data", with(func(a *sgam.Assertion) { a.Value = json.RawMessage(`1 2`) }), "value"},
		{"bare word", with(func(a *sgam.Assertion) { a.Value = json.RawMessage(`Oslo`) }), "value"},
		{"null value", with(func(a *sgam.Assertion) { a.Value = json.RawMessage(`null`) }), "value"},
		{"value over the size limit", with(func(a *sgam.Assertion) { a.Value = big }), "value"},
		{"value with U+0000", with(func(a *sgam.Assertion) { a.Value = json.RawMessage(`{"a":"x\u0000y"}`) }), "value"},
		{"zero valid_from", with(func(a *sgam.Assertion) { a.ValidFrom = time.Time{} }), "valid_from"},
		{"valid_from after year 9999", with(func(a *sgam.Assertion) { a.ValidFrom = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), "valid_from"},
		{"empty source", with(func(a *sgam.Assertion) { a.Source = "" }), "source"},
		{"source with separator", with(func(a *sgam.Assertion) { a.Source = "e\x1f1" }), "source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.store.Assert(b.ctx, c.a)
			requireCode(t, err, sgam.Invalid, c.field)
			require.NotEmpty(t, sgam.ErrorMessage(err))
			_, err = b.store.AssertMany(b.ctx, []sgam.Assertion{good, c.a})
			requireCode(t, err, sgam.Invalid, "assertions[1]."+c.field)
		})
	}

	t.Run("retraction", func(t *testing.T) {
		_, err := b.store.Retract(b.ctx, sgam.Retraction{Key: good.Key, Source: "e1"})
		requireCode(t, err, sgam.Invalid, "at")
		_, err = b.store.Retract(b.ctx, sgam.Retraction{Key: good.Key, At: b.at("2026-01-01T00:00:00Z")})
		requireCode(t, err, sgam.Invalid, "source")
	})

	t.Run("episode", func(t *testing.T) {
		for _, c := range []struct {
			e     sgam.Episode
			field string
		}{
			{sgam.Episode{ID: "e1"}, "tenant"},
			{sgam.Episode{Tenant: tenantA, ID: "e 1"}, "episode_id"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Kind: "a kind"}, "kind"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Content: strings.Repeat("x", sgam.DefaultMaxContentBytes+1)}, "content"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Content: "\xff"}, "content"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Content: "a\x00b"}, "content"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Metadata: json.RawMessage(`{"k":"\u0000"}`)}, "metadata"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Kind: sgam.KindUnknown}, "kind"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Metadata: json.RawMessage(`[1]`)}, "metadata"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Metadata: json.RawMessage(`{`)}, "metadata"},
			{sgam.Episode{Tenant: tenantA, ID: "e1", Session: "s\n1"}, "session"},
		} {
			_, err := b.store.AddEpisode(b.ctx, c.e)
			requireCode(t, err, sgam.Invalid, c.field)
		}
	})

	t.Run("reads", func(t *testing.T) {
		_, err := b.store.Get(b.ctx, key("", "mira", "city"), sgam.At{})
		requireCode(t, err, sgam.Invalid, "tenant")
		_, err = b.store.Get(b.ctx, good.Key, sgam.At{AsOf: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)})
		requireCode(t, err, sgam.Invalid, "as_of")
		_, err = b.store.State(b.ctx, tenantA, "", sgam.At{})
		requireCode(t, err, sgam.Invalid, "subject")
		_, err = b.store.History(b.ctx, key(tenantA, "mira", ""))
		requireCode(t, err, sgam.Invalid, "attribute")
		_, err = b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Limit: -1})
		requireCode(t, err, sgam.Invalid, "limit")
	})

	t.Run("nothing half-written", func(t *testing.T) {
		hist, err := b.store.History(b.ctx, good.Key)
		require.NoError(t, err)
		require.Empty(t, hist)
		eps, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Empty(t, eps)
		b.requireClean()
	})
}
