package extract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/store/sqlite"
)

const passportSchema = `
attributes:
  passport_deadline: {memory: task, type: date, description: "the date by which the passport must be renewed"}
  full_name: {memory: profile, type: string}
`

// The passport story as raw messages: told (e1), corrected (e2), and a
// letter from before both extracted late (e0).
var passport = []struct {
	id, occurred, recorded, content string
	reply                           llmtest.Reply
}{
	{"e1", "2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15.", llmtest.Reply{Updates: []llmtest.Update{
		{Evidence: "my passport renewal deadline is July 15", Subject: "mira", Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-07-15")}}}},
	{"e2", "2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15.", llmtest.Reply{Updates: []llmtest.Update{
		{Evidence: "the deadline is June 30", Subject: "mira", Attribute: "passport_deadline", CurrentValue: llmtest.S("2026-07-15"), Change: "update", Value: llmtest.S("2026-06-30")}}}},
	{"e0", "2026-05-30T08:00:00Z", "2026-06-05T12:00:00Z", "Consulate letter to Mira, extracted late: renew by August 1.", llmtest.Reply{Think: "The letter predates the other messages.", Updates: []llmtest.Update{
		{Evidence: "renew by August 1", Subject: "mira", Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-08-01")}}}},
}

type env struct {
	t     *testing.T
	ctx   context.Context
	clock *sgam.ManualClock
	store *sqlite.Store
	fake  *llmtest.Server
	x     *extract.Extractor
}

func newEnv(t *testing.T, mode llm.Mode, script llmtest.Script) *env {
	clock := &sgam.ManualClock{}
	clock.Set(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	fake := llmtest.New(t, "test-model", script)
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: fake.Model, Mode: mode, MaxBackoff: time.Second})
	require.NoError(t, err)
	return &env{t: t, ctx: context.Background(), clock: clock, store: st, fake: fake, x: extract.New(st, model).WithClock(clock)}
}

func (e *env) at(s string) time.Time {
	t, err := sgam.ParseTime("t", s)
	require.NoError(e.t, err)
	return t
}

func passportScript() llmtest.Script {
	replies := map[string]llmtest.Reply{}
	for _, p := range passport {
		replies[p.content] = p.reply
	}
	return llmtest.ByEpisode(replies)
}

// tell captures and extracts the passport story in tenant.
func (e *env) tell(tenant string) {
	for _, p := range passport {
		e.clock.Set(e.at(p.recorded))
		_, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: tenant, ID: p.id, Kind: sgam.KindMessage, Content: p.content, OccurredAt: e.at(p.occurred)})
		require.NoError(e.t, err)
		res, err := e.x.Extract(e.ctx, tenant, p.id, extract.Options{})
		require.NoError(e.t, err)
		require.Equal(e.t, sgam.ExtractionDone, res.Record.Status, res.Record.Error)
		require.Len(e.t, res.Record.Accepted, 1)
		require.Equal(e.t, sgam.OutcomeWritten, res.Record.Accepted[0].Outcome)
	}
}

func TestPassportStory(t *testing.T) {
	for _, mode := range llm.Modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, mode, passportScript())
			_, err := e.store.ApplyDefaultSchema(e.ctx, []byte(passportSchema), false)
			require.NoError(t, err)
			e.tell("demo")
			require.Equal(t, 3, e.fake.CallCount(), "one model call per episode")

			// The ledger equals the one sgam demo builds by hand.
			hand := handBuilt(t)
			key := sgam.Key{Tenant: "demo", Subject: "mira", Attribute: "passport_deadline"}
			for _, at := range []sgam.At{{}, {AsOf: e.at("2026-06-02T00:00:00Z")}, {AsOf: e.at("2026-05-31T00:00:00Z")},
				{AsOf: e.at("2026-06-04T00:00:00Z"), KnownAt: e.at("2026-06-03T09:59:00Z")},
				{AsOf: e.at("2026-05-31T00:00:00Z"), KnownAt: e.at("2026-06-04T00:00:00Z")}} {
				got, err := e.store.Get(e.ctx, key, at)
				require.NoError(t, err)
				want, err := hand.Get(e.ctx, key, at)
				require.NoError(t, err)
				require.Equal(t, want, got, "at %+v", at)
			}
			now, _ := e.store.Get(e.ctx, key, sgam.At{})
			require.Equal(t, `"2026-06-30"`, string(now.Value))
			require.Equal(t, []string{"e2"}, now.Sources)
			hist, err := e.store.History(e.ctx, key)
			require.NoError(t, err)
			handHist, err := hand.History(e.ctx, key)
			require.NoError(t, err)
			require.Equal(t, handHist, hist)

			// The prompt of e2 showed the stored July 15.
			calls := e.fake.Calls()
			require.Contains(t, calls[1].User, "passport_deadline = 2026-07-15")
			require.Contains(t, calls[1].User, "Reference time (when the episode occurred): 2026-06-03T10:00:00Z")
			// Its record says so, for forgetting: mira's data is in it.
			recs, err := e.store.Extractions(e.ctx, "demo", "e2")
			require.NoError(t, err)
			require.Contains(t, recs[0].Subjects, "mira")

			// Another tenant sees nothing of it.
			for _, at := range []sgam.At{{}, {AsOf: e.at("2026-06-02T00:00:00Z")}} {
				f, err := e.store.Get(e.ctx, sgam.Key{Tenant: "other", Subject: "mira", Attribute: "passport_deadline"}, at)
				require.NoError(t, err)
				require.Nil(t, f)
			}
			_, err = e.store.Extractions(e.ctx, "other", "e1")
			requireCode(t, err, sgam.NotFound)
			vs, err := e.store.Check(e.ctx)
			require.NoError(t, err)
			require.Empty(t, vs)
		})
	}
}

// handBuilt is the passport story as sgam demo writes it: the same
// assertions by hand, on the same clock.
func handBuilt(t *testing.T) *sqlite.Store {
	clock := &sgam.ManualClock{}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hand.db"), sqlite.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	clock.Set(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	_, err = st.ApplyDefaultSchema(ctx, []byte(passportSchema), false)
	require.NoError(t, err)
	for _, p := range passport {
		recorded, _ := sgam.ParseTime("t", p.recorded)
		occurred, _ := sgam.ParseTime("t", p.occurred)
		clock.Set(recorded)
		_, err := st.AddEpisode(ctx, sgam.Episode{Tenant: "demo", ID: p.id, Kind: sgam.KindMessage, Content: p.content, OccurredAt: occurred})
		require.NoError(t, err)
		v, _ := json.Marshal(*p.reply.Updates[0].Value)
		_, err = st.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: "demo", Subject: "mira", Attribute: "passport_deadline"}, Value: v, ValidFrom: occurred, Source: p.id})
		require.NoError(t, err)
	}
	return st
}

