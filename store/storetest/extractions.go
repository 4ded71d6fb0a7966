package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// runExtractions: an extraction's candidates and its record commit
// together in the episode's tenant, from the episode; the ledger's
// refusals become rejections; records are read back per episode and by
// prompt, counted as tokens, and forgotten with their episode.
func runExtractions(t *testing.T, newStore Factory) {
	b := schemaBundle(t, newStore)
	for _, tenant := range []string{tenantA, tenantB} {
		b.episode(tenant, "e1", "Mira: my passport deadline is July 15; I weigh 61.5 kg", "2026-06-01T09:00:00Z")
	}
	b.tick("2026-06-01T09:00:01Z")
	cand := func(i int, subject, attribute, value string, validFrom string) sgam.CandidateWrite {
		return sgam.CandidateWrite{Accepted: sgam.Accepted{Index: i, Evidence: "x", Subject: subject, Attribute: attribute,
			Change: "new", Value: []byte(value), ValidFrom: b.at(validFrom)}}
	}
	record := func(tenant, episode string) sgam.Extraction {
		return sgam.Extraction{Tenant: tenant, EpisodeID: episode, Model: "m1", Mode: "json_schema", PromptDigest: "p1",
			Prompt: "the prompt", RawOutput: `{"updates":[]}`, TokensIn: 100, TokensOut: 20, Calls: 1}
	}
	commit := func(rec sgam.Extraction, writes ...sgam.CandidateWrite) sgam.Extraction {
		t.Helper()
		x, err := b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: rec, Writes: writes})
		require.NoError(t, err)
		return x
	}

	// Candidates become facts from the episode; one the ledger refuses is
	// rejected and the others are written.
	_, err := b.assertRaw(key(tenantA, "mira", "weight"), `60`, "2026-06-01T09:00:00Z", "e_tool")
	require.NoError(t, err)
	x := commit(record(tenantA, "e1"),
		cand(0, "mira", "passport_deadline", `"2026-07-15"`, "2026-06-01T09:00:00Z"),
		cand(1, "mira", "weight", `61.5`, "2026-06-01T09:00:00Z"),     // a different value at the same valid_from: refused
		cand(2, "mira", "diagnosis", `"flu"`, "2026-06-01T09:00:00Z"), // sensitive, from a message: held
	)
	require.NotEmpty(t, x.ID)
	require.Equal(t, sgam.ExtractionDone, x.Status)
	require.Equal(t, b.at("2026-06-01T09:00:01Z"), x.At)
	require.Len(t, x.Accepted, 2)
	require.Equal(t, sgam.OutcomeWritten, x.Accepted[0].Outcome)
	require.Equal(t, sgam.OutcomePending, x.Accepted[1].Outcome)
	require.NotEmpty(t, x.Accepted[1].PendingID)
	require.Len(t, x.Rejected, 1)
	require.Equal(t, 1, x.Rejected[0].Index)
	require.Equal(t, sgam.RejectConflict, x.Rejected[0].Reason)
	require.Equal(t, []int64{x.Accepted[0].FactID}, x.Facts)
	require.Equal(t, []string{x.Accepted[1].PendingID}, x.Pending)
	f := b.get(key(tenantA, "mira", "passport_deadline"), "", "")
	require.Equal(t, []string{"e1"}, f.Sources)
	require.Equal(t, `60`, string(b.get(key(tenantA, "mira", "weight"), "", "").Value), "the refused candidate wrote nothing")
	require.Nil(t, b.get(key(tenantB, "mira", "passport_deadline"), "", ""), "nothing outside the episode's tenant")

	// Again: an idempotent repeat, no second row.
	again := commit(record(tenantA, "e1"), cand(0, "mira", "passport_deadline", `"2026-07-15"`, "2026-06-01T09:00:00Z"))
	require.Equal(t, sgam.OutcomeUnchanged, again.Accepted[0].Outcome)
	require.Equal(t, x.Accepted[0].FactID, again.Accepted[0].FactID)
	hist, err := b.store.History(b.ctx, key(tenantA, "mira", "passport_deadline"))
	require.NoError(t, err)
	require.Len(t, hist, 1)

	// A failed attempt is recorded, writes nothing, and answers no prompt.
	failed := record(tenantA, "e1")
	failed.PromptDigest, failed.Error = "p2", "model server timed out"
	require.Equal(t, sgam.ExtractionFailed, commit(failed).Status)
	_, found, err := b.store.ExtractionByPrompt(b.ctx, tenantA, "p2")
	require.NoError(t, err)
	require.False(t, found)

	// Every candidate rejected: status rejected.
	rej := commit(record(tenantA, "e1"), cand(0, "mira", "weight", `61.5`, "2026-06-01T09:00:00Z"))
	require.Equal(t, sgam.ExtractionRejected, rej.Status)

	xs, err := b.store.Extractions(b.ctx, tenantA, "e1")
	require.NoError(t, err)
	require.Len(t, xs, 4)
	require.Equal(t, x, xs[0], "stored as returned")
	byPrompt, found, err := b.store.ExtractionByPrompt(b.ctx, tenantA, "p1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, rej.ID, byPrompt.ID, "the newest usable record of the prompt")
	spent, err := b.store.TokensSpent(b.ctx, tenantA, b.at("2026-06-01T00:00:00Z"))
	require.NoError(t, err)
	require.Equal(t, 4*120, spent)
	spent, err = b.store.TokensSpent(b.ctx, tenantA, b.at("2026-06-02T00:00:00Z"))
	require.NoError(t, err)
	require.Zero(t, spent)

	// The other tenant sees none of it.
	xs, err = b.store.Extractions(b.ctx, tenantB, "e1")
	require.NoError(t, err)
	require.Empty(t, xs)
	_, found, err = b.store.ExtractionByPrompt(b.ctx, tenantB, "p1")
	require.NoError(t, err)
	require.False(t, found)
	spent, err = b.store.TokensSpent(b.ctx, tenantB, b.at("2026-01-01T00:00:00Z"))
	require.NoError(t, err)
	require.Zero(t, spent)

	// Bad input, by name; an unknown episode writes nothing.
	_, err = b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: record(tenantA, "nope"),
		Writes: []sgam.CandidateWrite{cand(0, "omar", "passport_deadline", `"2026-07-15"`, "2026-06-01T09:00:00Z")}})
	requireCode(t, err, sgam.NotFound, "episode_id")
	require.Nil(t, b.get(key(tenantA, "omar", "passport_deadline"), "", ""))
	_, err = b.store.Extractions(b.ctx, tenantA, "nope")
	requireCode(t, err, sgam.NotFound, "episode_id")
	_, err = b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: record("", "e1")})
	requireCode(t, err, sgam.Invalid, "tenant")
	bad := commit(record(tenantA, "e1"), cand(0, "", "passport_deadline", `"2026-07-15"`, "2026-06-01T09:00:00Z"),
		cand(1, "mira", "passport_deadline", `"July"`, "2026-06-01T09:00:00Z"))
	require.Len(t, bad.Rejected, 2)
	require.Equal(t, sgam.RejectInvalidSubject, bad.Rejected[0].Reason)
	require.Equal(t, sgam.RejectInvalidValue, bad.Rejected[1].Reason)

	// Forgotten with the episode, and with the tenant.
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "e1"})
	require.NoError(t, err)
	b.episode(tenantA, "e1", "again", "2026-06-01T09:00:00Z")
	xs, err = b.store.Extractions(b.ctx, tenantA, "e1")
	require.NoError(t, err)
	require.Empty(t, xs, "the records went with the episode")
	_, found, err = b.store.ExtractionByPrompt(b.ctx, tenantA, "p1")
	require.NoError(t, err)
	require.False(t, found)
	commit(record(tenantB, "e1"))
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantB, All: true})
	require.NoError(t, err)
	spent, err = b.store.TokensSpent(b.ctx, tenantB, b.at("2026-01-01T00:00:00Z"))
	require.NoError(t, err)
	require.Zero(t, spent)
	b.requireClean()
}

