package recall_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ts(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v.UTC()
}

// world is a store on a manual clock, and a Recaller reading it at now.
type world struct {
	t     testing.TB
	ctx   context.Context
	store *sqlite.Store
	clock *sgam.ManualClock
	r     *recall.Recaller
}

func newWorld(t testing.TB) *world {
	clock := &sgam.ManualClock{}
	clock.Set(ts(t, "2026-05-01T00:00:00Z"))
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sgam.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return &world{t: t, ctx: t.Context(), store: s, clock: clock, r: recall.New(s).WithClock(clock)}
}

// say captures an episode recorded at recorded and, when value is set,
// asserts key = value from occurred on its evidence.
func (w *world) say(tenant, id, occurred, recorded, content, subject, attribute, value string) {
	w.t.Helper()
	w.clock.Set(ts(w.t, recorded))
	_, err := w.store.AddEpisode(w.ctx, sgam.Episode{Tenant: tenant, ID: id, Session: "s1", Content: content, OccurredAt: ts(w.t, occurred)})
	require.NoError(w.t, err)
	if value != "" {
		_, err = w.store.Assert(w.ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: subject, Attribute: attribute},
			Value: []byte(value), ValidFrom: ts(w.t, occurred), Source: id})
		require.NoError(w.t, err)
	}
}

// passport tells the passport story in tenant.
func (w *world) passport(tenant string) {
	w.say(tenant, "e1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15.", "mira", "passport_deadline", `"2026-07-15"`)
	w.say(tenant, "e2", "2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15.", "mira", "passport_deadline", `"2026-06-30"`)
	w.say(tenant, "e0", "2026-05-30T08:00:00Z", "2026-06-05T12:00:00Z", "Consulate letter to Mira, extracted late: renew by August 1.", "mira", "passport_deadline", `"2026-08-01"`)
	w.clock.Set(ts(w.t, "2026-12-01T15:04:05Z"))
}

func (w *world) recall(q recall.Query) *recall.Context {
	w.t.Helper()
	c, err := w.r.Recall(w.ctx, q)
	require.NoError(w.t, err)
	require.LessOrEqual(w.t, c.Tokens, c.Budget)
	require.Equal(w.t, recall.Tokens(c.Rendered), c.Tokens)
	return c
}

func values(c *recall.Context, status string) []string {
	var out []string
	for _, f := range c.Facts {
		if f.Status == status {
			out = append(out, string(f.Value)+"@"+strings.Join(f.Sources, ","))
		}
	}
	return out
}

