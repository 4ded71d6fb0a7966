package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// Dump is a whole store, as exported.
type Dump struct {
	Episodes []sgam.Episode
	Facts    []sgam.StoredFact
}

// Export reads every row of store (tenant "" = all tenants).
func Export(t testing.TB, store sgam.Store, tenant string) Dump {
	t.Helper()
	var d Dump
	require.NoError(t, store.Export(t.Context(), tenant, func(e sgam.Episode) error {
		d.Episodes = append(d.Episodes, e)
		return nil
	}, func(f sgam.StoredFact) error {
		d.Facts = append(d.Facts, f)
		return nil
	}))
	return d
}

// RequireSameDump fails unless two dumps hold the same rows.
func RequireSameDump(t testing.TB, want, got Dump) {
	t.Helper()
	require.Equal(t, len(want.Episodes), len(got.Episodes), "episodes")
	for i := range want.Episodes {
		require.True(t, sgam.EpisodesEqual(want.Episodes[i], got.Episodes[i]), "episode %d: want %+v, got %+v", i, want.Episodes[i], got.Episodes[i])
	}
	require.Equal(t, len(want.Facts), len(got.Facts), "facts")
	for i := range want.Facts {
		require.True(t, sgam.StoredFactsEqual(want.Facts[i], got.Facts[i]), "fact %d: want %+v, got %+v", i, want.Facts[i], got.Facts[i])
	}
}

// Populate writes a random history to store: episodes, assertions,
// retractions, repeats and conflicts, over two tenants, with the clock
// moving.
func Populate(t testing.TB, store sgam.Store, clock *sgam.ManualClock, seed uint64, ops int) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base
	for i := range ops {
		now = now.Add(time.Duration(rng.IntN(3_000_000)) * time.Microsecond)
		clock.Set(now)
		tenant := []string{tenantA, tenantB}[rng.IntN(2)]
		src := fmt.Sprintf("e%d", rng.IntN(ops/3+1))
		if rng.IntN(4) == 0 {
			_, err := store.AddEpisode(ctx, sgam.Episode{Tenant: tenant, ID: src, Session: fmt.Sprintf("s%d", rng.IntN(3)),
				Kind: "message", Content: fmt.Sprintf("content %d ✓", i), OccurredAt: base.Add(time.Duration(rng.IntN(1000)) * time.Minute)})
			if sgam.ErrorCode(err) != sgam.Conflict {
				require.NoError(t, err)
			}
		}
		k := key(tenant, fmt.Sprintf("s%d", rng.IntN(5)), fmt.Sprintf("a%d", rng.IntN(3)))
		validFrom := base.Add(time.Duration(rng.IntN(500)) * time.Minute)
		var err error
		if rng.IntN(6) == 0 {
			_, err = store.Retract(ctx, sgam.Retraction{Key: k, At: validFrom, Source: src})
		} else {
			v := []string{`"x"`, `{"n":1,"tags":["a","b"]}`, `42`, `true`, `"ünïcödé"`}[rng.IntN(5)]
			_, err = store.Assert(ctx, sgam.Assertion{Key: k, Value: []byte(v), ValidFrom: validFrom, Source: src})
		}
		if sgam.ErrorCode(err) != sgam.Conflict {
			require.NoError(t, err)
		}
	}
}