// runExtractionInputs: what extraction reads to build a prompt: an
// episode's subjects hint, the latest episodes of a session before an
// instant, and which words of a text are known subjects; none of it
// across tenants.
func runExtractionInputs(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	for _, tenant := range []string{tenantA, tenantB} {
		for i, at := range []string{"2026-06-01T09:00:00Z", "2026-06-01T10:00:00Z", "2026-06-01T11:00:00Z", "2026-06-01T12:00:00Z"} {
			_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenant, ID: fmt.Sprintf("s%d", i), Session: "chat", Content: tenant + " turn",
				OccurredAt: b.at(at)})
			require.NoError(t, err)
		}
	}
	e, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "h1", Content: "about them", Subjects: []string{"mira", "acct-42"}})
	require.NoError(t, err)
	require.Equal(t, []string{"mira", "acct-42"}, e.Subjects)
	got, err := b.store.Episode(b.ctx, tenantA, "h1")
	require.NoError(t, err)
	require.Equal(t, []string{"mira", "acct-42"}, got.Subjects)
	_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "h1", Content: "about them", Subjects: []string{"mira"}})
	requireCode(t, err, sgam.Conflict, "episode_id")
	_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "h2", Content: "x", Subjects: []string{"mira", "mira"}})
	requireCode(t, err, sgam.Invalid, "subjects[1]")
	_, err = b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "h2", Content: "x", Subjects: []string{""}})
	requireCode(t, err, sgam.Invalid, "subjects[0]")

	latest, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Session: "chat", Limit: 2, Latest: true, Before: b.at("2026-06-01T12:00:00Z")})
	require.NoError(t, err)
	require.Equal(t, []string{"s1", "s2"}, episodeIDs(latest), "the two before noon, oldest first")
	first, err := b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Session: "chat", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"s0", "s1"}, episodeIDs(first))
	_, err = b.store.Episodes(b.ctx, sgam.EpisodeQuery{Tenant: tenantA, Before: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	requireCode(t, err, sgam.Invalid, "before")

	b.assert(key(tenantA, "mira", "city"), "Oslo", "2026-06-01T09:00:00Z", "s0")
	b.assert(key(tenantA, "acct-42", "plan"), "pro", "2026-06-01T09:00:00Z", "s0")
	b.assert(key(tenantB, "omar", "city"), "Rome", "2026-06-01T09:00:00Z", "s0")
	known, err := b.store.Subjects(b.ctx, tenantA, []string{"omar", "acct-42", "the", "mira", "mira", ""})
	require.NoError(t, err)
	require.Equal(t, []string{"acct-42", "mira"}, known, "in the order given, once; omar is the other tenant's")
	known, err = b.store.Subjects(b.ctx, tenantB, []string{"mira", "omar"})
	require.NoError(t, err)
	require.Equal(t, []string{"omar"}, known)
	_, err = b.store.Subjects(b.ctx, tenantA, make([]string, sgam.MaxSubjectsLookup+1))
	requireCode(t, err, sgam.Invalid, "ids")

	// The subjects of the facts an episode is the source of, per tenant.
	from, err := b.store.SubjectsFrom(b.ctx, tenantA, []string{"s0", "s1"}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []string{"acct-42", "mira"}, from)
	from, err = b.store.SubjectsFrom(b.ctx, tenantB, []string{"s0"}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []string{"omar"}, from, "none of acme's")
	from, err = b.store.SubjectsFrom(b.ctx, tenantA, []string{"s0"}, b.at("2025-12-31T00:00:00Z"))
	require.NoError(t, err)
	require.Empty(t, from, "nothing was believed before the facts were written")
}

func episodeIDs(es []sgam.Episode) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// runExtractionQueue: capture and the queue entry commit together; entries
// are listed store-wide, dequeued only as listed, and go with their
// episode; budgets are per tenant.
func runExtractionQueue(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	b.tick("2026-06-01T09:00:00Z")
	add := func(tenant, id, content string) bool {
		t.Helper()
		_, queued, err := b.store.AddEpisodeToExtract(b.ctx, sgam.Episode{Tenant: tenant, ID: id, Content: content, OccurredAt: b.at("2026-06-01T08:00:00Z")}, 0)
		require.NoError(t, err)
		return queued
	}
	queued := func() []string {
		t.Helper()
		q, err := b.store.QueuedExtractions(b.ctx, 100, true)
		require.NoError(t, err)
		var out []string
		for _, e := range q {
			out = append(out, fmt.Sprintf("%s/%s again=%v", e.Tenant, e.EpisodeID, e.Again))
		}
		return out
	}
	require.True(t, add(tenantA, "e1", "one"))
	b.tick("2026-06-01T09:00:01Z")
	require.True(t, add(tenantB, "e1", "one"))
	require.True(t, add(tenantA, "e1", "one"), "a repeat of an episode never extracted is queued (again)")
	require.Equal(t, []string{"acme/e1 again=false", "globex/e1 again=false"}, queued(), "one entry per episode, oldest first")
	_, _, err := b.store.AddEpisodeToExtract(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "other"}, 0)
	requireCode(t, err, sgam.Conflict, "episode_id")

	// Dequeue removes what was listed; an entry queued again since stays.
	list, err := b.store.QueuedExtractions(b.ctx, 100, true)
	require.NoError(t, err)
	b.tick("2026-06-01T09:00:02Z")
	require.NoError(t, b.store.QueueExtraction(b.ctx, tenantA, []string{"e1"}, true))
	require.NoError(t, b.store.DequeueExtractions(b.ctx, list))
	require.Equal(t, []string{"acme/e1 again=true"}, queued())
	q, err := b.store.QueuedExtractions(b.ctx, 100, true)
	require.NoError(t, err)
	require.NoError(t, b.store.DequeueExtractions(b.ctx, q))
	require.Empty(t, queued())

	// Once extracted, a repeat is not queued; asking again is.
	_, err = b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenantA, EpisodeID: "e1", PromptDigest: "p", TokensIn: 700}})
	require.NoError(t, err)
	require.False(t, add(tenantA, "e1", "one"))
	require.Empty(t, queued())
	err = b.store.QueueExtraction(b.ctx, tenantA, []string{"e1", "nope"}, true)
	requireCode(t, err, sgam.NotFound, "episode_id")
	require.Empty(t, queued(), "nothing queued when one id is unknown")
	err = b.store.QueueExtraction(b.ctx, tenantA, []string{""}, true)
	requireCode(t, err, sgam.Invalid, "episode_ids[0]")
	_, err = b.store.QueuedExtractions(b.ctx, 0, false)
	requireCode(t, err, sgam.Invalid, "limit")

	// Entries go with their episode.
	require.True(t, add(tenantA, "e2", "two"))
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "e2"})
	require.NoError(t, err)
	require.Empty(t, queued())

	// Budgets: per tenant, spent since the last UTC midnight.
	bud, err := b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.Equal(t, sgam.Budget{Tenant: tenantA, SpentToday: 700, ResetsAt: b.at("2026-06-02T00:00:00Z")}, bud)
	require.False(t, bud.Exhausted())
	require.NoError(t, b.store.SetBudget(b.ctx, tenantA, 500))
	bud, err = b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.Equal(t, 500, bud.TokensPerDay)
	require.True(t, bud.Exhausted())
	other, err := b.store.Budget(b.ctx, tenantB)
	require.NoError(t, err)
	require.Equal(t, sgam.Budget{Tenant: tenantB, ResetsAt: b.at("2026-06-02T00:00:00Z")}, other)
	b.tick("2026-06-02T00:00:00Z")
	bud, err = b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.Zero(t, bud.SpentToday, "a new day")
	require.NoError(t, b.store.SetBudget(b.ctx, tenantA, 0))
	bud, err = b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.Zero(t, bud.TokensPerDay)
	requireCode(t, b.store.SetBudget(b.ctx, tenantA, -1), sgam.Invalid, "tokens_per_day")
	b.requireClean()
}

