package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// Migration fixtures: version 1 has tier, price (whole units as a string)
// and full_name; version 2 renames tier to plan, retypes price to cents
// and splits full_name into first_name and last_name.
const schemaV1 = `
attributes:
  tier: {memory: account, type: {enum: [free, pro]}}
  price: {memory: account, type: string}
  full_name: {memory: profile, type: string}
  tags: {memory: profile, type: string, cardinality: many}
`

const schemaV2 = `
attributes:
  plan: {memory: account, type: {enum: [free, pro]}}
  price: {memory: account, type: string, description: price in cents}
  first_name: {memory: profile, type: string}
  last_name: {memory: profile, type: string}
  tags: {memory: profile, type: string, cardinality: many}
migrations:
  - name: tier-to-plan
    rename: {from: tier, to: plan}
    dual_read_until: 2099-01-01T00:00:00Z
  - name: price-to-cents
    retype: {attribute: price, transform: "string(int(value) * 100)"}
  - name: split-name
    split: {from: full_name, into: {first_name: "value.split(' ')[0]", last_name: "value.split(' ')[1]"}}
  - name: upper-tags
    retype: {attribute: tags, transform: "value.upperAscii()"}
`

// populateV1 writes the version-1 story for subjects in both tenants.
func populateV1(t testing.TB, b *bundle, subjects []string) {
	require.NoError(t, func() error { _, err := b.store.ApplyDefaultSchema(b.ctx, []byte(schemaV1), false); return err }())
	b.tick("2026-02-01T00:00:00Z")
	for _, tenant := range []string{tenantA, tenantB} {
		for _, id := range []string{"e1", "e2", "e3"} {
			_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: id, Kind: "message", Content: id + " of " + tenant, OccurredAt: b.at("2026-01-01T00:00:00Z")})
			require.NoError(t, err)
		}
		for _, s := range subjects {
			k := func(attr string) sgam.Key { return key(tenant, s, attr) }
			w := []sgam.Assertion{
				{Key: k("tier"), Value: jsonString("pro"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
				{Key: k("tier"), Value: jsonString("free"), ValidFrom: b.at("2026-01-10T00:00:00Z"), Source: "e2"},
				{Key: k("tier"), Value: jsonString("free"), ValidFrom: b.at("2026-01-10T00:00:00Z"), Source: "e3"}, // corroborates
				{Key: k("price"), Value: jsonString("12"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
				{Key: k("price"), Value: jsonString("15"), ValidFrom: b.at("2026-01-10T00:00:00Z"), Source: "e2"},
				{Key: k("full_name"), Value: jsonString("Ada Lovelace"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
				{Key: k("tags"), Value: jsonString("vip"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
			}
			if tenant == tenantB {
				w[5].Value = jsonString("Grace Hopper")
			}
			_, err := b.store.AssertMany(b.ctx, w)
			require.NoError(t, err)
			// A member added and removed whose value the retype keeps ("OK"
			// is upper case already): its removal is migrated once too.
			_, err = b.store.Add(b.ctx, sgam.Assertion{Key: k("tags"), Value: jsonString("OK"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"})
			require.NoError(t, err)
			_, err = b.store.Remove(b.ctx, sgam.Retraction{Key: k("tags"), Value: jsonString("OK"), At: b.at("2026-01-05T00:00:00Z"), Source: "e2"})
			require.NoError(t, err)
		}
	}
	b.tick("2026-03-01T00:00:00Z")
	_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(schemaV2), false)
	require.NoError(t, err)
	b.tick("2026-03-02T00:00:00Z")
}

// beliefs is a store's rows, every tenant, without their ids: what two
// stores that took the same writes must agree on.
func beliefs(t testing.TB, b *bundle) []string {
	var out []string
	require.NoError(t, b.store.Export(b.ctx, "", func(sgam.Episode) error { return nil }, func(f sgam.StoredFact) error {
		f.ID, f.Supersedes = 0, nil
		line, err := json.Marshal(f)
		out = append(out, string(line))
		return err
	}))
	slices.Sort(out)
	return out
}

func runMigrate(t *testing.T, newStore Factory) {
	const before = "2026-02-15T00:00:00Z" // a belief instant before the migration
	t.Run("RenameRetypeSplit", func(t *testing.T) {
		b := setup(t, newStore)
		populateV1(t, b, []string{"mira", "kai", "noor"})
		// Before the backfill, the old name still answers (dual read).
		require.Equal(t, "free", b.value(key(tenantA, "mira", "tier"), "", ""))

		var progress []sgam.MigrationProgress
		reports, err := b.store.Migrate(b.ctx, sgam.MigrateOptions{BatchKeys: 2, Progress: func(p sgam.MigrationProgress) { progress = append(progress, p) }})
		require.NoError(t, err)
		require.Len(t, reports, 4)
		for _, r := range reports {
			require.Equal(t, 6, r.Subjects, "%s: three subjects in each of two tenants", r.Name)
			require.Equal(t, 2, r.Since)
		}
		require.NotEmpty(t, progress)
		require.Equal(t, 6, progress[len(progress)-1].Done)
		require.Equal(t, 6, progress[len(progress)-1].Total)

		mira := func(attr string) sgam.Key { return key(tenantA, "mira", attr) }
		// Rename: the values, their windows and sources moved to plan.
		require.Equal(t, "free", b.value(mira("plan"), "", ""))
		require.Equal(t, "pro", b.value(mira("plan"), "2026-01-05T00:00:00Z", ""))
		plan := b.get(mira("plan"), "", "")
		require.Equal(t, []string{"e2", "e3"}, plan.Sources)
		require.Equal(t, 2, plan.SchemaVersion)
		require.Nil(t, b.get(mira("plan"), "", before), "before the migration nobody had a plan")
		require.Equal(t, "free", b.value(mira("tier"), "", ""), "dual read: the old name resolves to the new one")
		require.Equal(t, "pro", b.value(mira("tier"), "2026-01-05T00:00:00Z", before), "past belief: the old representation")
		// Retype in place.
		require.Equal(t, "1500", b.value(mira("price"), "", ""))
		require.Equal(t, "1200", b.value(mira("price"), "2026-01-05T00:00:00Z", ""))
		require.Equal(t, "15", b.value(mira("price"), "", before))
		require.Equal(t, []string{"e2"}, b.get(mira("price"), "", "").Sources)
		// Split.
		require.Equal(t, "Ada", b.value(mira("first_name"), "", ""))
		require.Equal(t, "Lovelace", b.value(mira("last_name"), "", ""))
		require.Nil(t, b.get(mira("full_name"), "", ""))
		require.Equal(t, "Ada Lovelace", b.value(mira("full_name"), "", before))
		require.Equal(t, "Hopper", b.value(key(tenantB, "mira", "last_name"), "", ""), "each tenant's own values")
		// A set member whose value changes moves to its new member.
		require.Equal(t, []string{"VIP"}, b.members(mira("tags"), "", ""))
		require.Equal(t, []string{"vip"}, b.members(mira("tags"), "", before))
		b.requireClean()

		// Idempotent: a second run finds nothing to do.
		dump := beliefs(t, b)
		reports, err = b.store.Migrate(b.ctx, sgam.MigrateOptions{})
		require.NoError(t, err)
		for _, r := range reports {
			require.Zero(t, r.Subjects, r.Name)
			require.Zero(t, r.Rows, r.Name)
		}
		require.Equal(t, dump, beliefs(t, b))
	})

	t.Run("RenameOfAnAlias", func(t *testing.T) {
		// The new attribute lists the old name as an alias too (as a
		// schema that keeps "tier" resolving for good does): during the
		// window a read of the old name still sees the old rows, so a
		// belief from before the migration answers. Found by sgam eval's
		// migration scenario: the alias used to win and read plan only.
		b := setup(t, newStore)
		populateV1(t, b, []string{"mira"})
		_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(strings.Replace(schemaV2,
			"plan: {memory: account, type: {enum: [free, pro]}}", "plan: {memory: account, type: {enum: [free, pro]}, aliases: [tier]}", 1)), false)
		require.NoError(t, err)
		b.tick("2026-03-03T00:00:00Z")
		_, err = b.store.Migrate(b.ctx, sgam.MigrateOptions{})
		require.NoError(t, err)
		mira := func(attr string) sgam.Key { return key(tenantA, "mira", attr) }
		require.Equal(t, "free", b.value(mira("tier"), "", ""))
		require.Equal(t, "free", b.value(mira("tier"), "", before), "past belief: the old representation")
		require.Equal(t, "pro", b.value(mira("tier"), "2026-01-05T00:00:00Z", before))
		require.Nil(t, b.get(mira("plan"), "", before), "before the migration nobody had a plan")
		b.requireClean()
	})

	t.Run("ResumeAfterInterruption", func(t *testing.T) {
		subjects := []string{"s1", "s2", "s3", "s4", "s5"}
		whole := setup(t, newStore)
		populateV1(t, whole, subjects)
		_, err := whole.store.Migrate(whole.ctx, sgam.MigrateOptions{BatchKeys: 3})
		require.NoError(t, err)

		cut := setup(t, newStore)
		populateV1(t, cut, subjects)
		ctx, cancel := context.WithCancel(cut.ctx)
		batches := 0
		_, err = cut.store.Migrate(ctx, sgam.MigrateOptions{BatchKeys: 3, Progress: func(sgam.MigrationProgress) {
			if batches++; batches == 3 {
				cancel() // the process dies between two transactions
			}
		}})
		require.Error(t, err)
		require.True(t, errors.Is(err, context.Canceled) || sgam.ErrorCode(err) == sgam.Unavailable, "%v", err)
		require.NotEqual(t, beliefs(t, whole), beliefs(t, cut), "the run was cut short")
		_, err = cut.store.Migrate(cut.ctx, sgam.MigrateOptions{BatchKeys: 3})
		require.NoError(t, err)
		require.Equal(t, beliefs(t, whole), beliefs(t, cut), "resumed, it ends where one uninterrupted run ends")
		cut.requireClean()
	})
}