func runTransfer(t *testing.T, newStore Factory) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		src := setup(t, newStore)
		Populate(t, src.store, src.clock, 42, 600)
		src.requireClean()
		dump := Export(t, src.store, "")
		require.NotEmpty(t, dump.Facts)

		dst := setup(t, newStore)
		stats, err := dst.store.Import(dst.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		require.NoError(t, err)
		require.Equal(t, len(dump.Facts), stats.Facts)
		RequireSameDump(t, dump, Export(t, dst.store, ""))
		dst.requireClean()

		// Importing again finds everything present and writes nothing.
		again, err := dst.store.Import(dst.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		require.NoError(t, err)
		require.Equal(t, sgam.ImportStats{EpisodesPresent: len(dump.Episodes), FactsPresent: len(dump.Facts)}, again)

		// Reads agree at several instants, on both axes.
		dst.clock.Set(src.clock.Now())
		for _, f := range dump.Facts {
			for _, at := range []sgam.At{{}, {AsOf: f.ValidFrom}, {AsOf: f.ValidFrom, KnownAt: f.RecordedAt}} {
				want, err := src.store.Get(src.ctx, f.Key(), at)
				require.NoError(t, err)
				got, err := dst.store.Get(dst.ctx, f.Key(), at)
				require.NoError(t, err)
				if !assertSameFact(t, want, got) {
					for _, g := range dump.Facts {
						if g.Key() == f.Key() {
							t.Logf("row %d [%s, %v) believed [%s, %v) %s", g.ID, g.ValidFrom, g.ValidTo, g.RecordedAt, g.RetractedAt, g.Value)
						}
					}
					t.Fatalf("fact %d at %+v: want %v got %v", f.ID, at, want, got)
				}
			}
		}

		// New writes after an import get fresh ids and keep time monotonic.
		dst.tick("2026-01-01T00:00:00Z")
		r := dst.assert(key(tenantA, "new", "a"), "x", "2026-01-01T00:00:00Z", "e-new")
		require.Greater(t, r.Fact.ID, dump.Facts[len(dump.Facts)-1].ID)
		dst.requireClean()

		// One tenant alone.
		onlyB := Export(t, src.store, tenantB)
		for _, f := range onlyB.Facts {
			require.Equal(t, tenantB, f.Tenant)
		}
		for _, e := range onlyB.Episodes {
			require.Equal(t, tenantB, e.Tenant)
		}
	})

	t.Run("ImportRejectsConflicts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.assert(key(tenantA, "mira", "city"), "Oslo", "2026-01-01T00:00:00Z", "e1")
		dump := Export(t, b.store, "")
		changed := dump.Facts[0]
		changed.Value = jsonString("Bergen")
		_, err := b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{changed}})
		requireCode(t, err, sgam.Conflict, "facts[0]")

		// A second open row for the key breaks an invariant.
		overlap := dump.Facts[0]
		overlap.ID = 1000
		overlap.ValidFrom = overlap.ValidFrom.Add(time.Hour)
		fresh := sgam.StoredFact{Fact: sgam.Fact{ID: 1001, Tenant: tenantA, Subject: "kai", Attribute: "city", Value: jsonString("Rome"),
			ValidFrom: b.at("2026-01-01T00:00:00Z"), RecordedAt: b.at("2026-01-01T00:00:00Z")}, Source: "e1"}
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{fresh, overlap}})
		requireCode(t, err, sgam.Conflict, "")
		require.Nil(t, b.get(key(tenantA, "kai", "city"), "", ""), "nothing of the batch was written")

		bad := fresh
		bad.ValidTo = &bad.ValidFrom
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{bad}})
		requireCode(t, err, sgam.Invalid, "facts[0].valid_to")

		// Bad input is named by record and field, not reported as a failed
		// constraint.
		noEpisode := fresh
		noEpisode.Source = "nowhere"
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{noEpisode}})
		requireCode(t, err, sgam.Invalid, "facts[0].source")
		noSource := fresh
		noSource.Source, noSource.Evidence = "", nil
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{noSource}})
		requireCode(t, err, sgam.Invalid, "facts[0].source")
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{fresh, fresh}})
		requireCode(t, err, sgam.Invalid, "facts[1].fact_id")
		badEvidence := fresh
		badEvidence.Evidence = []sgam.Evidence{{EpisodeID: "nowhere", RecordedAt: fresh.RecordedAt}}
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Facts: []sgam.StoredFact{badEvidence}})
		requireCode(t, err, sgam.Invalid, "facts[0].evidence[0].episode_id")
		require.Nil(t, b.get(key(tenantA, "kai", "city"), "", ""), "nothing of the batches was written")

		// Fact ids are store-wide: another tenant's id is taken.
		theirs := dump.Facts[0]
		theirs.Tenant = tenantB
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Episodes: []sgam.Episode{{Tenant: tenantB, ID: "e1", Kind: "message",
			OccurredAt: theirs.RecordedAt, RecordedAt: theirs.RecordedAt}}, Facts: []sgam.StoredFact{theirs}})
		requireCode(t, err, sgam.Conflict, "facts[0]")
		crossLink := fresh
		crossLink.Supersedes = &dump.Facts[0].ID
		crossLink.Tenant = tenantB
		crossLink.ID = 2000
		_, err = b.store.Import(b.ctx, sgam.ImportBatch{Episodes: []sgam.Episode{{Tenant: tenantB, ID: "e1", Kind: "message",
			OccurredAt: theirs.RecordedAt, RecordedAt: theirs.RecordedAt}}, Facts: []sgam.StoredFact{crossLink}})
		requireCode(t, err, sgam.Invalid, "facts[0].supersedes")
		b.requireClean()
	})
}

func assertSameFact(t testing.TB, want, got *sgam.Fact) bool {
	return (want == nil) == (got == nil) && (want == nil || want.ID == got.ID)
}
