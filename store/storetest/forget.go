package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// believedRows renders the believed rows of a tenant as comparable lines:
// key, valid window, value and sources (sorted), ordered.
func believedRows(t testing.TB, store sgam.Store, tenant string) []string {
	t.Helper()
	out := []string{}
	for _, f := range Export(t, store, tenant).Facts {
		if f.RetractedAt != nil {
			continue
		}
		to := "open"
		if f.ValidTo != nil {
			to = sgam.FormatTime(*f.ValidTo)
		}
		src := slices.Clone(f.Sources)
		slices.Sort(src)
		out = append(out, fmt.Sprintf("%s [%s, %s) %s %v", f.Key(), sgam.FormatTime(f.ValidFrom), to, f.Value, src))
	}
	slices.Sort(out)
	return out
}

// receiptJSON is what the audit keeps of a receipt.
func receiptJSON(t testing.TB, rc sgam.Receipt) string {
	t.Helper()
	b, err := json.Marshal(rc)
	require.NoError(t, err)
	return string(b)
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// factIDs lists the ids of a tenant's rows that match.
func factIDs(t testing.TB, store sgam.Store, tenant string, match func(sgam.StoredFact) bool) []int64 {
	t.Helper()
	out := []int64{}
	for _, f := range Export(t, store, tenant).Facts {
		if match(f) {
			out = append(out, f.ID)
		}
	}
	return out
}

// requireReceipts checks that the tenant's audit lists exactly want.
func (b *bundle) requireReceipts(tenant string, want ...sgam.Receipt) {
	b.t.Helper()
	got, err := b.store.Receipts(b.ctx, tenant)
	require.NoError(b.t, err)
	require.Len(b.t, got, len(want))
	for i := range want {
		require.Equal(b.t, receiptJSON(b.t, want[i]), receiptJSON(b.t, got[i]))
	}
}

func runForget(t *testing.T, newStore Factory) {
	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "hello", "2026-01-01T00:00:00Z")
		for _, c := range []struct {
			r     sgam.ForgetRequest
			code  sgam.Code
			field string
		}{
			{sgam.ForgetRequest{Tenant: tenantA}, sgam.Invalid, "subject"},
			{sgam.ForgetRequest{Tenant: tenantA, Subject: "mira", Episode: "e1"}, sgam.Invalid, "episode"},
			{sgam.ForgetRequest{Tenant: tenantA, Subject: "mira", All: true}, sgam.Invalid, "all"},
			{sgam.ForgetRequest{Tenant: "", Subject: "mira"}, sgam.Invalid, "tenant"},
			{sgam.ForgetRequest{Tenant: tenantA, Subject: "mira", Actor: "a b"}, sgam.Invalid, "actor"},
			{sgam.ForgetRequest{Tenant: tenantA, Episode: "nosuch"}, sgam.NotFound, "episode"},
			{sgam.ForgetRequest{Tenant: tenantB, Episode: "e1"}, sgam.NotFound, "episode"},
		} {
			_, err := b.store.Forget(b.ctx, c.r)
			requireCode(t, err, c.code, c.field)
		}
		_, err := b.store.Episode(b.ctx, tenantA, "e1")
		require.NoError(t, err, "nothing was forgotten")
		b.requireReceipts(tenantA)
	})

	t.Run("BySubject", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.ApplyDefaultSchema(b.ctx, []byte(subjectSchema), false)
		require.NoError(t, err)
		write := func(tenant string) {
			b.tick("2026-03-01T00:00:00Z")
			for _, e := range []struct{ id, kind, content string }{
				{"s_only", "message", "mira told us a secret"},
				{"shared", "message", "mira and omar"},
				{"s_pend", "tool", "a tool about mira"},
			} {
				_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: e.id, Kind: e.kind, Content: e.content})
				require.NoError(t, err)
			}
			mira := func(attr string) sgam.Key { return key(tenant, "mira", attr) }
			for _, w := range []struct {
				k          sgam.Key
				v, at, src string
			}{
				{mira("weight"), `61`, "2026-01-01T00:00:00Z", "s_only"},
				{mira("weight"), `62`, "2026-02-01T00:00:00Z", "shared"},
				{mira("passport_deadline"), `"2026-06-30"`, "2026-01-01T00:00:00Z", "shared"},
				{mira("budget"), `100`, "2026-01-01T00:00:00Z", "s_only"},
				{mira("budget"), `200`, "2026-01-01T00:00:00Z", "s_pend"},         // review: pending
				{mira("diagnosis"), `"asthma"`, "2026-01-01T00:00:00Z", "s_only"}, // sensitive: pending
				{key(tenant, "omar", "weight"), `80`, "2026-01-01T00:00:00Z", "shared"},
			} {
				_, err := b.assertRaw(w.k, w.v, w.at, w.src)
				require.NoError(t, err)
			}
			_, err := b.store.Add(b.ctx, sgam.Assertion{Key: mira("allergies"), Value: jsonString("peanuts"), ValidFrom: b.at("2026-01-01T00:00:00Z"), Source: "s_only"})
			require.NoError(t, err)
			b.retract(mira("passport_deadline"), "2026-03-01T00:00:00Z", "s_only")
			pend, err := b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenant, Subject: "mira"})
			require.NoError(t, err)
			require.Len(t, pend, 2)
		}
		write(tenantA)
		write(tenantB)
		b.requireClean()
		other := Export(t, b.store, tenantB)
		want := factIDs(t, b.store, tenantA, func(f sgam.StoredFact) bool { return f.Subject == "mira" })
		require.Len(t, want, 8, "two weights and a copy, a deadline, its copy and tombstone, a budget, a member")

		b.tick("2026-04-01T00:00:00Z")
		rc, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "mira", Actor: "dpo"})
		require.NoError(t, err)
		require.NotEmpty(t, rc.ID)
		require.Equal(t, tenantA, rc.Tenant)
		require.Equal(t, "dpo", rc.Actor)
		require.Equal(t, "subject", rc.Kind)
		// The target is the store's keyed digest of the subject: the
		// operator finds the receipt by it; a guessed id hashed without the
		// store's secret does not match it.
		digest, err := b.store.SubjectDigest(b.ctx, tenantA, "mira")
		require.NoError(t, err)
		require.Equal(t, digest, rc.Target)
		require.Len(t, rc.Target, 64)
		require.NotEqual(t, sha256Hex("mira"), rc.Target, "not an unkeyed hash of the id")
		other2, err := b.store.SubjectDigest(b.ctx, tenantB, "mira")
		require.NoError(t, err)
		require.NotEqual(t, digest, other2, "the digest differs across tenants")
		require.Equal(t, b.at("2026-04-01T00:00:00Z"), rc.At)
		require.Equal(t, want, rc.FactIDs)
		require.Equal(t, len(want), rc.FactsDeleted)
		require.Equal(t, 2, rc.PendingDeleted)
		require.Equal(t, []string{"s_only", "s_pend"}, rc.EpisodeIDs, "shared still supports omar")
		require.Equal(t, 2, rc.EpisodesDeleted)
		require.Zero(t, rc.FactsMended+rc.LinksRemoved+rc.FactsRetained)
		js := receiptJSON(t, rc)
		require.NotContains(t, js, "mira")
		require.NotContains(t, js, "secret")

		for _, attr := range []string{"weight", "passport_deadline", "budget", "diagnosis", "allergies"} {
			h, err := b.store.History(b.ctx, key(tenantA, "mira", attr))
			require.NoError(t, err)
			require.Empty(t, h, attr)
		}
		state, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{})
		require.NoError(t, err)
		require.Empty(t, state)
		pend, err := b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Empty(t, pend)
		for _, id := range []string{"s_only", "s_pend"} {
			_, err := b.store.Episode(b.ctx, tenantA, id)
			requireCode(t, err, sgam.NotFound, "episode_id")
		}
		_, err = b.store.Episode(b.ctx, tenantA, "shared")
		require.NoError(t, err)
		require.Equal(t, "80", string(b.get(key(tenantA, "omar", "weight"), "", "").Value))
		b.requireClean()
		b.requireReceipts(tenantA, rc)
		b.requireReceipts(tenantB)
		RequireSameDump(t, other, Export(t, b.store, tenantB))
		pend, err = b.store.Pending(b.ctx, sgam.PendingQuery{Tenant: tenantB, Subject: "mira"})
		require.NoError(t, err)
		require.Len(t, pend, 2, "the other tenant keeps its candidates")

		again, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "mira"})
		require.NoError(t, err, "forgetting again finds nothing and says so")
		require.Zero(t, again.FactsDeleted+again.EpisodesDeleted+again.PendingDeleted)
		require.Equal(t, "sgam", again.Actor)
	})

	t.Run("ByEpisode", func(t *testing.T) {
		t.Parallel()
		// write records the same story in a store, from the given episodes
		// only.
		write := func(b *bundle, tenant string, from ...string) {
			use := func(e string) bool { return slices.Contains(from, e) }
			for _, e := range []string{"e1", "e2", "e3", "e4"} {
				if use(e) {
					b.episode(tenant, e, "said in "+e, "2026-01-01T00:00:00Z")
				}
			}
			for _, w := range []struct{ attr, v, at, src string }{
				{"city", "Oslo", "2026-01-01T00:00:00Z", "e1"},
				{"city", "Rome", "2026-02-01T00:00:00Z", "e2"},
				{"city", "Paris", "2026-03-01T00:00:00Z", "e3"},
				{"job", "chef", "2026-01-01T00:00:00Z", "e2"},
				{"job", "chef", "2026-01-01T00:00:00Z", "e4"}, // corroborates
				{"pet", "cat", "2026-01-01T00:00:00Z", "e1"},
				{"pet", "cat", "2026-01-01T00:00:00Z", "e2"}, // corroborates
				{"pet", "dog", "2026-04-01T00:00:00Z", "e2"},
			} {
				if use(w.src) {
					b.assert(key(tenant, "mira", w.attr), w.v, w.at, w.src)
				}
			}
		}
		b := setup(t, newStore)
		write(b, tenantA, "e1", "e2", "e3", "e4")
		write(b, tenantB, "e1", "e2", "e3", "e4")
		b.tick("2026-05-01T00:00:00Z")
		require.Equal(t, []string{"e2", "e4"}, b.get(key(tenantA, "mira", "job"), "", "").Sources, "read, and cached")
		other := Export(t, b.store, tenantB)
		want := factIDs(t, b.store, tenantA, func(f sgam.StoredFact) bool {
			return f.Source == "e2" && (f.Attribute == "city" || f.Value != nil && string(f.Value) == `"dog"`)
		})
		require.Len(t, want, 3, "Rome, its shortened copy, dog")

		rc, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "e2"})
		require.NoError(t, err)
		require.Equal(t, "episode", rc.Kind)
		require.Equal(t, "e2", rc.Target)
		require.Equal(t, "sgam", rc.Actor)
		require.Equal(t, want, rc.FactIDs)
		require.Equal(t, 3, rc.FactsDeleted)
		require.Equal(t, 2, rc.FactsMended, "Oslo takes Rome's window, cat takes dog's")
		require.Equal(t, 3, rc.LinksRemoved, "chef keeps e4; cat and its shortened copy keep e1")
		require.Equal(t, []string{"e2"}, rc.EpisodeIDs)
		require.Equal(t, 1, rc.EpisodesDeleted)
		require.Zero(t, rc.PendingDeleted+rc.FactsRetained)
		require.NotContains(t, receiptJSON(t, rc), "said in")

		city := key(tenantA, "mira", "city")
		require.Equal(t, "Oslo", b.value(city, "2026-02-15T00:00:00Z", ""), "the deleted window now holds its predecessor's value")
		require.Equal(t, "Oslo", b.value(city, "2026-02-01T00:00:00Z", ""))
		require.Equal(t, "Paris", b.value(city, "2026-03-01T00:00:00Z", ""))
		require.Equal(t, "Rome", b.value(key(tenantB, "mira", "city"), "2026-02-15T00:00:00Z", ""))
		job := b.get(key(tenantA, "mira", "job"), "", "")
		require.Equal(t, []string{"e4"}, job.Sources, "the corroborating episode is the only source now")
		require.Equal(t, "cat", b.value(key(tenantA, "mira", "pet"), "", ""))
		require.Equal(t, []string{"e1"}, b.get(key(tenantA, "mira", "pet"), "", "").Sources)
		hist, err := b.store.History(b.ctx, city)
		require.NoError(t, err)
		for _, f := range hist {
			require.NotEqual(t, `"Rome"`, string(f.Value), "history goes too")
			if f.Supersedes != nil {
				require.NotContains(t, want, *f.Supersedes, "no pointer at a deleted row")
			}
		}
		_, err = b.store.Episode(b.ctx, tenantA, "e2")
		requireCode(t, err, sgam.NotFound, "episode_id")
		b.requireClean()
		b.requireReceipts(tenantA, rc)
		RequireSameDump(t, other, Export(t, b.store, tenantB))

		// The believed rows are those of a store that never heard of e2.
		fresh := setup(t, newStore)
		write(fresh, tenantA, "e1", "e3", "e4")
		require.Equal(t, believedRows(t, fresh.store, tenantA), believedRows(t, b.store, tenantA))

		// Ids are never reused.
		r := b.assert(key(tenantA, "mira", "city"), "Bergen", "2026-05-01T00:00:00Z", "e1")
		require.Greater(t, r.Fact.ID, slices.Max(want))
	})

	t.Run("ByTenant", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// The tenant to forget writes last: its rows hold the largest ids
		// and the latest transaction time, which must outlive them.
		for _, tenant := range []string{tenantB, tenantA} {
			b.tick("2026-01-01T00:00:00Z")
			if tenant == tenantA {
				b.tick("2026-01-05T00:00:00Z")
			}
			b.episode(tenant, "e1", "one", "2026-01-01T00:00:00Z")
			b.episode(tenant, "e2", "two", "2026-01-02T00:00:00Z")
			b.assert(key(tenant, "mira", "city"), "Oslo", "2026-01-01T00:00:00Z", "e1")
			b.assert(key(tenant, "mira", "city"), "Rome", "2026-02-01T00:00:00Z", "e2")
			b.assert(key(tenant, "kai", "city"), "Rome", "2026-02-01T00:00:00Z", "e2")
			b.assert(key(tenant, "kai", "city"), "Rome", "2026-02-01T00:00:00Z", "e1")
		}
		other := Export(t, b.store, tenantB)
		all := factIDs(t, b.store, tenantA, func(sgam.StoredFact) bool { return true })
		b.tick("2026-03-01T00:00:00Z")
		rc, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, All: true, Actor: "ops"})
		require.NoError(t, err)
		require.Equal(t, "tenant", rc.Kind)
		require.Equal(t, "", rc.Target)
		require.Equal(t, all, rc.FactIDs)
		require.Equal(t, len(all), rc.FactsDeleted)
		require.Equal(t, []string{"e1", "e2"}, rc.EpisodeIDs)
		require.Equal(t, 2, rc.EpisodesDeleted)

		eps, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Empty(t, eps)
		state, err := b.store.State(b.ctx, tenantA, "mira", sgam.At{})
		require.NoError(t, err)
		require.Empty(t, state)
		require.Nil(t, b.get(key(tenantA, "mira", "city"), "", ""))
		d := Export(t, b.store, tenantA)
		require.Empty(t, d.Episodes)
		require.Empty(t, d.Facts)
		RequireSameDump(t, other, Export(t, b.store, tenantB))
		b.requireReceipts(tenantA, rc)
		b.requireReceipts(tenantB)
		b.requireClean()

		// The tenant starts again from nothing, with new ids, and
		// transaction time does not run back to before the forget, though
		// the clock was set back.
		b.tick("2026-02-15T00:00:00Z")
		b.episode(tenantA, "e1", "one again", "2026-01-01T00:00:00Z")
		r := b.assert(key(tenantA, "mira", "city"), "Oslo", "2026-01-01T00:00:00Z", "e1")
		require.Greater(t, r.Fact.ID, slices.Max(all))
		require.Equal(t, b.at("2026-03-01T00:00:00Z"), r.Fact.RecordedAt)
	})

	t.Run("EpisodeRetention", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e0", Content: "x", Retention: "not a class"})
		requireCode(t, err, sgam.Invalid, "retention")
		e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "x", Retention: "session"})
		require.NoError(t, err, "without a schema any class name is kept")
		require.Equal(t, "session", e.Retention)
		got, err := b.store.Episode(b.ctx, tenantA, "e1")
		require.NoError(t, err)
		require.Equal(t, "session", got.Retention)
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "x", Retention: "standard"})
		requireCode(t, err, sgam.Conflict, "episode_id")
		again, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "x", Retention: "session"})
		require.NoError(t, err)
		require.Equal(t, "session", again.Retention)
		list, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA})
		require.NoError(t, err)
		require.Equal(t, "session", list[0].Retention)
		d := Export(t, b.store, tenantA)
		require.Equal(t, "session", d.Episodes[0].Retention)

		_, err = b.store.ApplyDefaultSchema(b.ctx, []byte(expireSchema), false)
		require.NoError(t, err)
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e2", Content: "x", Retention: "weekly"})
		requireCode(t, err, sgam.Invalid, "retention")
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e2", Content: "x", Retention: "standard"})
		require.NoError(t, err)

		// An export carries the class, and an import keeps it.
		dst := setup(t, newStore)
		_, err = dst.store.Import(dst.ctx, sgam.ImportBatch{Episodes: Export(t, b.store, tenantA).Episodes})
		require.NoError(t, err)
		got, err = dst.store.Episode(dst.ctx, tenantA, "e2")
		require.NoError(t, err)
		require.Equal(t, "standard", got.Retention)
	})

	t.Run("Expire", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		none, err := b.store.Expire(b.ctx)
		require.NoError(t, err)
		require.Empty(t, none, "without a schema nothing expires")
		_, err = b.store.ApplyDefaultSchema(b.ctx, []byte(expireSchema), false)
		require.NoError(t, err)
		for _, tenant := range []string{tenantA, tenantB} {
			for _, e := range []struct{ id, retention string }{{"sess1", "session"}, {"sess2", "session"}, {"keep", ""}} {
				_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: e.id, Content: "said in " + e.id, Retention: e.retention})
				require.NoError(t, err)
			}
			mira := func(attr string) sgam.Key { return key(tenant, "mira", attr) }
			b.assert(mira("city"), "Oslo", "2026-01-01T00:00:00Z", "sess1") // kept by its standard retention
			b.assert(mira("mood"), "happy", "2026-01-01T00:00:00Z", "keep")
			b.assert(mira("mood"), "grumpy", "2026-01-05T00:00:00Z", "sess1") // goes; happy is mended over it
			b.assert(mira("mood"), "calm", "2026-01-10T00:00:00Z", "keep")
			b.assert(key(tenant, "omar", "mood"), "sad", "2026-01-01T00:00:00Z", "sess2")
			b.assert(key(tenant, "omar", "mood"), "sad", "2026-01-01T00:00:00Z", "keep") // keeps it
			b.assert(mira("token"), "abc", "2026-01-01T00:00:00Z", "keep")               // its own class runs out
		}
		// What is derived from the episodes goes with them: their rows of
		// the full-text index (their vectors: the vector section).
		searched := func(tenant string) (ids []string) {
			t.Helper()
			hits, err := b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenant, Text: "said", Limit: 10})
			require.NoError(t, err)
			for _, h := range hits {
				ids = append(ids, h.Episode.ID)
			}
			slices.Sort(ids)
			return ids
		}
		require.Equal(t, []string{"keep", "sess1", "sess2"}, searched(tenantA))
		want := factIDs(t, b.store, tenantA, func(f sgam.StoredFact) bool {
			return f.Source == "sess1" && f.Attribute == "mood" || f.Attribute == "token"
		})
		require.Len(t, want, 3, "grumpy, its shortened copy, the token")

		b.tick("2026-01-30T00:00:00Z")
		none, err = b.store.Expire(b.ctx)
		require.NoError(t, err)
		require.Empty(t, none, "nothing has run out yet")

		b.tick("2026-02-01T00:00:00Z")
		rcs, err := b.store.Expire(b.ctx)
		require.NoError(t, err)
		require.Len(t, rcs, 2, "one receipt per tenant")
		slices.SortFunc(rcs, func(x, y sgam.Receipt) int { return strings.Compare(x.Tenant, y.Tenant) })
		for i, tenant := range []string{tenantA, tenantB} {
			rc := rcs[i]
			require.Equal(t, tenant, rc.Tenant)
			require.Equal(t, "expire", rc.Kind)
			require.Equal(t, "retention", rc.Actor)
			require.Equal(t, []string{"sess1", "sess2"}, rc.EpisodeIDs)
			require.Equal(t, 2, rc.EpisodesDeleted)
			require.Equal(t, 3, rc.FactsDeleted)
			require.Equal(t, 1, rc.FactsMended)
			require.Equal(t, 1, rc.FactsRetained)
			require.Equal(t, 1, rc.LinksRemoved)
			require.NotContains(t, receiptJSON(t, rc), "said in")
		}
		require.Equal(t, want, rcs[0].FactIDs)

		city := b.get(key(tenantA, "mira", "city"), "", "")
		require.Equal(t, `"Oslo"`, string(city.Value), "kept by its attribute's retention")
		require.Empty(t, city.Sources)
		for _, f := range Export(t, b.store, tenantA).Facts {
			if f.Attribute == "city" {
				require.Equal(t, "retention", f.Actor)
				require.Empty(t, f.Source)
				require.Empty(t, f.Evidence)
			}
		}
		require.Equal(t, "happy", b.value(key(tenantA, "mira", "mood"), "2026-01-07T00:00:00Z", ""))
		require.Equal(t, "calm", b.value(key(tenantA, "mira", "mood"), "2026-01-12T00:00:00Z", ""))
		require.Equal(t, []string{"keep"}, b.get(key(tenantA, "omar", "mood"), "", "").Sources)
		require.Nil(t, b.get(key(tenantA, "mira", "token"), "", ""))
		_, err = b.store.Episode(b.ctx, tenantA, "sess1")
		requireCode(t, err, sgam.NotFound, "episode_id")
		_, err = b.store.Episode(b.ctx, tenantA, "keep")
		require.NoError(t, err, "the schema's episode_retention (standard) keeps it")
		for _, tenant := range []string{tenantA, tenantB} {
			require.Equal(t, []string{"keep"}, searched(tenant), "%s: the expired episodes' words left the index", tenant)
		}
		b.requireClean()
		b.requireReceipts(tenantA, rcs[0])

		again, err := b.store.Expire(b.ctx)
		require.NoError(t, err)
		require.Empty(t, again, "expiry is idempotent")
	})
}

// subjectSchema declares an attribute for every kind of row a subject
// has: single values, a set, and candidates held pending.
const subjectSchema = `
attributes:
  passport_deadline: {memory: task, type: date}
  weight: {memory: profile, type: number}
  allergies: {memory: profile, type: string, cardinality: many}
  budget: {memory: task, type: integer, conflict: review}
  diagnosis: {memory: profile, type: string, sensitive: true}
`

// expireSchema has two retention classes and attributes with and without
// one.
const expireSchema = `
retention:
  session: 30d
  standard: 2y
episode_retention: standard
attributes:
  city: {memory: profile, type: string, retention: standard}
  mood: {memory: profile, type: string}
  token: {memory: task, type: string, retention: session}
`