// runExtractionHold: an entry of the immediate path is held back from the
// workers until its hold passes, and settled by the commit of its record:
// a record that ends the extraction clears it (but an entry that asks for
// the episode again), a failed one gives it to the workers at once.
func runExtractionHold(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	b.tick("2026-06-01T09:00:00Z")
	hold := func(tenant, id string) {
		t.Helper()
		_, queued, err := b.store.AddEpisodeToExtract(b.ctx, sgam.Episode{Tenant: tenant, ID: id, Content: "text of " + id, OccurredAt: b.at("2026-06-01T08:00:00Z")}, 10*time.Minute)
		require.NoError(t, err)
		require.True(t, queued)
	}
	list := func(dueOnly bool) []string {
		t.Helper()
		q, err := b.store.QueuedExtractions(b.ctx, 100, dueOnly)
		require.NoError(t, err)
		out := []string{}
		for _, e := range q {
			out = append(out, fmt.Sprintf("%s/%s due %s", e.Tenant, e.EpisodeID, sgam.FormatTime(e.DueAt)))
		}
		return out
	}
	commit := func(tenant, id string, rec sgam.Extraction) {
		t.Helper()
		rec.Tenant, rec.EpisodeID, rec.PromptDigest = tenant, id, "p-"+id
		_, err := b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: rec})
		require.NoError(t, err)
	}
	_, _, err := b.store.AddEpisodeToExtract(b.ctx, sgam.Episode{Tenant: tenantA, Content: "x"}, -time.Second)
	requireCode(t, err, sgam.Invalid, "hold")
	_, _, err = b.store.AddEpisodeToExtract(b.ctx, sgam.Episode{Tenant: tenantA, Content: "x"}, sgam.MaxHold+time.Second)
	requireCode(t, err, sgam.Invalid, "hold")

	hold(tenantA, "e1")
	hold(tenantA, "e2")
	hold(tenantB, "e3")
	require.Equal(t, []string{"acme/e1 due 2026-06-01T09:10:00Z", "acme/e2 due 2026-06-01T09:10:00Z", "globex/e3 due 2026-06-01T09:10:00Z"}, list(false))
	require.Empty(t, list(true), "held: not due to the workers")

	// A usable record clears its entry, in its tenant only.
	commit(tenantA, "e1", sgam.Extraction{})
	// A failed attempt a retry may mend gives the episode to the workers now.
	b.tick("2026-06-01T09:01:00Z")
	commit(tenantA, "e2", sgam.Extraction{Error: "model server timed out"})
	require.Equal(t, []string{"acme/e2 due 2026-06-01T09:01:00Z"}, list(true))
	// One that gave up ends it.
	commit(tenantA, "e2", sgam.Extraction{Error: "model server answered 400", GaveUp: true})
	require.Equal(t, []string{"globex/e3 due 2026-06-01T09:10:00Z"}, list(false))

	// Asking for the episode again is not settled by a record of an
	// earlier request.
	require.NoError(t, b.store.QueueExtraction(b.ctx, tenantB, []string{"e3"}, true))
	commit(tenantB, "e3", sgam.Extraction{})
	require.Equal(t, []string{"globex/e3 due 2026-06-01T09:01:00Z"}, list(true))

	// QueueExtraction gives a held entry back to the workers at once.
	hold(tenantA, "e4")
	require.NoError(t, b.store.QueueExtraction(b.ctx, tenantA, []string{"e4"}, false))
	require.Equal(t, []string{"acme/e4 due 2026-06-01T09:01:00Z", "globex/e3 due 2026-06-01T09:01:00Z"}, list(true))

	// A hold passes: the workers get the entry of a process that died.
	hold(tenantA, "e5")
	require.NotContains(t, list(true), "acme/e5 due 2026-06-01T09:11:00Z")
	b.tick("2026-06-01T09:11:00Z")
	require.Contains(t, list(true), "acme/e5 due 2026-06-01T09:11:00Z")
	b.requireClean()
}