func TestPassportStory(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	q := "When is Mira's passport deadline?"

	now := w.recall(recall.Query{Tenant: "acme", Question: q})
	require.Equal(t, []string{`"2026-06-30"@e2`}, values(now, recall.Current))
	require.Empty(t, values(now, recall.Past), "the question is not about the past")
	require.Equal(t, []string{"mira"}, now.Subjects)
	require.Equal(t, []string{"passport_deadline"}, now.Attributes)
	require.Equal(t, "now", now.Instants.AsOf)
	require.Equal(t, "the deadline is June 30, not July 15", now.Facts[0].Quote[len("Mira: correction, "):len(now.Facts[0].Quote)-1])
	require.Empty(t, now.Evidence, "the facts answer, and their line quotes their source")
	golden(t, "passport_now.txt", now.Rendered)

	// Evidence always: the old quota, the superseded episodes marked.
	always := w.recall(recall.Query{Tenant: "acme", Question: q, Evidence: recall.EvidenceAlways})
	require.Equal(t, values(now, recall.Current), values(always, recall.Current))
	require.NotEmpty(t, always.Evidence)
	for _, e := range always.Evidence {
		require.Contains(t, []string{"e0", "e1", "e2"}, e.EpisodeID)
	}
	require.Greater(t, always.Tokens, now.Tokens)
	golden(t, "passport_now_always.txt", always.Rendered)

	then := w.recall(recall.Query{Tenant: "acme", Question: q, AsOf: ts(t, "2026-06-02T00:00:00Z")})
	require.Equal(t, []string{`"2026-07-15"@e1`}, values(then, recall.Current))
	require.Equal(t, "given", then.Instants.AsOf)

	asked := w.recall(recall.Query{Tenant: "acme", Question: "What was Mira's passport deadline on June 2, 2026?"})
	require.Equal(t, ts(t, "2026-06-02T23:59:59.999999Z"), asked.AsOf)
	require.Contains(t, asked.Instants.AsOf, `"on June 2, 2026"`)
	require.Equal(t, []string{`"2026-07-15"@e1`}, values(asked, recall.Current))
	require.Equal(t, []string{`"2026-08-01"@e0`}, values(asked, recall.Past), "a question about the past shows what held before, marked past")
	require.Contains(t, asked.Rendered, "Past values (superseded before as_of; not current):")
	golden(t, "passport_june2.txt", asked.Rendered)

	believed := w.recall(recall.Query{Tenant: "acme", Question: q, KnownAt: ts(t, "2026-06-03T09:59:00Z")})
	require.Equal(t, []string{`"2026-07-15"@e1`}, values(believed, recall.Current))
	require.Equal(t, "given", believed.Instants.KnownAt)
	for _, e := range believed.Evidence {
		require.Equal(t, "e1", e.EpisodeID, "e2 and e0 were not recorded yet")
	}
}

func TestRetractedNotCurrent(t *testing.T) {
	w := newWorld(t)
	w.say("acme", "p1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Bob: I prefer green tea in the morning.", "bob", "drink_preference", `"green tea"`)
	w.say("acme", "p2", "2026-06-10T09:00:00Z", "2026-06-10T09:00:00Z", "Bob: I don't drink tea any more.", "", "", "")
	w.clock.Set(ts(t, "2026-06-10T09:00:00Z"))
	_, err := w.store.Retract(w.ctx, sgam.Retraction{Key: sgam.Key{Tenant: "acme", Subject: "bob", Attribute: "drink_preference"}, At: ts(t, "2026-06-10T09:00:00Z"), Source: "p2"})
	require.NoError(t, err)
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))

	c := w.recall(recall.Query{Tenant: "acme", Question: "What drink does Bob prefer?", Evidence: recall.EvidenceAlways})
	require.Empty(t, c.Facts, "a retracted preference is not current")
	require.Contains(t, c.Rendered, `- none: no value of drink_preference of bob since 2026-06-10 (revoked by p2: "Bob: I don't drink tea any more.")`,
		"the none line names what ended the value")
	require.Contains(t, c.Rendered, `(superseded: bob.drink_preference "green tea" revoked 2026-06-10 by p2)`)
	past := w.recall(recall.Query{Tenant: "acme", Question: "What drink did Bob previously prefer?"})
	require.Equal(t, []string{`"green tea"@p1`}, values(past, recall.Past))
	require.Empty(t, values(past, recall.Current))
}

func TestTenantsSeeOnlyTheirOwn(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	w.say("globex", "g1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is September 9.", "mira", "passport_deadline", `"2026-09-09"`)
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))
	for tenant, want := range map[string][]string{"acme": {`"2026-06-30"@e2`}, "globex": {`"2026-09-09"@g1`}} {
		c := w.recall(recall.Query{Tenant: tenant, Question: "When is Mira's passport deadline?", EvidenceLimit: 20})
		require.Equal(t, want, values(c, recall.Current), tenant)
		for _, f := range c.Facts {
			require.Equal(t, tenant, f.Tenant)
		}
		for _, e := range c.Evidence {
			require.Equal(t, tenant == "globex", e.EpisodeID == "g1", "%s cites %s", tenant, e.EpisodeID)
		}
	}
	none := w.recall(recall.Query{Tenant: "initech", Question: "When is Mira's passport deadline?"})
	require.Empty(t, none.Facts)
	require.Empty(t, none.Evidence)
	require.Empty(t, none.Subjects)
}

