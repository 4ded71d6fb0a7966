package storetest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

const promoteSchema = `
attributes:
  export_format: {memory: preference, type: string, promote: {after: 3, within: 30d}, description: "the file format the user asks exports in"}
  city: {memory: profile, type: string, promote: {after: 2, within: 30d}}
`

// runPromote: under promote {after: 3, within: 30d} a value becomes a fact
// on its third consistent signal from distinct episodes, valid from the
// first, with all three as sources; two signals write nothing but visible
// signals; a different value in between starts over; signals outside the
// window do not count; the same episode twice is one signal.
func runPromote(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(promoteSchema), false)
	require.NoError(t, err)
	n := 0
	signal := func(tenant, subject, value, at string) sgam.WriteResult {
		t.Helper()
		n++
		id := "e" + itoa(n)
		b.episode(tenant, id, "asks for "+value, at)
		r, err := b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenant, subject, "export_format"), Value: jsonString(value), ValidFrom: b.at(at), Source: id})
		require.NoError(t, err)
		return r
	}
	pending := func(tenant, subject string) []sgam.Candidate {
		t.Helper()
		ps, err := b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenant, Subject: subject})
		require.NoError(t, err)
		return ps
	}

	r := signal(tenantA, "mira", "csv", "2026-01-01T00:00:00Z")
	require.Nil(t, r.Fact)
	require.Equal(t, sgam.ReasonRecurrence, r.Pending.Reason)
	require.Equal(t, 1, r.Pending.Signals)
	r = signal(tenantA, "mira", "csv", "2026-01-05T00:00:00Z")
	require.Equal(t, 2, r.Pending.Signals)
	require.Nil(t, b.get(key(tenantA, "mira", "export_format"), "", ""), "two signals write nothing")
	ps := pending(tenantA, "mira")
	require.Len(t, ps, 2, "the signals are visible")
	require.ElementsMatch(t, []int{1, 2}, []int{ps[0].Signals, ps[1].Signals}, "each with its count")
	r = signal(tenantA, "mira", "csv", "2026-01-10T00:00:00Z")
	require.NotNil(t, r.Fact, "the third makes the fact")
	require.Equal(t, `"csv"`, string(r.Fact.Value))
	require.Equal(t, b.at("2026-01-01T00:00:00Z"), r.Fact.ValidFrom, "valid from the first signal")
	require.ElementsMatch(t, []string{"e1", "e2", "e3"}, r.Fact.Sources)
	require.Empty(t, pending(tenantA, "mira"), "the signals became the fact")
	// A further signal of the same value is a repeat of the fact.
	r = signal(tenantA, "mira", "csv", "2026-01-15T00:00:00Z")
	require.NotNil(t, r.Fact)
	require.Empty(t, pending(tenantA, "mira"))

	// A different value in between starts over.
	signal(tenantA, "kai", "csv", "2026-01-01T00:00:00Z")
	r = signal(tenantA, "kai", "xlsx", "2026-01-02T00:00:00Z")
	require.Equal(t, 1, r.Pending.Signals)
	r = signal(tenantA, "kai", "csv", "2026-01-03T00:00:00Z")
	require.Equal(t, 1, r.Pending.Signals, "the earlier csv no longer counts")
	signal(tenantA, "kai", "csv", "2026-01-04T00:00:00Z")
	r = signal(tenantA, "kai", "csv", "2026-01-05T00:00:00Z")
	require.NotNil(t, r.Fact)
	require.Equal(t, b.at("2026-01-03T00:00:00Z"), r.Fact.ValidFrom)
	require.Len(t, r.Fact.Sources, 3)

	// Signals outside the window do not count.
	signal(tenantA, "lea", "csv", "2026-01-01T00:00:00Z")
	r = signal(tenantA, "lea", "csv", "2026-03-01T00:00:00Z")
	require.Equal(t, 1, r.Pending.Signals, "January is more than 30 days before March")
	r = signal(tenantA, "lea", "csv", "2026-03-05T00:00:00Z")
	require.Equal(t, 2, r.Pending.Signals)
	require.Nil(t, b.get(key(tenantA, "lea", "export_format"), "", ""))

	// The same episode twice is one signal.
	b.episode(tenantA, "o1", "asks for csv", "2026-01-01T00:00:00Z")
	for range 3 {
		r, err := b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenantA, "omar", "export_format"), Value: jsonString("csv"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "o1"})
		require.NoError(t, err)
		require.Nil(t, r.Fact)
	}
	require.Len(t, pending(tenantA, "omar"), 1)

	// A signal can be confirmed by a person: the fact, at once.
	c := pending(tenantA, "lea")[0]
	b.episode(tenantA, "ok", "yes, always csv", "2026-03-06T00:00:00Z")
	r, err = b.store.Confirm(b.ctx, tenantA, c.ID, "ok")
	require.NoError(t, err)
	require.NotNil(t, r.Fact)
	require.False(t, r.NoChange, "confirming wrote the fact")

	// A promotion from before a stored change of value closes the value
	// before it there, and the later value stays: no overlap.
	say := func(subject, value, at string) sgam.WriteResult { return sayAttr(b, subject, "city", value, at, &n) }
	say("zoe", "Paris", "2026-01-01T00:00:00Z")
	say("zoe", "Paris", "2026-01-01T00:00:00Z")
	say("zoe", "Rome", "2026-03-01T00:00:00Z")
	require.NotNil(t, say("zoe", "Rome", "2026-03-01T00:00:00Z").Fact)
	say("zoe", "Milan", "2026-02-25T00:00:00Z")
	r = say("zoe", "Milan", "2026-03-05T00:00:00Z")
	require.NotNil(t, r.Fact)
	require.Equal(t, b.at("2026-02-25T00:00:00Z"), r.Fact.ValidFrom)
	require.Equal(t, `"Paris"`, string(b.get(key(tenantA, "zoe", "city"), "2026-02-20T00:00:00Z", "").Value))
	require.Equal(t, `"Milan"`, string(b.get(key(tenantA, "zoe", "city"), "2026-02-27T00:00:00Z", "").Value))
	require.Equal(t, `"Rome"`, string(b.get(key(tenantA, "zoe", "city"), "2026-03-02T00:00:00Z", "").Value))

	// In one batch: the second signal promotes, the third is a repeat of
	// the fact, and no signal is left behind.
	for _, id := range []string{"b1", "b2", "b3"} {
		b.episode(tenantA, id, "in Oslo", "2026-01-01T00:00:00Z")
	}
	res, err := b.store.AssertMany(b.ctx, []sgam.Assertion{
		{Key: key(tenantA, "ida", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "b1"},
		{Key: key(tenantA, "ida", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-02T00:00:00Z"), Source: "b2"},
		{Key: key(tenantA, "ida", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-03T00:00:00Z"), Source: "b3"},
	})
	require.NoError(t, err)
	require.NotNil(t, res[1].Fact)
	require.NotNil(t, res[2].Fact)
	require.Empty(t, pending(tenantA, "ida"))

	// A retried signal settles onto its stored row, which a different
	// value earlier in the same batch had dropped: the row stays.
	b.episode(tenantA, "r1", "in Oslo", "2026-01-01T00:00:00Z")
	b.episode(tenantA, "r2", "in Bergen", "2026-01-02T00:00:00Z")
	first, err := b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenantA, "ola", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "r1"})
	require.NoError(t, err)
	res, err = b.store.AssertMany(b.ctx, []sgam.Assertion{
		{Key: key(tenantA, "ola", "city"), Value: jsonString("Bergen"), ValidFrom: b.at("2026-01-02T00:00:00Z"), Source: "r2"},
		{Key: key(tenantA, "ola", "city"), Value: jsonString("Oslo"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "r1"},
	})
	require.NoError(t, err)
	require.Equal(t, first.Pending.ID, res[1].Pending.ID)
	var ids []string
	for _, c := range pending(tenantA, "ola") {
		ids = append(ids, c.ID)
	}
	require.Contains(t, ids, first.Pending.ID, "the candidate a result names exists")

	// The other tenant has none of it.
	require.Empty(t, pending(tenantB, ""))
	require.Nil(t, b.get(key(tenantB, "mira", "export_format"), "", ""))
	b.requireClean()
}

func itoa(i int) string { return strconv.Itoa(i) }

// sayAttr captures an episode and asserts value of subject's attribute
// from it at an instant.
func sayAttr(b *bundle, subject, attribute, value, at string, n *int) sgam.WriteResult {
	b.t.Helper()
	*n++
	id := "s" + itoa(*n)
	b.episode(tenantA, id, "says "+value, at)
	r, err := b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenantA, subject, attribute), Value: jsonString(value), ValidFrom: b.at(at), Source: id})
	require.NoError(b.t, err)
	return r
}
