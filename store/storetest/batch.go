package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runBatch(t *testing.T, newStore Factory) {
	t.Run("SameAsOneByOne", func(t *testing.T) {
		t.Parallel()
		many, one := setup(t, newStore), setup(t, newStore)
		var as []sgam.Assertion
		for i := range 200 {
			tenant := []string{tenantA, tenantB}[i%2]
			as = append(as, sgam.Assertion{
				Key:       key(tenant, fmt.Sprintf("s%d", i%7), []string{"a", "b"}[i%3%2]),
				Value:     jsonString(fmt.Sprintf("v%d", i%5)),
				ValidFrom: many.at("2026-01-01T00:00:00Z").AddDate(0, 0, (i*37)%50),
				Source:    fmt.Sprintf("e%d", i%11),
			})
		}
		// Drop the assertions that would conflict, so the batch can commit.
		var ok []sgam.Assertion
		for _, a := range as {
			if _, err := one.store.Assert(one.ctx, a); err == nil {
				ok = append(ok, a)
			}
		}
		results, err := many.store.AssertMany(many.ctx, ok)
		require.NoError(t, err)
		require.Len(t, results, len(ok))
		for _, tenant := range []string{tenantA, tenantB} {
			for s := range 7 {
				for _, attr := range []string{"a", "b"} {
					k := key(tenant, fmt.Sprintf("s%d", s), attr)
					h1, err := one.store.History(one.ctx, k)
					require.NoError(t, err)
					h2, err := many.store.History(many.ctx, k)
					require.NoError(t, err)
					require.Equal(t, len(h1), len(h2), "%s", k)
					for i := range h1 {
						require.Equal(t, h1[i].ValidFrom, h2[i].ValidFrom)
						require.Equal(t, h1[i].ValidTo, h2[i].ValidTo)
						require.Equal(t, string(h1[i].Value), string(h2[i].Value))
						require.Equal(t, h1[i].RetractedAt == nil, h2[i].RetractedAt == nil, "%s row %d", k, i)
						require.ElementsMatch(t, h1[i].Sources, h2[i].Sources, "%s row %d", k, i)
					}
				}
			}
		}
		many.requireClean()
	})

	t.Run("AllOrNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		b.assert(k, "Oslo", "2026-01-01T00:00:00Z", "e1")
		_, err := b.store.AssertMany(b.ctx, []sgam.Assertion{
			{Key: key(tenantA, "kai", "city"), Value: jsonString("Rome"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e2"},
			{Key: k, Value: jsonString("Bergen"), ValidFrom: b.at("2026-02-01T00:00:00Z"), Source: "e2"},
			{Key: k, Value: jsonString("Paris"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e2"},
		})
		requireCode(t, err, sgam.Conflict, "assertions[2].valid_from")
		require.Nil(t, b.get(key(tenantA, "kai", "city"), "", ""), "nothing of the batch was written")
		require.Equal(t, "Oslo", b.value(k, "", ""))
		_, err = b.store.Episode(b.ctx, tenantA, "e2")
		requireCode(t, err, sgam.NotFound, "")
		b.requireClean()
	})

	t.Run("RepeatsWithinBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		k := key(tenantA, "mira", "city")
		at := b.at("2026-01-01T00:00:00Z")
		res, err := b.store.AssertMany(b.ctx, []sgam.Assertion{
			{Key: k, Value: jsonString("Oslo"), ValidFrom: at, Source: "e1"},
			{Key: k, Value: jsonString("Oslo"), ValidFrom: at, Source: "e2"},
			{Key: k, Value: jsonString("Bergen"), ValidFrom: at.AddDate(0, 1, 0), Source: "e3"},
		})
		require.NoError(t, err)
		require.False(t, res[0].NoChange)
		require.True(t, res[1].NoChange)
		require.Equal(t, []string{"e1", "e2"}, res[1].Fact.Sources)
		f := b.get(k, "2026-01-15T00:00:00Z", "")
		require.ElementsMatch(t, []string{"e1", "e2"}, f.Sources, "the closed copy keeps both sources")
		b.requireClean()
	})
}