// runTokenSums: a day's tokens saturate at sgam.MaxTokenCount, and a
// record cannot claim more than that: a lying count can neither wrap a
// tenant's budget nor break its reads.
func runTokenSums(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	b.tick("2026-06-01T09:00:00Z")
	_, err := b.store.AddEpisode(b.ctx, sgam.Episode{Tenant: tenantA, ID: "e1", Content: "one"})
	require.NoError(t, err)
	for i := range 3 {
		_, err := b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenantA, EpisodeID: "e1",
			PromptDigest: fmt.Sprint("p", i), TokensIn: sgam.MaxTokenCount, TokensOut: sgam.MaxTokenCount}})
		require.NoError(t, err)
	}
	_, err = b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenantA, EpisodeID: "e1", PromptDigest: "p", TokensIn: sgam.MaxTokenCount + 1}})
	requireCode(t, err, sgam.Invalid, "tokens")
	_, err = b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenantA, EpisodeID: "e1", PromptDigest: "p", TokensOut: -1}})
	requireCode(t, err, sgam.Invalid, "tokens")
	bud, err := b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.Equal(t, sgam.MaxTokenCount, bud.SpentToday, "saturated, not wrapped")
	n, err := b.store.TokensSpent(b.ctx, tenantA, b.at("2026-06-01T00:00:00Z"))
	require.NoError(t, err)
	require.Equal(t, sgam.MaxTokenCount, n)
	require.NoError(t, b.store.SetBudget(b.ctx, tenantA, 1000))
	bud, err = b.store.Budget(b.ctx, tenantA)
	require.NoError(t, err)
	require.True(t, bud.Exhausted())
	other, err := b.store.Budget(b.ctx, tenantB)
	require.NoError(t, err)
	require.Zero(t, other.SpentToday)
}

