package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// Per-tenant schema fixtures: the store default declares full_name; acme
// and beta each apply a schema of their own, with retention classes and
// migrations the other does not have.
const (
	defaultSchema = `
attributes:
  full_name: {memory: profile, type: string}
`
	acmeSchema = `
attributes:
  full_name: {memory: profile, type: string}
  nickname: {memory: profile, type: string}
`
	acmeSchemaV2 = `
attributes:
  full_name: {memory: profile, type: string}
  handle: {memory: profile, type: string}
migrations:
  - name: nickname-to-handle
    rename: {from: nickname, to: handle}
`
	betaSchema = `
retention:
  short: 1h
episode_retention: short
attributes:
  email: {memory: profile, type: string}
  score: {memory: task, type: string}
`
	betaSchemaV2 = `
retention:
  short: 1h
episode_retention: short
attributes:
  email: {memory: profile, type: string}
  score: {memory: task, type: integer}
migrations:
  - name: score-to-integer
    retype: {attribute: score, transform: "int(value)"}
`
)

const tenantC = "initech" // serves on the store default

// runTenantSchemas: each tenant writes, reads, expires and migrates under
// its own schema, and a tenant without one under the store default; no
// tenant's schema, retention class or migration touches another's rows.
func runTenantSchemas(t *testing.T, newStore Factory) {
	const beta = tenantB
	b := setup(t, newStore)
	apply := func(tenant, body string) sgam.SchemaVersion {
		t.Helper()
		var v sgam.SchemaVersion
		var err error
		if tenant == "" {
			v, err = b.store.ApplyDefaultSchema(b.ctx, []byte(body), false)
		} else {
			v, err = b.store.ApplySchema(b.ctx, tenant, []byte(body), false)
		}
		require.NoError(t, err)
		return v
	}
	write := func(tenant, subject, attr, value string) error {
		_, err := b.store.Assert(b.ctx, sgam.Assertion{Key: key(tenant, subject, attr), Value: []byte(value),
			ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"})
		return err
	}

	// Versions: a tenant's first schema of its own follows the default
	// version that served it; the default's history goes on by itself.
	def := apply("", defaultSchema)
	require.Equal(t, 1, def.Version)
	require.True(t, def.StoreDefault)
	acme := apply(tenantA, acmeSchema)
	require.Equal(t, sgam.SchemaVersion{Tenant: tenantA, Version: 2}, sgam.SchemaVersion{Tenant: acme.Tenant, Version: acme.Version})
	require.False(t, acme.StoreDefault)
	require.NotEmpty(t, acme.Diff, "the diff is from the default that served acme")
	require.Equal(t, 2, apply(beta, betaSchema).Version)
	for tenant, want := range map[string]sgam.SchemaVersion{tenantA: {Tenant: tenantA, Version: 2}, beta: {Tenant: beta, Version: 2},
		tenantC: {StoreDefault: true, Version: 1}} {
		got, err := b.store.Schema(b.ctx, tenant)
		require.NoError(t, err)
		require.Equal(t, want, sgam.SchemaVersion{Tenant: got.Tenant, StoreDefault: got.StoreDefault, Version: got.Version}, tenant)
	}
	got, err := b.store.DefaultSchema(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, got.Version)
	// History: the default's version that served acme, then its own; a
	// tenant without one, the default's.
	for tenant, want := range map[string][]string{tenantA: {"default 1", tenantA + " 2"}, tenantC: {"default 1"}} {
		hist, err := b.store.SchemaHistory(b.ctx, tenant)
		require.NoError(t, err)
		var versions []string
		for _, v := range hist {
			owner := v.Tenant
			if v.StoreDefault {
				owner = "default"
			}
			versions = append(versions, fmt.Sprintf("%s %d", owner, v.Version))
			require.NotEmpty(t, v.Body)
		}
		require.Equal(t, want, versions, tenant)
	}
	_, err = b.store.ApplySchema(b.ctx, "", []byte(acmeSchema), false)
	requireCode(t, err, sgam.Invalid, "tenant")

	// Writes: each tenant's own attributes, and no other's.
	require.NoError(t, write(tenantA, "mira", "full_name", `"Mira Lind"`))
	require.NoError(t, write(tenantA, "mira", "nickname", `"Mi"`))
	requireCode(t, write(tenantA, "mira", "email", `"mira@acme"`), sgam.Invalid, "attribute")
	require.NoError(t, write(beta, "mira", "email", `"mira@beta"`))
	require.NoError(t, write(beta, "mira", "score", `"41"`))
	requireCode(t, write(beta, "mira", "full_name", `"Mira Beta"`), sgam.Invalid, "attribute")
	require.NoError(t, write(tenantC, "mira", "full_name", `"Mira Init"`))
	requireCode(t, write(tenantC, "mira", "nickname", `"M"`), sgam.Invalid, "attribute")
	_, err = b.store.AssertMany(b.ctx, []sgam.Assertion{
		{Key: key(tenantA, "kai", "nickname"), Value: []byte(`"K"`), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
		{Key: key(beta, "kai", "nickname"), Value: []byte(`"K"`), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "e1"},
	})
	requireCode(t, err, sgam.Invalid, "assertions[1].attribute")
	require.NoError(t, write(tenantA, "kai", "nickname", `"K"`))

	// A later default version serves the tenants without their own only.
	apply("", defaultSchema+"  nickname: {memory: profile, type: string}\n")
	require.NoError(t, write(tenantC, "mira", "nickname", `"M"`))
	requireCode(t, write(beta, "mira", "nickname", `"M"`), sgam.Invalid, "attribute")

	// Retention: beta's classes govern beta's episodes only.
	_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "short-lived", Content: "x", Retention: "short"})
	requireCode(t, err, sgam.Invalid, "retention")
	for _, tenant := range []string{tenantA, beta, tenantC} {
		b.episode(tenant, "e2", "said by "+tenant, "2026-01-01T00:00:00Z")
	}
	b.tick("2026-01-01T03:00:00Z")
	rcs, err := b.store.Expire(b.ctx)
	require.NoError(t, err)
	require.Len(t, rcs, 1, "only beta's episodes had a class that runs out")
	require.Equal(t, beta, rcs[0].Tenant)
	require.ElementsMatch(t, []string{"e1", "e2"}, rcs[0].EpisodeIDs)
	for _, tenant := range []string{tenantA, tenantC} {
		_, err := b.store.Episode(b.ctx, tenant, "e2")
		require.NoError(t, err, "%s's episode survives beta's retention", tenant)
		require.Equal(t, "Mi", b.value(key(tenantA, "mira", "nickname"), "", ""))
	}
	_, err = b.store.Episode(b.ctx, beta, "e2")
	requireCode(t, err, sgam.NotFound, "episode_id")

	// Migrations: each schema's run over its own tenant's rows only.
	require.NoError(t, write(beta, "omar", "score", `"7"`))
	b.tick("2026-01-02T00:00:00Z")
	require.Equal(t, 3, apply(tenantA, acmeSchemaV2).Version)
	require.Equal(t, 3, apply(beta, betaSchemaV2).Version)
	reports, err := b.store.Migrate(b.ctx, sgam.MigrateOptions{})
	require.NoError(t, err)
	byTenant := map[string]sgam.MigrationReport{}
	for _, r := range reports {
		byTenant[r.Tenant] = r
	}
	require.Len(t, byTenant, 2, "acme's and beta's, nothing for the default")
	require.Equal(t, "nickname-to-handle", byTenant[tenantA].Name)
	require.Equal(t, 2, byTenant[tenantA].Subjects, "mira and kai of acme")
	require.Equal(t, "score-to-integer", byTenant[beta].Name)
	require.Equal(t, 1, byTenant[beta].Subjects, "omar of beta")
	require.Equal(t, "Mi", b.value(key(tenantA, "mira", "handle"), "", ""))
	require.Equal(t, "M", b.value(key(tenantC, "mira", "nickname"), "", ""), "the default's tenant keeps its nickname")
	score := b.get(key(beta, "omar", "score"), "", "")
	require.Equal(t, `7`, string(score.Value))
	require.Equal(t, 3, score.SchemaVersion, "written under beta's version 3")
	again, err := b.store.Migrate(b.ctx, sgam.MigrateOptions{})
	require.NoError(t, err)
	for _, r := range again {
		require.Zero(t, r.Subjects, "%s/%s ran once", r.Tenant, r.Name)
	}

	// Reads resolve names under the reader's schema.
	ref, governed, err := b.store.Relation(b.ctx, tenantC, "full_name")
	require.NoError(t, err)
	require.True(t, governed)
	require.False(t, ref)
	b.requireClean()
}

// runExpireMeetsApply: a tenant that applies its first schema of its own
// while Expire is running under the default's retention keeps what its own
// schema keeps: no batch after the apply deletes its rows under the
// default's classes.
func runExpireMeetsApply(t *testing.T, newStore Factory) {
	const shortDefault = `
retention:
  short: 1h
episode_retention: short
attributes:
  full_name: {memory: profile, type: string}
`
	const keepAll = `
attributes:
  full_name: {memory: profile, type: string}
`
	for n := 4000; n <= 8000; n *= 2 { // at most the 10,000 that left() counts
		b := setup(t, newStore)
		_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(shortDefault), false)
		require.NoError(t, err)
		b.tick("2026-01-01T00:00:00Z")
		batch := sgam.ImportBatch{}
		for i := range n {
			batch.Episodes = append(batch.Episodes, sgam.Episode{Tenant: tenantA, ID: fmt.Sprintf("e%05d", i), Kind: sgam.KindMessage,
				Content: "x", OccurredAt: b.at("2026-01-01T00:00:00Z"), RecordedAt: b.at("2026-01-01T00:00:00Z"), Retention: "short"})
		}
		_, err = b.store.Import(b.ctx, batch)
		require.NoError(t, err)
		b.tick("2026-01-01T03:00:00Z")

		done := make(chan error, 1)
		go func() { _, err := b.store.Expire(b.ctx); done <- err }()
		// Apply acme's own schema once the first batch has committed.
		var applied bool
		for !applied {
			select {
			case err := <-done:
				require.NoError(t, err)
				done <- nil
				applied = true // too late: Expire was quicker; try more rows
				continue
			default:
			}
			rcs, err := b.store.Receipts(b.ctx, tenantA)
			require.NoError(t, err)
			if len(rcs) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			_, err = b.store.ApplySchema(b.ctx, tenantA, []byte(keepAll), false)
			require.NoError(t, err)
			applied = true
		}
		left := func() int {
			es, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Limit: 10000})
			require.NoError(t, err)
			return len(es)
		}
		atApply := left()
		require.NoError(t, <-done)
		own, err := b.store.Schema(b.ctx, tenantA)
		require.NoError(t, err)
		if own.Tenant != tenantA {
			continue // Expire ended before the apply: more rows
		}
		require.Positive(t, atApply, "Expire was still running at the apply")
		require.Equal(t, atApply, left(), "nothing of acme is expired under the default after acme applied its own schema")
		b.requireClean()
		return
	}
	t.Fatal("Expire always ended before the schema could be applied")
}