// TestSubjectsByName: a question that calls a subject by one of its names
// (the built-in alias) finds it, though its id is not in the question;
// the same words in another tenant, whose subject has no such name, find
// nothing there.
func TestSubjectsByName(t *testing.T) {
	w := newWorld(t)
	for _, tenant := range []string{"acme", "globex"} {
		w.say(tenant, "c1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "CRM: renewal due 2026-06-30.", "cust-17", "passport_deadline", `"2026-06-30"`)
	}
	w.clock.Set(ts(t, "2026-06-02T00:00:00Z"))
	_, err := w.store.Add(w.ctx, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: "cust-17", Attribute: sgam.AliasAttribute},
		Value: []byte(`"Mira Chen"`), ValidFrom: ts(t, "2026-06-01T09:00:00Z"), Source: "c1"})
	require.NoError(t, err)
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))

	q := "When is Mira Chen's passport deadline?"
	c := w.recall(recall.Query{Tenant: "acme", Question: q})
	require.Equal(t, []string{"cust-17"}, c.Subjects)
	require.Equal(t, []string{`"2026-06-30"@c1`}, values(c, recall.Current))
	other := w.recall(recall.Query{Tenant: "globex", Question: q})
	require.Empty(t, other.Subjects)
	require.Empty(t, other.Facts)
	old := w.recall(recall.Query{Tenant: "acme", Question: q, KnownAt: ts(t, "2026-06-01T12:00:00Z")})
	require.Empty(t, old.Subjects, "the name was not known yet")
}

// TestForgetThenCompact: an episode forgotten is cited by no recall, and
// after compact its words are in no byte of the file or its WAL (the
// full-text index's shadow tables included); another tenant's episode
// with the same words is still found.
func TestForgetThenCompact(t *testing.T) {
	w := newWorld(t)
	const mark = "zanzibarquux"
	for _, tenant := range []string{"acme", "globex"} {
		w.say(tenant, "e9", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira booked the "+mark+" suite for her trip.", "mira", "hotel", `"the suite"`)
	}
	w.passport("acme")
	q := "Which " + mark + " suite did Mira book?"
	cites := func(tenant string) []string {
		var ids []string
		for _, e := range w.recall(recall.Query{Tenant: tenant, Question: q}).Evidence {
			ids = append(ids, e.EpisodeID)
		}
		return ids
	}
	require.Contains(t, cites("acme"), "e9")

	_, err := w.store.Forget(w.ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "e9"})
	require.NoError(t, err)
	require.NotContains(t, cites("acme"), "e9")
	c := w.recall(recall.Query{Tenant: "acme", Question: q})
	_, answer, _ := strings.Cut(c.Rendered, "\n") // after the question
	require.NotContains(t, answer, mark)
	require.Contains(t, cites("globex"), "e9", "the other tenant's episode stays")

	_, err = w.store.Forget(w.ctx, sgam.ForgetRequest{Tenant: "globex", Episode: "e9"})
	require.NoError(t, err)
	require.NoError(t, w.store.Compact(w.ctx))
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(w.store.Path() + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		require.False(t, strings.Contains(strings.ToLower(string(b)), mark), "%q is in the bytes of %s", mark, w.store.Path()+suffix)
	}
}

