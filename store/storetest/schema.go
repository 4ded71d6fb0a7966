package storetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// testSchema declares one attribute for each behaviour under test.
const testSchema = `
retention:
  standard: 2y
attributes:
  passport_deadline: {memory: task, type: date, aliases: [passport_due]}
  weight: {memory: profile, type: number}
  plan: {memory: account, type: {enum: [free, pro, enterprise]}, conflict: latest_recorded}
  allergies: {memory: profile, type: string, cardinality: many}
  account: {memory: profile, type: {ref: account}}
  policy: {memory: account, type: {ref: policy}, cardinality: many}
  next: {memory: profile, type: {ref: node}}
  email: {memory: profile, type: string, conflict: prefer_source}
  budget: {memory: task, type: integer, conflict: review}
  diagnosis: {memory: compliance, type: string, sensitive: true}
`

// schemaBundle is a store with testSchema applied and episodes of every
// source kind in both tenants.
func schemaBundle(t *testing.T, newStore Factory) *bundle {
	b := setup(t, newStore)
	v, err := b.store.ApplyDefaultSchema(b.ctx, []byte(testSchema), false)
	require.NoError(t, err)
	require.Equal(t, 1, v.Version)
	for _, tenant := range []string{tenantA, tenantB} {
		for _, kind := range []string{"message", "tool", "user_confirmed", "inferred"} {
			_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: "e_" + kind, Kind: kind,
				Content: kind + " says so", OccurredAt: b.at("2026-01-01T00:00:00Z")})
			require.NoError(t, err)
		}
	}
	return b
}

func (b *bundle) assertRaw(k sgam.Key, value, validFrom, source string) (sgam.WriteResult, error) {
	return b.store.Assert(b.ctx, sgam.Assertion{Key: k, Value: json.RawMessage(value), ValidFrom: b.at(validFrom), Source: source})
}

func (b *bundle) members(k sgam.Key, asOf, knownAt string) []string {
	b.t.Helper()
	var at sgam.At
	if asOf != "" {
		at.AsOf = b.at(asOf)
	}
	if knownAt != "" {
		at.KnownAt = b.at(knownAt)
	}
	fs, err := b.store.Members(b.ctx, k, at)
	require.NoError(b.t, err)
	out := []string{}
	for _, f := range fs {
		var s string
		require.NoError(b.t, json.Unmarshal(f.Value, &s))
		require.Equal(b.t, string(f.Value), string(f.Member))
		out = append(out, s)
	}
	return out
}

