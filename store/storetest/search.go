package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

func runSearch(t *testing.T, newStore Factory) {
	search := func(b *bundle, tenant, text string) []string {
		b.t.Helper()
		hits, err := b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenant, Text: text})
		require.NoError(b.t, err)
		ids := []string{}
		for _, h := range hits {
			require.Equal(b.t, tenant, h.Episode.Tenant)
			ids = append(ids, h.Episode.ID)
		}
		return ids
	}

	t.Run("RankedPerTenant", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "Mira: my passport renewal deadline is July 15.", "2026-06-01T09:00:00Z")
		b.episode(tenantA, "e2", "Mira: correction, the deadline is June 30, not July 15.", "2026-06-03T10:00:00Z")
		b.episode(tenantA, "e3", "Lunch was good today.", "2026-06-03T12:00:00Z")
		b.episode(tenantB, "e1", "Mira: my passport renewal deadline is July 15.", "2026-06-01T09:00:00Z")
		b.episode(tenantB, "b9", "The passport office is closed.", "2026-06-01T09:00:00Z")

		require.Equal(t, []string{"e1", "e2"}, search(b, tenantA, "When is Mira's passport deadline?"), "both terms rank e1 first")
		require.Equal(t, []string{"e1"}, search(b, tenantA, "renewing passports"), "stemmed")
		require.Equal(t, []string{"e1", "b9"}, search(b, tenantB, "passport renewal"))
		require.Empty(t, search(b, tenantA, "what is it"), "stop words only")
		require.Empty(t, search(b, "initech", "passport"))
		require.Equal(t, []string{"e1"}, search(b, tenantA, `"passport" AND NOT NEAR(x) * ^ : - OR)(`+"\u00e9t\u00e9"), "operators are words, not syntax")

		hits, err := b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenantA, Text: "deadline", Limit: 1, Snippet: 20})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		require.Greater(t, hits[0].Score, 0.0)
		require.Contains(t, hits[0].Snippet, "deadline")
		require.LessOrEqual(t, len(hits[0].Snippet), 20+2*len("…"))

		bare, err := b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenantA, Text: "deadline", NoSnippet: true})
		require.NoError(t, err)
		require.Len(t, bare, 2)
		require.Empty(t, bare[0].Snippet)

		_, err = b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenantA, Text: "x", Limit: sgam.MaxSearchLimit + 1})
		requireCode(t, err, sgam.Invalid, "limit")
		_, err = b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenantA, Text: "\xff"})
		requireCode(t, err, sgam.Invalid, "text")
		_, err = b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Text: "x"})
		requireCode(t, err, sgam.Invalid, "tenant")
	})

	t.Run("CommonTermsLeftOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// More episodes hold "weather" than a search ranks, so a question
		// with a rarer term is searched by that term alone.
		for i := range words.MaxRankedRows + 1 {
			b.episode(tenantA, "w"+itoa(i), "sunny weather", "2026-06-01T09:00:00Z")
		}
		b.episode(tenantA, "z1", "a zeppelin over the lake in this weather", "2026-06-01T10:00:00Z")
		b.episode(tenantB, "z1", "a zeppelin", "2026-06-01T10:00:00Z")
		b.episode(tenantB, "z2", "weather", "2026-06-01T10:00:00Z")
		require.Equal(t, []string{"z1"}, search(b, tenantA, "zeppelin weather"), "the common term is left out")
		require.Equal(t, []string{"z1"}, search(b, tenantA, "zeppelinz zeppelin weather"), "and a term nothing holds does not count as the rarer")
		require.Len(t, search(b, tenantA, "weather"), 10, "the rarest term is searched however common")
		require.Len(t, search(b, tenantA, "zeppelinz weather"), 10, "also beside a term nothing holds")
		require.Equal(t, []string{"z1"}, search(b, tenantB, "zeppelin"), "the other tenant sees its own")
		require.Equal(t, []string{"z2"}, search(b, tenantB, "weather"))
	})

	t.Run("OtherTenantsWordsChooseNoTerm", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		// Which terms are searched is decided by the tenant's rows alone:
		// a word only another tenant holds is not the rarest of the
		// question, so it neither pushes the tenant's own term out nor
		// tells, by the answer changing, that another tenant holds it.
		for i := range words.MaxRankedRows {
			b.episode(tenantA, "p"+itoa(i), "passport office", "2026-06-01T09:00:00Z")
		}
		b.episode(tenantB, "b1", "zebra", "2026-06-01T09:00:00Z")
		held := search(b, tenantA, "passport zebra")
		require.Len(t, held, 10)
		require.Equal(t, search(b, tenantA, "passport zebraq"), held, "as beside a word nobody holds")
		require.Equal(t, []string{"b1"}, search(b, tenantB, "passport zebra"))
	})

	t.Run("KnownAtAndPlaceholders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.tick("2026-06-01T09:00:00Z")
		b.episode(tenantA, "e1", "the blue door", "2026-06-01T09:00:00Z")
		b.tick("2026-06-02T09:00:00Z")
		// A write naming an episode not captured yet makes a placeholder;
		// capturing it fills in the content, which becomes searchable.
		b.assert(key(tenantA, "door", "color"), `"red"`, "2026-06-02T09:00:00Z", "e2")
		require.Empty(t, search(b, tenantA, "red painted"), "a placeholder has no content")
		b.tick("2026-06-03T09:00:00Z")
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e2", Kind: "message", Content: "we painted the door red", OccurredAt: b.at("2026-06-02T09:00:00Z")})
		require.NoError(t, err)
		require.Equal(t, []string{"e2", "e1"}, search(b, tenantA, "red door painted"))

		hits, err := b.store.SearchEpisodes(b.ctx, sgam.SearchQuery{Tenant: tenantA, Text: "door", KnownAt: b.at("2026-06-01T12:00:00Z")})
		require.NoError(t, err)
		require.Len(t, hits, 1, "only what was recorded by known_at")
		require.Equal(t, "e1", hits[0].Episode.ID)
	})

	t.Run("ForgottenAndReindexed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "alpha zebra", "2026-06-01T09:00:00Z")
		b.episode(tenantA, "e2", "beta zebra", "2026-06-01T10:00:00Z")
		b.episode(tenantA, "e3", "gamma zebra", "2026-06-01T11:00:00Z")
		b.assert(key(tenantA, "s3", "note"), `"x"`, "2026-06-01T11:00:00Z", "e3")
		b.episode(tenantB, "e1", "alpha zebra", "2026-06-01T09:00:00Z")

		_, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "e1"})
		require.NoError(t, err)
		require.Empty(t, search(b, tenantA, "alpha"))
		require.Equal(t, []string{"e1"}, search(b, tenantB, "alpha"), "the other tenant's copy stays")
		_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "s3"})
		require.NoError(t, err)
		require.Empty(t, search(b, tenantA, "gamma"), "the subject's only episode went with it")

		var seen [][2]int
		n, err := b.store.Reindex(b.ctx, tenantA, func(done, total int) { seen = append(seen, [2]int{done, total}) })
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, [][2]int{{0, 1}, {1, 1}}, seen)
		require.Equal(t, []string{"e2"}, search(b, tenantA, "zebra"))
		n, err = b.store.Reindex(b.ctx, "", nil)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{"e1"}, search(b, tenantB, "zebra"))
		b.requireClean()

		_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantB, All: true})
		require.NoError(t, err)
		require.Empty(t, search(b, tenantB, "zebra"))
		require.Equal(t, []string{"e2"}, search(b, tenantA, "zebra"))
	})

	t.Run("Attributes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.assert(key(tenantA, "bob", "drink"), `"tea"`, "2026-01-01T00:00:00Z", "e1")
		b.assert(key(tenantA, "bob", "drink"), `"coffee"`, "2026-01-02T00:00:00Z", "e2")
		b.assert(key(tenantA, "bob", "city"), `"Oslo"`, "2026-01-01T00:00:00Z", "e1")
		b.retract(key(tenantA, "bob", "city"), "2026-01-03T00:00:00Z", "e3")
		b.assert(key(tenantA, "ann", "age"), `3`, "2026-01-01T00:00:00Z", "e1")
		b.assert(key(tenantB, "bob", "zodiac"), `"leo"`, "2026-01-01T00:00:00Z", "x1")
		got, err := b.store.Attributes(b.ctx, tenantA, "bob")
		require.NoError(t, err)
		require.Equal(t, []string{"city", "drink"}, got, "retracted ones too, by name, each once")
		got, err = b.store.Attributes(b.ctx, tenantB, "bob")
		require.NoError(t, err)
		require.Equal(t, []string{"zodiac"}, got)
		got, err = b.store.Attributes(b.ctx, "initech", "bob")
		require.NoError(t, err)
		require.Empty(t, got)
		_, err = b.store.Attributes(b.ctx, tenantA, "")
		requireCode(t, err, sgam.Invalid, "subject")
	})

	t.Run("Around", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		for i, at := range []string{"09:00", "09:01", "09:02", "09:03", "09:04", "09:05"} {
			b.tick("2026-06-01T" + at + ":00Z")
			_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "t" + itoa(i), Session: "s1", Content: "turn", OccurredAt: b.at("2026-06-01T" + at + ":00Z")})
			require.NoError(t, err)
		}
		_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "other", Session: "s2", Content: "x", OccurredAt: b.at("2026-06-01T09:02:30Z")})
		require.NoError(t, err)
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "lone", Content: "no session", OccurredAt: b.at("2026-06-01T09:02:30Z")})
		require.NoError(t, err)
		_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantB, ID: "t9", Session: "s1", Content: "theirs", OccurredAt: b.at("2026-06-01T09:02:30Z")})
		require.NoError(t, err)
		ids := func(es []sgam.Episode) []string {
			out := []string{}
			for _, e := range es {
				out = append(out, e.ID)
			}
			return out
		}
		read := func(tenant string, ids ...string) []sgam.Episode {
			var out []sgam.Episode
			for _, id := range ids {
				e, err := b.store.Episode(b.ctx, tenant, id)
				require.NoError(t, err)
				out = append(out, e)
			}
			return out
		}
		w, err := b.store.Around(b.ctx, tenantA, read(tenantA, "t2", "t0", "t5", "lone", "t2"), 2, time.Time{})
		require.NoError(t, err)
		require.Len(t, w, 3, "no window for an episode without a session; one for an episode given twice")
		require.NotContains(t, w, "lone")
		require.Equal(t, []string{"t0", "t1"}, ids(w["t2"].Before), "oldest first")
		require.Equal(t, []string{"t3", "t4"}, ids(w["t2"].After))
		require.Empty(t, w["t0"].Before)
		require.Equal(t, []string{"t1", "t2"}, ids(w["t0"].After))
		require.Equal(t, []string{"t3", "t4"}, ids(w["t5"].Before))
		require.Empty(t, w["t5"].After)

		w, err = b.store.Around(b.ctx, tenantA, read(tenantA, "t2"), 8, b.at("2026-06-01T09:03:30Z"))
		require.NoError(t, err)
		require.Equal(t, []string{"t3"}, ids(w["t2"].After), "only what was recorded by known_at")

		w, err = b.store.Around(b.ctx, tenantB, read(tenantB, "t9"), 2, time.Time{})
		require.NoError(t, err)
		require.Empty(t, w, "the other tenant's session s1 is another conversation, where t9 is alone")
		t2 := read(tenantA, "t2")
		_, err = b.store.Around(b.ctx, tenantB, t2, 2, time.Time{})
		requireCode(t, err, sgam.Invalid, "at[0].tenant")
		t2[0].Tenant = ""
		w, err = b.store.Around(b.ctx, tenantB, t2, 2, time.Time{})
		require.NoError(t, err)
		require.Equal(t, []string{"t9"}, ids(w["t2"].After), "read in the tenant's own session s1, not the other's")
		require.Empty(t, w["t2"].Before)

		_, err = b.store.Around(b.ctx, tenantA, read(tenantA, "t2"), 0, time.Time{})
		requireCode(t, err, sgam.Invalid, "n")
		_, err = b.store.Around(b.ctx, tenantA, []sgam.Episode{{ID: "", Session: "s1", OccurredAt: b.at("2026-06-01T09:02:00Z")}}, 1, time.Time{})
		requireCode(t, err, sgam.Invalid, "at[0].episode_id")
		_, err = b.store.Around(b.ctx, tenantA, []sgam.Episode{{ID: "t2", Session: "s1"}}, 1, time.Time{})
		requireCode(t, err, sgam.Invalid, "at[0].occurred_at")
	})

	t.Run("Imported", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newStore)
		b.episode(tenantA, "e1", "the quick brown fox", "2026-06-01T09:00:00Z")
		dump := Export(t, b.store, tenantA)
		c := setup(t, newStore)
		_, err := c.store.Import(c.ctx, sgam.ImportBatch{Episodes: dump.Episodes, Facts: dump.Facts})
		require.NoError(t, err)
		require.Equal(t, []string{"e1"}, search(c, tenantA, "foxes"))
	})
}