func TestRelatedThroughRefs(t *testing.T) {
	w := newWorld(t)
	w.say("acme", "r1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira works at Initrode.", "mira", "employer", `"initrode"`)
	w.say("acme", "r2", "2026-06-01T10:00:00Z", "2026-06-01T10:00:00Z", "Initrode is based in Oslo.", "initrode", "city", `"Oslo"`)
	w.say("acme", "r3", "2026-06-01T11:00:00Z", "2026-06-01T11:00:00Z", "Oslo is in Norway.", "oslo", "country", `"Norway"`)
	w.clock.Set(ts(t, "2026-12-01T15:04:05Z"))
	c := w.recall(recall.Query{Tenant: "acme", Question: "Where does Mira work?", EvidenceLimit: recall.None})
	require.Len(t, c.Related, 1)
	require.Equal(t, "initrode", c.Related[0].Subject)
	require.Equal(t, c.Facts[0].ID, c.Related[0].Via)
	none := w.recall(recall.Query{Tenant: "acme", Question: "Where does Mira work?", Hops: recall.None})
	require.Empty(t, none.Related)
}

func TestBudget(t *testing.T) {
	w := newWorld(t)
	w.passport("acme")
	for i, budget := range []int{96, 110, 130, 160, 200, 240, 400} {
		c := w.recall(recall.Query{Tenant: "acme", Question: "What was Mira's passport deadline on June 2, 2026?", TokenBudget: budget, Evidence: recall.EvidenceAlways, EvidenceLimit: 10})
		require.LessOrEqual(t, c.Tokens, budget)
		shown := len(c.Facts) + len(c.Evidence) + len(c.Related)
		left := c.Omitted.Facts + c.Omitted.Evidence + c.Omitted.Related
		require.Equal(t, 2+3, shown+left, "budget %d: every item is shown or counted as left out", budget)
		if left > 0 {
			require.Contains(t, c.Rendered, "Left out to keep within")
		}
		if i == 0 {
			require.Positive(t, left)
		}
	}
	// A budget too small for a fact's quote still holds the fact.
	tight := w.recall(recall.Query{Tenant: "acme", Question: "What was Mira's passport deadline on June 2, 2026?", TokenBudget: 160})
	require.NotEmpty(t, tight.Facts)
	require.Equal(t, `"2026-07-15"`, string(tight.Facts[0].Value))
	require.Empty(t, tight.Facts[0].Quote)
	require.NotContains(t, tight.Rendered, "renewal deadline is July 15", "the quote was left out, not the fact")

	// Whatever the budget, the block stays within it, the line that says
	// what was left out included, or the budget is refused by name.
	for budget := recall.MinBudget; budget <= 160; budget++ {
		for _, q := range []recall.Query{
			{Tenant: "acme", Question: "When is Mira's passport deadline?", TokenBudget: budget},
			{Tenant: "acme", Question: "What did the consulate letter say?", TokenBudget: budget, Evidence: recall.EvidenceAlways},
		} {
			c, err := w.r.Recall(w.ctx, q)
			if err != nil {
				require.Equal(t, sgam.Invalid, sgam.ErrorCode(err), "budget %d", budget)
				require.Contains(t, err.Error(), "budget")
				continue
			}
			require.LessOrEqual(t, c.Tokens, budget, "budget %d: %q", budget, q.Question)
			require.Equal(t, recall.Tokens(c.Rendered), c.Tokens)
		}
	}

	_, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: strings.Repeat("passport ", 200), TokenBudget: 64})
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Contains(t, err.Error(), "budget")
}