// runExtractionValuesForgotten: a record's prompt shows the values of the
// subjects in play, which other episodes sourced; a forget that deletes
// such a value (its only source forgotten) deletes every record that
// showed it, whatever episode the record is of; a value another episode
// still supports stays, and so do the records that showed it.
func runExtractionValuesForgotten(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	ids := map[string]int64{}
	for _, tenant := range []string{tenantA, tenantB} {
		b.episode(tenant, "a1", "mira's passport is P123.", "2026-06-01T09:00:00Z")
		b.episode(tenant, "a2", "mira's city is Oslo.", "2026-06-01T10:00:00Z")
		b.episode(tenant, "a3", "mira says Oslo, still.", "2026-06-01T11:00:00Z")
		b.episode(tenant, "b1", "mira says hi.", "2026-06-02T09:00:00Z")
		b.episode(tenant, "b2", "mira says bye.", "2026-06-02T10:00:00Z")
		p := b.assert(sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "passport"}, "P123", "2026-06-01T09:00:00Z", "a1")
		c := b.assert(sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "city"}, "Oslo", "2026-06-01T10:00:00Z", "a2")
		b.assert(sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "city"}, "Oslo", "2026-06-01T10:00:00Z", "a3")
		ids[tenant+"/passport"], ids[tenant+"/city"] = p.Fact.ID, c.Fact.ID
	}
	b.tick("2026-06-03T00:00:00Z")
	for _, tenant := range []string{tenantA, tenantB} {
		for ep, shown := range map[string][]int64{"b1": {ids[tenant+"/passport"]}, "b2": {ids[tenant+"/city"]}} {
			_, err := b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenant, EpisodeID: ep,
				Model: "m", Mode: "json_schema", PromptDigest: "p-" + ep, Prompt: `mira: passport "P123", city "Oslo"`,
				Subjects: []string{"mira"}, ShownFacts: shown}})
			require.NoError(t, err)
		}
	}
	records := func(tenant, ep string) int {
		t.Helper()
		xs, err := b.store.Extractions(b.ctx, tenant, ep)
		require.NoError(t, err)
		return len(xs)
	}
	_, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "a1"})
	require.NoError(t, err)
	require.Equal(t, 0, records(tenantA, "b1"), "b1's prompt showed P123, which only a1 said")
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "a2"})
	require.NoError(t, err)
	require.Equal(t, 1, records(tenantA, "b2"), "Oslo stays, a3 says it too")
	require.Equal(t, 1, records(tenantB, "b1"), "tenant B's records are its own")
	require.Equal(t, 1, records(tenantB, "b2"))
	b.requireClean()
}