func TestNoSecondCall(t *testing.T) {
	e := newEnv(t, llm.JSONSchema, passportScript())
	_, err := e.store.ApplyDefaultSchema(e.ctx, []byte(passportSchema), false)
	require.NoError(t, err)
	e.tell("demo")
	calls := e.fake.CallCount()

	// An episode already extracted is never sent again.
	for _, p := range passport {
		res, err := e.x.Extract(e.ctx, "demo", p.id, extract.Options{})
		require.NoError(t, err)
		require.True(t, res.Skipped)
	}
	// Extracting again with nothing changed replays each prompt from its
	// record: the same prompt, no call, no tokens, no new row.
	before, err := e.store.History(e.ctx, sgam.Key{Tenant: "demo", Subject: "mira", Attribute: "passport_deadline"})
	require.NoError(t, err)
	for _, p := range passport {
		res, err := e.x.Extract(e.ctx, "demo", p.id, extract.Options{Again: true})
		require.NoError(t, err)
		require.True(t, res.Record.Cached, p.id)
		require.Zero(t, res.Record.TokensIn+res.Record.TokensOut)
		require.Equal(t, sgam.OutcomeUnchanged, res.Record.Accepted[0].Outcome)
	}
	require.Equal(t, calls, e.fake.CallCount())
	after, err := e.store.History(e.ctx, sgam.Key{Tenant: "demo", Subject: "mira", Attribute: "passport_deadline"})
	require.NoError(t, err)
	require.Len(t, after, len(before))
}