func TestBadQueries(t *testing.T) {
	w := newWorld(t)
	for field, q := range map[string]recall.Query{
		"tenant":         {Question: "x"},
		"question":       {Tenant: "acme"},
		"budget":         {Tenant: "acme", Question: "x", TokenBudget: 10},
		"evidence_limit": {Tenant: "acme", Question: "x", EvidenceLimit: -2},
		"evidence":       {Tenant: "acme", Question: "x", Evidence: "sometimes"},
		"hops":           {Tenant: "acme", Question: "x", Hops: 9},
		"subjects[1]":    {Tenant: "acme", Question: "x", Subjects: []string{"a", " b"}},
		"attributes[0]":  {Tenant: "acme", Question: "x", Attributes: []string{"a b"}},
		"session":        {Tenant: "acme", Question: "x", Session: "a\nb"},
	} {
		_, err := w.r.Recall(w.ctx, q)
		var e *sgam.Error
		require.ErrorAs(t, err, &e, field)
		require.Equal(t, sgam.Invalid, e.Code, field)
		require.Equal(t, field, e.Field)
	}
	// A question of spaces asks nothing; one with a control character
	// (other than a tab or a line break) is refused, as ids are.
	for _, q := range []string{" \t\n ", "a\x00b", "deadline\x1b[2J", "x\u0085y"} {
		_, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: q})
		var e *sgam.Error
		require.ErrorAs(t, err, &e, "%q", q)
		require.Equal(t, "question", e.Field, "%q", q)
	}
	w.passport("acme")
	multi, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: "When is\tMira's passport\r\ndeadline?"})
	require.NoError(t, err)
	require.NotEmpty(t, multi.Facts)
	// A subject named twice is asked once.
	twice, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: "deadline", Subjects: []string{"mira", "mira"}})
	require.NoError(t, err)
	require.Equal(t, []string{"mira"}, twice.Subjects)
	require.Len(t, twice.Facts, 1)

	_, err = w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: "x", Evidence: recall.EvidenceNone, EvidenceLimit: 3})
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Contains(t, err.Error(), "evidence_limit", "a limit for no evidence contradicts itself")
	none, err := w.r.Recall(w.ctx, recall.Query{Tenant: "acme", Question: "x", Evidence: recall.EvidenceNone})
	require.NoError(t, err)
	require.Empty(t, none.Evidence)
	require.Empty(t, none.Search, "no search was made")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./recall -update to write %s", path)
	require.Equal(t, string(want), got)
}

// TestBeliefBeforeARename: a question that names a renamed attribute,
// read at a known_at before the migration, answers with the row of the
// old name that was believed then.
func TestBeliefBeforeARename(t *testing.T) {
	w := newWorld(t)
	_, err := w.store.ApplySchema(w.ctx, "shop", []byte("attributes:\n  tier: {memory: account, type: {enum: [basic, premium]}}\n"), false)
	require.NoError(t, err)
	w.say("shop", "m1", "2026-07-01T09:00:00Z", "2026-07-01T09:00:00Z", "cust-9 upgraded to premium.", "cust-9", "tier", `"premium"`)
	w.clock.Set(ts(t, "2026-07-10T00:00:00Z"))
	_, err = w.store.ApplySchema(w.ctx, "shop", []byte(`attributes:
  plan: {memory: account, type: {enum: [basic, premium]}, aliases: [tier]}
migrations:
  - {name: tier-to-plan, rename: {from: tier, to: plan}, dual_read_until: 2026-08-01T00:00:00Z}
`), false)
	require.NoError(t, err)
	_, err = w.store.Migrate(w.ctx, sgam.MigrateOptions{})
	require.NoError(t, err)
	w.clock.Set(ts(t, "2026-07-11T00:00:00Z"))

	for _, q := range []string{"What plan is cust-9 on?", "What tier is cust-9 on?"} {
		now := w.recall(recall.Query{Tenant: "shop", Question: q})
		require.Equal(t, []string{`"premium"@m1`}, values(now, recall.Current), q)
		require.Equal(t, "plan", now.Facts[0].Attribute)
		before := w.recall(recall.Query{Tenant: "shop", Question: q, KnownAt: ts(t, "2026-07-09T00:00:00Z")})
		require.Equal(t, []string{`"premium"@m1`}, values(before, recall.Current), q)
		require.Equal(t, "tier", before.Facts[0].Attribute, "the row as it was believed")
	}

	// Without a migration, "before the migration" moves neither instant.
	w.passport("acme")
	c := w.recall(recall.Query{Tenant: "acme", Question: "What was Mira's passport deadline before the migration?"})
	require.Equal(t, "now", c.Instants.AsOf)
	require.Contains(t, c.Instants.KnownAt, "no migration")
	require.Equal(t, c.AsOf, c.KnownAt)
}