// runExtractionCopiesForgotten: a record's prompt shows other episodes
// (earlier turns of the session) and the subjects in play with their
// values, so forgetting an episode or a subject deletes the records that
// hold a copy of it, in its tenant only.
func runExtractionCopiesForgotten(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	for _, tenant := range []string{tenantA, tenantB} {
		b.episode(tenant, "g1", "carol's city is Vienna. My secret word is purplewombat.", "2026-06-01T09:00:00Z")
		b.episode(tenant, "g2", "dave's city is Bolton.", "2026-06-02T09:00:00Z")
		b.episode(tenant, "g3", "erin's city is Cork.", "2026-06-03T09:00:00Z")
		b.episode(tenant, "g4", "carol moved.", "2026-06-04T09:00:00Z")
	}
	b.tick("2026-06-05T00:00:00Z")
	commit := func(tenant, episode string, context, subjects []string) {
		t.Helper()
		_, err := b.store.CommitExtraction(b.ctx, sgam.ExtractionCommit{Record: sgam.Extraction{Tenant: tenant, EpisodeID: episode,
			Model: "m", Mode: "json_schema", PromptDigest: "p-" + episode, Prompt: "…", RawOutput: `{"updates":[]}`,
			ContextEpisodes: context, Subjects: subjects}})
		require.NoError(t, err)
	}
	for _, tenant := range []string{tenantA, tenantB} {
		commit(tenant, "g2", []string{"g1"}, []string{"dave"})
		commit(tenant, "g3", nil, []string{"erin", "dave"})
		commit(tenant, "g4", []string{"g3"}, []string{"carol"})
	}
	records := func(tenant string) []string {
		t.Helper()
		var out []string
		for _, e := range []string{"g1", "g2", "g3", "g4"} {
			xs, err := b.store.Extractions(b.ctx, tenant, e)
			if sgam.ErrorCode(err) == sgam.NotFound {
				continue
			}
			require.NoError(t, err)
			if len(xs) > 0 {
				out = append(out, e)
			}
		}
		return out
	}
	_, err := b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Episode: "g1"})
	require.NoError(t, err)
	require.Equal(t, []string{"g3", "g4"}, records(tenantA), "g2's prompt showed g1")
	_, err = b.store.Forget(b.ctx, sgam.ForgetRequest{Tenant: tenantA, Subject: "carol"})
	require.NoError(t, err)
	require.Equal(t, []string{"g3"}, records(tenantA), "g4's record held carol's data")
	require.Equal(t, []string{"g2", "g3", "g4"}, records(tenantB), "tenant B's records are its own")
	b.requireClean()
}