func TestRejectionsWriteNothing(t *testing.T) {
	content := "Mira: I'm 42, my name is Mira Lind, and the deadline is June 30."
	up := func(f func(*llmtest.Update)) llmtest.Update {
		u := llmtest.Update{Evidence: "the deadline is June 30", Subject: "mira", Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-06-30")}
		f(&u)
		return u
	}
	replies := []llmtest.Update{
		up(func(u *llmtest.Update) { u.Evidence = "the deadline is July 15" }),                                // ungrounded
		up(func(u *llmtest.Update) { u.Attribute = "age"; u.Value = llmtest.S("42"); u.Evidence = "I'm 42" }), // unknown attribute
		up(func(u *llmtest.Update) { u.Value = llmtest.S("end of June") }),                                    // wrong type
		up(func(u *llmtest.Update) { u.Subject = "" }),                                                        // bad subject
		up(func(u *llmtest.Update) { u.ValidFrom = llmtest.S("soon") }),                                       // bad valid_from
		up(func(u *llmtest.Update) { u.Extra = map[string]any{"tenant": "victim"} }),                          // smuggled tenant
		up(func(u *llmtest.Update) { u.Change = "no_change" }),                                                // dropped
	}
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(map[string]llmtest.Reply{content: {Updates: replies}}))
	_, err := e.store.ApplyDefaultSchema(e.ctx, []byte(passportSchema), false)
	require.NoError(t, err)
	for _, tenant := range []string{"acme", "victim"} {
		_, err = e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: tenant, ID: "e1", Content: content})
		require.NoError(t, err)
	}
	res, err := e.x.Extract(e.ctx, "acme", "e1", extract.Options{})
	require.NoError(t, err)
	rec := res.Record
	require.Equal(t, sgam.ExtractionRejected, rec.Status)
	require.Empty(t, rec.Accepted)
	require.Equal(t, 1, rec.Unchanged)
	var reasons []string
	for _, r := range rec.Rejected {
		reasons = append(reasons, r.Reason)
	}
	require.Equal(t, []string{sgam.RejectUngrounded, sgam.RejectUnknownAttribute, sgam.RejectInvalidValue, sgam.RejectInvalidSubject,
		sgam.RejectInvalidTime, sgam.RejectUnexpectedField}, reasons)
	for _, tenant := range []string{"acme", "victim"} {
		st, err := e.store.State(e.ctx, tenant, "mira", sgam.At{})
		require.NoError(t, err)
		require.Empty(t, st, "nothing written in %s", tenant)
	}
	stored, err := e.store.Extractions(e.ctx, "acme", "e1")
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Equal(t, rec, stored[0])
	none, err := e.store.Extractions(e.ctx, "victim", "e1")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestFailedAttempts(t *testing.T) {
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(nil))
	_, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "acme", ID: "e1", Content: "hello"})
	require.NoError(t, err)

	// A model error: recorded as failed, with the attempts and the error.
	e.fake.Fault(llmtest.Reply{Status: 400})
	_, err = e.x.Extract(e.ctx, "acme", "e1", extract.Options{})
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	// Malformed JSON: recorded as failed.
	e.fake.Fault(llmtest.Reply{Content: `{"updates": [`})
	_, err = e.x.Extract(e.ctx, "acme", "e1", extract.Options{})
	require.ErrorContains(t, err, "unusable")
	recs, err := e.store.Extractions(e.ctx, "acme", "e1")
	require.NoError(t, err)
	require.Len(t, recs, 2)
	for _, r := range recs {
		require.Equal(t, sgam.ExtractionFailed, r.Status)
		require.NotEmpty(t, r.Error)
	}
	// The next attempt asks again, and succeeds.
	res, err := e.x.Extract(e.ctx, "acme", "e1", extract.Options{})
	require.NoError(t, err)
	require.Equal(t, sgam.ExtractionDone, res.Record.Status)
	require.Equal(t, 3, e.fake.CallCount())

	// Without a model, an extraction says so; a dry run still builds the
	// prompt.
	_, err = e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "acme", ID: "e2", Content: "hi"})
	require.NoError(t, err)
	none := extract.New(e.store, nil)
	_, err = none.Extract(e.ctx, "acme", "e2", extract.Options{})
	require.ErrorIs(t, err, extract.ErrNoModel)
	dry, err := none.Extract(e.ctx, "acme", "e2", extract.Options{DryRun: true})
	require.NoError(t, err)
	require.Contains(t, dry.Prompt.User, "hi")
}

