package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// runAliases: every tenant has the built-in set attribute alias, with a
// schema or without one; its members are names in their stored form, and
// SubjectsNamed finds subjects by them at a read's instants, within the
// tenant. Forgetting a subject takes its names.
func runAliases(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	b.tick("2026-03-01T00:00:00Z")
	name := func(tenant, subject, alias, from string) sgam.WriteResult {
		t.Helper()
		r, err := b.store.Add(b.ctx, sgam.Assertion{Key: key(tenant, subject, sgam.AliasAttribute), Value: jsonString(alias),
			ValidFrom: b.at(from), Source: "e-" + subject})
		require.NoError(t, err)
		return r
	}
	named := func(tenant string, names []string, asOf, knownAt string) []sgam.NamedSubject {
		t.Helper()
		var at sgam.At
		if asOf != "" {
			at.AsOf = b.at(asOf)
		}
		if knownAt != "" {
			at.KnownAt = b.at(knownAt)
		}
		out, err := b.store.SubjectsNamed(b.ctx, tenant, names, at)
		require.NoError(t, err)
		return out
	}

	r := name(tenantA, "mira", "Mira  CHEN", "2026-01-01T00:00:00Z")
	require.NotNil(t, r.Fact)
	require.Equal(t, `"mira chen"`, string(r.Fact.Value), "stored in the form of words.Name")
	name(tenantA, "lind", "Dr. Lind", "2026-01-01T00:00:00Z")
	name(tenantA, "olsen", "the CFO", "2025-01-01T00:00:00Z")
	_, err := b.store.Remove(b.ctx, sgam.Retraction{Key: key(tenantA, "olsen", sgam.AliasAttribute), Value: jsonString("The CFO"),
		At: b.at("2026-01-01T00:00:00Z"), Source: "e-olsen"})
	require.NoError(t, err)
	name(tenantA, "ng", "the cfo", "2026-01-01T00:00:00Z")
	name(tenantB, "zed", "Mira Chen", "2026-01-01T00:00:00Z")

	require.Equal(t, []sgam.NamedSubject{{Name: "mira chen", Subject: "mira"}, {Name: "dr lind", Subject: "lind"}},
		named(tenantA, []string{"mira chen", "nobody", "dr lind", "Mira Chen", "mira chen"}, "", ""),
		"in the order asked; a name not in the stored form names nothing")
	require.Equal(t, []sgam.NamedSubject{{Name: "mira chen", Subject: "zed"}}, named(tenantB, []string{"mira chen", "dr lind"}, "", ""),
		"each tenant its own names")
	require.Equal(t, []sgam.NamedSubject{{Name: "the cfo", Subject: "ng"}}, named(tenantA, []string{"the cfo"}, "", ""),
		"a removed name no longer names its subject now")
	require.Equal(t, []sgam.NamedSubject{{Name: "the cfo", Subject: "ng"}, {Name: "the cfo", Subject: "olsen"}},
		named(tenantA, []string{"the cfo"}, "2025-06-01T00:00:00Z", ""),
		"then, the name held for olsen; ng's holds still, so it counts for the past too")
	require.Equal(t, []sgam.NamedSubject{{Name: "mira chen", Subject: "mira"}}, named(tenantA, []string{"mira chen"}, "2025-06-01T00:00:00Z", ""),
		"a name given later finds the subject of a question about the past")
	require.Empty(t, named(tenantA, []string{"mira chen", "dr lind"}, "", "2026-02-01T00:00:00Z"),
		"not believed before it was recorded")
	require.Empty(t, named(tenantA, nil, "", ""))

	// It is a set: Get refuses it, Members reads it, a member is removed
	// by its name however it is spelled, and Assert adds like Add.
	_, err = b.store.Get(b.ctx, key(tenantA, "mira", sgam.AliasAttribute), sgam.At{})
	require.True(t, errors.Is(err, sgam.ErrSet), "error: %v", err)
	_, err = b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenantA, "mira", sgam.AliasAttribute), Value: jsonString("Mimi"),
		ValidFrom: b.at("2026-02-01T00:00:00Z"), Source: "e-mira"})
	require.NoError(t, err)
	members, err := b.store.Members(b.ctx, key(tenantA, "mira", sgam.AliasAttribute), sgam.At{})
	require.NoError(t, err)
	require.Len(t, members, 2)
	require.Equal(t, `"mimi"`, string(members[0].Value))
	require.Equal(t, `"mira chen"`, string(members[1].Value))

	for _, bad := range []string{`42`, `"..."`, `"one two three four five six seven"`} {
		_, err := b.store.Add(b.ctx, sgam.Assertion{Key: key(tenantA, "mira", sgam.AliasAttribute), Value: []byte(bad),
			ValidFrom: b.at("2026-02-01T00:00:00Z"), Source: "e-mira"})
		requireCode(t, err, sgam.Invalid, "value")
	}
	_, err = b.store.Retract(b.ctx, sgam.Retraction{Key: key(tenantA, "mira", sgam.AliasAttribute), At: b.at("2026-02-02T00:00:00Z"), Source: "e-mira"})
	requireCode(t, err, sgam.Invalid, "value")

	// A schema that does not declare alias keeps it; one that declares it
	// gives it its own settings (here: a name needs confirmation).
	_, err = b.store.ApplySchema(b.ctx, tenantA, []byte("attributes:\n  city: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	name(tenantA, "lind", "Greta Lind", "2026-01-01T00:00:00Z")
	require.Equal(t, []sgam.NamedSubject{{Name: "greta lind", Subject: "lind"}}, named(tenantA, []string{"greta lind"}, "", ""))
	_, err = b.store.ApplySchema(b.ctx, tenantB, []byte("attributes:\n  alias: {memory: profile, type: string, cardinality: many, sensitive: true}\n"), false)
	require.NoError(t, err)
	held := name(tenantB, "zed", "Zed Z", "2026-01-01T00:00:00Z")
	require.Nil(t, held.Fact)
	require.NotNil(t, held.Pending)
	require.Empty(t, named(tenantB, []string{"zed z"}, "", ""), "a pending name names nothing")

	// Forgetting a subject takes its names.
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "mira"})
	require.NoError(t, err)
	require.Empty(t, named(tenantA, []string{"mira chen", "mimi"}, "", ""))
	require.Equal(t, []sgam.NamedSubject{{Name: "mira chen", Subject: "zed"}}, named(tenantB, []string{"mira chen"}, "", ""))

	_, err = b.store.SubjectsNamed(b.ctx, tenantA, make([]string, sgam.MaxNamesLookup+1), sgam.At{})
	requireCode(t, err, sgam.Invalid, "names")
	b.requireClean()
}