func runSchema(t *testing.T, newStore Factory) {
	t.Run("ApplyVersions", func(t *testing.T) {
		b := setup(t, newStore)
		v, err := b.store.DefaultSchema(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 0, v.Version)
		_, err = b.store.ApplyDefaultSchema(b.ctx, []byte("attributes: {x: {memory: task, type: strin}}"), false)
		requireCode(t, err, sgam.Invalid, "")
		dry, err := b.store.ApplyDefaultSchema(b.ctx, []byte(testSchema), true)
		require.NoError(t, err)
		require.Equal(t, 1, dry.Version)
		require.NotEmpty(t, dry.Diff)
		v, err = b.store.DefaultSchema(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 0, v.Version, "a dry run stores nothing")
		v1, err := b.store.ApplyDefaultSchema(b.ctx, []byte(testSchema), false)
		require.NoError(t, err)
		require.Equal(t, 1, v1.Version)
		same, err := b.store.ApplyDefaultSchema(b.ctx, []byte(testSchema), false)
		require.NoError(t, err)
		require.Equal(t, 1, same.Version, "an unchanged schema is not a new version")
		require.Empty(t, same.Diff)
		v2, err := b.store.ApplyDefaultSchema(b.ctx, []byte(testSchema+"  extra: {memory: task, type: string}\n"), false)
		require.NoError(t, err)
		require.Equal(t, 2, v2.Version)
		require.Len(t, v2.Diff, 1)
		got, err := b.store.DefaultSchema(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 2, got.Version)
		require.Equal(t, v2.Hash, got.Hash)
	})

	t.Run("Validation", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		b.tick("2026-07-01T00:00:00Z")
		k := key(tenantA, "mira", "passport_deadline")
		_, err := b.assertRaw(key(tenantA, "mira", "shoe_size"), `42`, "2026-06-01T00:00:00Z", "e_message")
		requireCode(t, err, sgam.Invalid, "attribute")
		_, err = b.assertRaw(k, `"June 30"`, "2026-06-01T00:00:00Z", "e_message")
		requireCode(t, err, sgam.Invalid, "value")
		var se *sgam.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, "", se.Pointer)
		require.NotEmpty(t, se.Rule)

		// A batch with one bad assertion writes nothing.
		_, err = b.store.AssertMany(b.ctx, []sgam.Assertion{
			{Key: k, Value: json.RawMessage(`"2026-06-30"`), ValidFrom: b.at("2026-06-01T00:00:00Z"), Source: "e_message"},
			{Key: key(tenantA, "mira", "weight"), Value: json.RawMessage(`"heavy"`), ValidFrom: b.at("2026-06-01T00:00:00Z"), Source: "e_message"},
		})
		requireCode(t, err, sgam.Invalid, "assertions[1].value")
		require.Nil(t, b.get(k, "", ""))

		// Canonical values, the schema version on the row, aliases.
		r, err := b.assertRaw(key(tenantA, "mira", "weight"), `61.50`, "2026-06-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		require.Equal(t, "61.5", string(r.Fact.Value))
		require.Equal(t, 1, r.Fact.SchemaVersion)
		again, err := b.assertRaw(key(tenantA, "mira", "weight"), `6.15e1`, "2026-06-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		require.True(t, again.NoChange, "equal numbers are equal values")
		r, err = b.assertRaw(key(tenantA, "mira", "passport_due"), `"2026-06-30"`, "2026-06-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		require.Equal(t, "passport_deadline", r.Fact.Attribute, "an alias writes the declared attribute")
		require.Equal(t, "2026-06-30", b.value(key(tenantA, "mira", "passport_due"), "", ""), "an alias reads it too")
		require.Nil(t, b.get(key(tenantB, "mira", "passport_deadline"), "", ""))
		_, err = b.store.Add(b.ctx, sgam.Assertion{Key: k, Value: json.RawMessage(`"2026-07-01"`), ValidFrom: b.at("2026-06-02T00:00:00Z"), Source: "e_message"})
		requireCode(t, err, sgam.Invalid, "attribute")
		b.requireClean()
	})

	t.Run("Sets", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		k := key(tenantA, "mira", "allergies")
		add := func(tenant, v, at string) sgam.WriteResult {
			r, err := b.store.Add(b.ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "allergies"},
				Value: jsonString(v), ValidFrom: b.at(at), Source: "e_message"})
			require.NoError(t, err)
			return r
		}
		b.tick("2026-03-01T00:00:00Z")
		add(tenantA, "peanuts", "2026-01-01T00:00:00Z")
		add(tenantA, "shellfish", "2026-02-01T00:00:00Z")
		add(tenantB, "pollen", "2026-01-01T00:00:00Z")
		rep := add(tenantA, "peanuts", "2026-01-01T00:00:00Z")
		require.True(t, rep.NoChange)
		require.Equal(t, []string{"peanuts", "shellfish"}, b.members(k, "", ""))
		require.Equal(t, []string{"peanuts"}, b.members(k, "2026-01-15T00:00:00Z", ""))
		b.tick("2026-04-01T00:00:00Z")
		r, err := b.store.Remove(b.ctx, sgam.Retraction{Key: k, Value: jsonString("peanuts"), At: b.at("2026-03-15T00:00:00Z"), Source: "e_tool"})
		require.NoError(t, err)
		require.True(t, r.Fact.Tombstone)
		require.Equal(t, `"peanuts"`, string(r.Fact.Member))
		require.Equal(t, []string{"shellfish"}, b.members(k, "", ""))
		require.Equal(t, []string{"peanuts", "shellfish"}, b.members(k, "2026-03-10T00:00:00Z", ""), "point in time")
		require.Equal(t, []string{"peanuts", "shellfish"}, b.members(k, "", "2026-03-20T00:00:00Z"), "past belief")
		require.Equal(t, []string{"pollen"}, b.members(key(tenantB, "mira", "allergies"), "", ""))
		require.Empty(t, b.members(key(tenantB, "mira", "allergies"), "", "2026-01-01T00:00:00Z"))

		_, err = b.store.Get(b.ctx, k, sgam.At{})
		requireCode(t, err, sgam.Invalid, "attribute")
		_, err = b.store.Remove(b.ctx, sgam.Retraction{Key: k, At: b.at("2026-03-15T00:00:00Z"), Source: "e_tool"})
		requireCode(t, err, sgam.Invalid, "value")
		_, err = b.store.Retract(b.ctx, sgam.Retraction{Key: key(tenantA, "mira", "weight"), Value: jsonString("x"), At: b.at("2026-03-15T00:00:00Z"), Source: "e_tool"})
		requireCode(t, err, sgam.Invalid, "value")
		h, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, h, 4, "two adds, the removed member's closed copy and its removal")
		state, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{})
		require.NoError(t, err)
		require.Len(t, state, 1)
		b.requireClean()
	})

	t.Run("Relations", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		b.tick("2026-03-01T00:00:00Z")
		_, err := b.assertRaw(key(tenantA, "mira", "account"), `"acct-42"`, "2026-01-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		for _, p := range []struct{ id, at string }{{"pol-1", "2026-01-01T00:00:00Z"}, {"pol-2", "2026-02-01T00:00:00Z"}} {
			_, err := b.store.Add(b.ctx, sgam.Assertion{Key: key(tenantA, "acct-42", "policy"), Value: jsonString(p.id), ValidFrom: b.at(p.at), Source: "e_tool"})
			require.NoError(t, err)
		}
		_, err = b.assertRaw(key(tenantB, "mira", "account"), `"acct-99"`, "2026-01-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		_, err = b.assertRaw(key(tenantA, "mira", "account"), `" padded"`, "2026-01-02T00:00:00Z", "e_tool")
		requireCode(t, err, sgam.Invalid, "value")

		ends := func(tenant string, path []string, asOf string) []string {
			t.Helper()
			var at sgam.At
			if asOf != "" {
				at.AsOf = b.at(asOf)
			}
			hops, err := sgam.Traverse(b.ctx, b.store, b.clock, tenant, "mira", path, at)
			require.NoError(t, err)
			out := []string{}
			for _, h := range hops {
				if h.Depth == len(path) {
					out = append(out, h.To)
				}
			}
			return out
		}
		require.Equal(t, []string{"pol-1", "pol-2"}, ends(tenantA, []string{"account", "policy"}, ""))
		require.Equal(t, []string{"pol-1"}, ends(tenantA, []string{"account", "policy"}, "2026-01-15T00:00:00Z"))
		require.Empty(t, ends(tenantB, []string{"account", "policy"}, ""), "the other tenant's acct-99 has no policies")
		require.Empty(t, ends(tenantA, []string{"account", "policy"}, "2025-12-01T00:00:00Z"))

		// A cycle ends: mira -> a -> mira.
		_, err = b.assertRaw(key(tenantA, "mira", "next"), `"a"`, "2026-01-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		_, err = b.assertRaw(key(tenantA, "a", "next"), `"mira"`, "2026-01-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		hops, err := sgam.Traverse(b.ctx, b.store, b.clock, tenantA, "mira", []string{"next", "next", "next", "next"}, sgam.At{})
		require.NoError(t, err)
		require.Len(t, hops, 2)
		require.True(t, hops[1].Cycle)
		_, err = sgam.Traverse(b.ctx, b.store, b.clock, tenantA, "mira", make([]string, sgam.MaxHops+1), sgam.At{})
		requireCode(t, err, sgam.Invalid, "path")
		_, err = sgam.Traverse(b.ctx, b.store, b.clock, tenantA, "mira", []string{"email"}, sgam.At{})
		requireCode(t, err, sgam.Invalid, "path[0]")
	})

	t.Run("LatestRecorded", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		k := key(tenantA, "mira", "plan")
		first, err := b.assertRaw(k, `"pro"`, "2026-01-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		_, err = b.assertRaw(key(tenantB, "mira", "plan"), `"free"`, "2026-01-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		b.tick("2026-02-01T00:00:00Z")
		second, err := b.assertRaw(k, `"enterprise"`, "2026-01-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		require.Equal(t, first.Fact.ID, *second.Fact.Supersedes)
		require.Equal(t, "enterprise", b.value(k, "", ""))
		require.Equal(t, "pro", b.value(k, "", "2026-01-15T00:00:00Z"), "the old row is retracted, not lost")
		require.Equal(t, "free", b.value(key(tenantB, "mira", "plan"), "", ""))
		h, err := b.store.History(b.ctx, k)
		require.NoError(t, err)
		require.Len(t, h, 2)
		b.requireClean()
	})

	t.Run("PreferSource", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		k := key(tenantA, "mira", "email")
		vf := "2026-01-01T00:00:00Z"
		_, err := b.assertRaw(k, `"a@x.org"`, vf, "e_message")
		require.NoError(t, err)
		up, err := b.assertRaw(k, `"b@x.org"`, vf, "e_tool")
		require.NoError(t, err, "a tool outranks a message")
		require.NotNil(t, up.Fact.Supersedes)
		kept, err := b.assertRaw(k, `"c@x.org"`, vf, "e_inferred")
		require.NoError(t, err, "an inference ranks below the tool: the tool's value is kept")
		require.True(t, kept.Kept)
		require.Equal(t, `"b@x.org"`, string(kept.Fact.Value))
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e_tool2", Kind: "tool", Content: "another tool"})
		require.NoError(t, err)
		_, err = b.assertRaw(k, `"d@x.org"`, vf, "e_tool2")
		requireCode(t, err, sgam.Conflict, "valid_from")
		require.Equal(t, "b@x.org", b.value(k, "", ""))
		// The other tenant's episodes of the same ids carry their own kinds.
		_, err = b.assertRaw(key(tenantB, "mira", "email"), `"z@y.org"`, vf, "e_inferred")
		require.NoError(t, err)
		require.Equal(t, "z@y.org", b.value(key(tenantB, "mira", "email"), "", ""))
		b.requireClean()
	})

	t.Run("ReviewAndPending", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		k := key(tenantA, "mira", "budget")
		vf := "2026-01-01T00:00:00Z"
		first, err := b.assertRaw(k, `100`, vf, "e_message")
		require.NoError(t, err)
		held, err := b.assertRaw(k, `200`, vf, "e_tool")
		require.NoError(t, err)
		require.NotNil(t, held.Pending)
		require.Nil(t, held.Fact, "a held write has no fact")
		require.Equal(t, sgam.ReasonReview, held.Pending.Reason)
		require.Equal(t, first.Fact.ID, *held.Pending.ConflictsWith)
		other, err := b.assertRaw(k, `300`, vf, "e_inferred")
		require.NoError(t, err)
		retry, err := b.assertRaw(k, `300`, vf, "e_inferred")
		require.NoError(t, err)
		require.Equal(t, other.Pending.ID, retry.Pending.ID, "a retried write holds nothing new")
		require.Equal(t, "100", string(b.get(k, "", "").Value), "a candidate is not a fact")

		list, err := b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Len(t, list, 2)
		list, err = b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantB})
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = b.store.Confirm(b.ctx, tenantB, held.Pending.ID, "e_user_confirmed")
		requireCode(t, err, sgam.NotFound, "pending_id")
		require.Error(t, b.store.Dismiss(b.ctx, tenantB, held.Pending.ID))

		b.tick("2026-02-01T00:00:00Z")
		conf, err := b.store.Confirm(b.ctx, tenantA, held.Pending.ID, "e_user_confirmed")
		require.NoError(t, err)
		require.Equal(t, "200", string(conf.Fact.Value))
		require.Equal(t, []string{"e_tool", "e_user_confirmed"}, conf.Fact.Sources)
		require.False(t, conf.NoChange, "confirming wrote the fact")
		require.Equal(t, "200", string(b.get(k, "", "").Value))
		require.Equal(t, "100", string(b.get(k, "", "2026-01-15T00:00:00Z").Value))
		_, err = b.store.Confirm(b.ctx, tenantA, held.Pending.ID, "e_user_confirmed")
		requireCode(t, err, sgam.NotFound, "pending_id")
		require.NoError(t, b.store.Dismiss(b.ctx, tenantA, other.Pending.ID))
		requireCode(t, b.store.Dismiss(b.ctx, tenantA, other.Pending.ID), sgam.NotFound, "pending_id")
		list, err = b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Empty(t, list)
		b.requireClean()
	})

	t.Run("Sensitive", func(t *testing.T) {
		b := schemaBundle(t, newStore)
		k := key(tenantA, "mira", "diagnosis")
		held, err := b.assertRaw(k, `"asthma"`, "2026-01-01T00:00:00Z", "e_message")
		require.NoError(t, err)
		require.NotNil(t, held.Pending)
		require.Equal(t, sgam.ReasonSensitive, held.Pending.Reason)
		require.Nil(t, b.get(k, "", ""))
		direct, err := b.assertRaw(key(tenantB, "mira", "diagnosis"), `"flu"`, "2026-01-01T00:00:00Z", "e_user_confirmed")
		require.NoError(t, err)
		require.Nil(t, direct.Pending, "a user_confirmed source writes the fact")
		require.Nil(t, b.get(k, "", ""), "tenant B's fact is not tenant A's")
		list, err := b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantA, Subject: "mira"})
		require.NoError(t, err)
		require.Len(t, list, 1)
		conf, err := b.store.Confirm(b.ctx, tenantA, held.Pending.ID, "e_user_confirmed")
		require.NoError(t, err)
		require.Equal(t, `"asthma"`, string(conf.Fact.Value))
		require.False(t, conf.NoChange, "confirming wrote the fact")
		require.Equal(t, "asthma", b.value(k, "", ""))
		b.requireClean()
	})

	t.Run("Import", func(t *testing.T) {
		src := schemaBundle(t, newStore)
		src.tick("2026-03-01T00:00:00Z")
		for _, v := range []string{"peanuts", "shellfish"} {
			_, err := src.store.Add(src.ctx, sgam.Assertion{Key: key(tenantA, "mira", "allergies"), Value: jsonString(v), ValidFrom: src.at("2026-01-01T00:00:00Z"), Source: "e_message"})
			require.NoError(t, err)
		}
		_, err := src.store.Remove(src.ctx, sgam.Retraction{Key: key(tenantA, "mira", "allergies"), Value: jsonString("peanuts"), At: src.at("2026-02-01T00:00:00Z"), Source: "e_tool"})
		require.NoError(t, err)
		_, err = src.assertRaw(key(tenantB, "kai", "weight"), `70.0`, "2026-01-01T00:00:00Z", "e_tool")
		require.NoError(t, err)
		dump := Export(t, src.store, "")

		// Into a store with the same schema: identical, sets and all.
		dst := setup(t, newStore)
		_, err = dst.store.ApplyDefaultSchema(dst.ctx, []byte(testSchema), false)
		require.NoError(t, err)
		_, err = dst.store.Import(dst.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		require.NoError(t, err)
		RequireSameDump(t, dump, Export(t, dst.store, ""))
		dst.requireClean()

		// Believed rows must fit the schema in force; nothing is written otherwise.
		strict := setup(t, newStore)
		_, err = strict.store.ApplyDefaultSchema(strict.ctx, []byte("attributes:\n  weight: {memory: profile, type: number}\n"), false)
		require.NoError(t, err)
		_, err = strict.store.Import(strict.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		requireCode(t, err, sgam.Invalid, "")
		require.Contains(t, sgam.ErrorField(err), ".attribute")
		require.Empty(t, Export(t, strict.store, "").Facts)
		bad := dump.Facts[len(dump.Facts)-1]
		require.Equal(t, "weight", bad.Attribute)
		bad.Value = json.RawMessage(`70.00`)
		_, err = strict.store.Import(strict.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: []sgam.StoredFact{bad}})
		requireCode(t, err, sgam.Invalid, "facts[0].value")
	})

	// Schema versions travel with an export: same numbers, hashes and
	// applied_at, each owner's own, and importing them again is a no-op.
	t.Run("ImportSchemaVersions", func(t *testing.T) {
		src := schemaBundle(t, newStore)
		src.tick("2026-03-01T00:00:00Z")
		own, err := src.store.ApplySchema(src.ctx, tenantB, []byte("attributes:\n  weight: {memory: profile, type: number}\n"), false)
		require.NoError(t, err)
		all, err := src.store.ExportSchemas(src.ctx, "")
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.True(t, all[0].StoreDefault, "the default comes first")
		require.Equal(t, tenantB, all[1].Tenant)
		onlyA, err := src.store.ExportSchemas(src.ctx, tenantA)
		require.NoError(t, err)
		require.Len(t, onlyA, 1, "tenant A has no schema of its own: the default serves it")

		dst := setup(t, newStore)
		for _, v := range all {
			present, err := dst.store.ImportSchema(dst.ctx, v)
			require.NoError(t, err)
			require.False(t, present)
		}
		for _, v := range all {
			present, err := dst.store.ImportSchema(dst.ctx, v)
			require.NoError(t, err)
			require.True(t, present, "a second import writes nothing")
		}
		got, err := dst.store.ExportSchemas(dst.ctx, "")
		require.NoError(t, err)
		require.Len(t, got, 2)
		for i := range all {
			require.Equal(t, all[i].Tenant, got[i].Tenant)
			require.Equal(t, all[i].StoreDefault, got[i].StoreDefault)
			require.Equal(t, all[i].Version, got[i].Version)
			require.Equal(t, all[i].Hash, got[i].Hash)
			require.True(t, all[i].AppliedAt.Equal(got[i].AppliedAt))
		}
		b, err := dst.store.Schema(dst.ctx, tenantB)
		require.NoError(t, err)
		require.Equal(t, own.Version, b.Version)
		require.Equal(t, own.Hash, b.Hash)
		_, err = dst.assertRaw(key(tenantB, "kai", "weight"), `"heavy"`, "2026-01-01T00:00:00Z", "e_tool")
		require.Error(t, err, "tenant B's imported schema governs")
		a, err := dst.store.Schema(dst.ctx, tenantA)
		require.NoError(t, err)
		require.Equal(t, all[0].Hash, a.Hash, "tenant A is served by the imported default, not by B's schema")

		// Another schema under a stored number, a hash that is not the
		// body's, and a version below the latest that was never stored.
		clash := all[1]
		clash.Tenant, clash.StoreDefault, clash.Version = "", true, all[0].Version
		_, err = dst.store.ImportSchema(dst.ctx, clash)
		requireCode(t, err, sgam.Conflict, "version")
		forged := all[1]
		forged.Version, forged.Hash = 9, all[0].Hash
		_, err = dst.store.ImportSchema(dst.ctx, forged)
		requireCode(t, err, sgam.Invalid, "hash")
		gap := all[0]
		gap.Version = 7
		_, err = dst.store.ImportSchema(dst.ctx, gap)
		require.NoError(t, err)
		gap.Version = 5
		_, err = dst.store.ImportSchema(dst.ctx, gap)
		requireCode(t, err, sgam.Conflict, "version")
		dst.requireClean()
	})
}