func requireCode(t *testing.T, err error, code sgam.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, sgam.ErrorCode(err), err.Error())
}

// TestNoChangeCorroborates: a no_change that holds the stored value makes
// its episode one more source of the row, so that forgetting the first
// source keeps the fact; a no_change of another value writes nothing.
func TestNoChangeCorroborates(t *testing.T) {
	first, again, other := "Mira: my passport deadline is June 30.", "Mira (form): passport deadline June 30.", "Mira (form): passport deadline July 1."
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(map[string]llmtest.Reply{
		first: {Updates: []llmtest.Update{{Evidence: "deadline is June 30", Subject: "mira", Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-06-30")}}},
		again: {Updates: []llmtest.Update{{Evidence: "passport deadline June 30", Subject: "mira", Attribute: "passport_deadline",
			CurrentValue: llmtest.S("2026-06-30"), Change: "no_change", Value: llmtest.S("2026-06-30")}}},
		other: {Updates: []llmtest.Update{{Evidence: "passport deadline July 1", Subject: "mira", Attribute: "passport_deadline",
			CurrentValue: llmtest.S("2026-06-30"), Change: "no_change", Value: llmtest.S("2026-07-01")}}},
	}))
	_, err := e.store.ApplyDefaultSchema(e.ctx, []byte(passportSchema), false)
	require.NoError(t, err)
	key := sgam.Key{Tenant: "demo", Subject: "mira", Attribute: "passport_deadline"}
	for i, content := range []string{first, again, other} {
		e.clock.Set(e.at("2026-06-01T09:00:00Z").Add(time.Duration(i) * time.Hour))
		id := fmt.Sprintf("e%d", i+1)
		_, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "demo", ID: id, Content: content, OccurredAt: e.clock.Now(), Subjects: []string{"mira"}})
		require.NoError(t, err)
		res, err := e.x.Extract(e.ctx, "demo", id, extract.Options{})
		require.NoError(t, err)
		switch id {
		case "e2":
			require.Len(t, res.Record.Accepted, 1)
			require.Equal(t, sgam.OutcomeUnchanged, res.Record.Accepted[0].Outcome)
			require.Equal(t, "no_change", res.Record.Accepted[0].Change)
		case "e3":
			require.Empty(t, res.Record.Accepted)
			require.Equal(t, 1, res.Record.Unchanged)
		}
	}
	hist, err := e.store.History(e.ctx, key)
	require.NoError(t, err)
	require.Len(t, hist, 1, "one row, no split")
	require.Equal(t, []string{"e1", "e2"}, hist[0].Sources)

	_, err = e.store.Forget(e.ctx, sgam.ForgetRequest{Tenant: "demo", Episode: "e1"})
	require.NoError(t, err)
	f, err := e.store.Get(e.ctx, key, sgam.At{})
	require.NoError(t, err)
	require.NotNil(t, f, "the fact another episode supports survives")
	require.Equal(t, []string{"e2"}, f.Sources)
}

// TestSubjectsByName: a text that calls a subject by one of its names
// (the built-in alias) brings the subject into play, with its stored
// values, though its id is nowhere in the text; a name the model reads in
// the text is stored as an alias in the form names are kept in. Another
// tenant with the same words has no such name and sees nothing.
func TestSubjectsByName(t *testing.T) {
	text := "Mira Chen called: she goes by Mimi, and her passport must be renewed by July 1."
	e := newEnv(t, llm.JSONSchema, llmtest.ByEpisode(map[string]llmtest.Reply{text: {Updates: []llmtest.Update{
		{Evidence: "her passport must be renewed by July 1", Subject: "cust-17", Attribute: "passport_deadline",
			CurrentValue: llmtest.S("2026-07-15"), Change: "update", Value: llmtest.S("2026-07-01")},
		{Evidence: "she goes by Mimi", Subject: "cust-17", Attribute: sgam.AliasAttribute, Change: "new", Value: llmtest.S("Mimi")},
	}}}))
	_, err := e.store.ApplyDefaultSchema(e.ctx, []byte(passportSchema), false)
	require.NoError(t, err)
	for _, tenant := range []string{"demo", "other"} {
		_, err = e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: tenant, ID: "ops", Kind: "tool", Content: "CRM record", OccurredAt: e.at("2026-01-01T00:00:00Z")})
		require.NoError(t, err)
		_, err = e.store.Assert(e.ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "cust-17", Attribute: "passport_deadline"},
			Value: []byte(`"2026-07-15"`), ValidFrom: e.at("2026-01-01T00:00:00Z"), Source: "ops"})
		require.NoError(t, err)
	}
	_, err = e.store.Add(e.ctx, sgam.Assertion{Key: sgam.Key{Tenant: "demo", Subject: "cust-17", Attribute: sgam.AliasAttribute},
		Value: []byte(`"Mira Chen"`), ValidFrom: e.at("2026-01-01T00:00:00Z"), Source: "ops"})
	require.NoError(t, err)

	e.clock.Set(e.at("2026-05-02T01:00:00Z"))
	prompts := map[string]string{}
	for _, tenant := range []string{"demo", "other"} {
		_, err = e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: tenant, ID: "call", Kind: sgam.KindMessage, Content: text, OccurredAt: e.at("2026-05-02T00:00:00Z")})
		require.NoError(t, err)
		res, err := e.x.Extract(e.ctx, tenant, "call", extract.Options{DryRun: tenant == "other"})
		require.NoError(t, err)
		prompts[tenant] = res.Prompt.User
	}
	require.Contains(t, prompts["demo"], "- cust-17:\n")
	require.Contains(t, prompts["demo"], "passport_deadline = 2026-07-15")
	require.Contains(t, prompts["demo"], "alias = mira chen")
	require.Contains(t, prompts["demo"], "- alias (string, a set", "the built-in attribute is offered")
	require.Contains(t, prompts["other"], "- none known", "another tenant has no such name")
	require.NotContains(t, prompts["other"], "cust-17")

	names, err := e.store.Members(e.ctx, sgam.Key{Tenant: "demo", Subject: "cust-17", Attribute: sgam.AliasAttribute}, sgam.At{})
	require.NoError(t, err)
	require.Len(t, names, 2)
	require.Equal(t, `"mimi"`, string(names[0].Value))
	f, err := e.store.Get(e.ctx, sgam.Key{Tenant: "demo", Subject: "cust-17", Attribute: "passport_deadline"}, sgam.At{})
	require.NoError(t, err)
	require.Equal(t, `"2026-07-01"`, string(f.Value))
}
