package extract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/internal/llamatest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// These tests run extraction against llama.cpp's llama-server with a real
// model (internal/llamatest): what sgam guarantees whatever a model
// answers, proven on a real server's wire format, grammar-constrained
// decoding and token counts. They assert nothing about what the 135M
// model extracts: only that each of its proposals is written grounded,
// typed and declared, or rejected with its reason, and nothing else.
//
// The server runs with llamatest's --repeat-penalty 1.3: without it this
// model, at temperature 0, repeats one update until max_tokens under every
// prompt sgam builds, and every extraction ends with the answer cut
// (too_large), so that no answer is ever parsed.

// realSchema is a tenant's schema of the kinds of attributes a support
// agent keeps: an enum with an old name, a relation, a set, a date, text.
const realSchema = `
attributes:
  plan:
    memory: account
    type: {enum: [free, pro, enterprise]}
    description: the subscription plan the customer is on
    aliases: [tier]
  account_manager:
    memory: account
    type: {ref: person}
    description: the id of the person who manages the customer's account
  interests:
    memory: profile
    type: string
    cardinality: many
    description: topics the customer asks about, one per member
  renewal_date:
    memory: task
    type: date
    description: the date by which the contract must be renewed
  city:
    memory: profile
    type: string
    description: the city the customer lives in
`

// realMaxTokens bounds an answer: this model writes ~45 tokens a second
// on one thread (fewer under a grammar), and an answer that does not end
// costs no more than this. Its answers that end are 60 to 150 tokens.
const realMaxTokens = 144

// serverAnswer is what the server answered one request, as a Rewrite
// proxy saw it.
type serverAnswer struct {
	Path             string
	Error            string // an error answer's body
	Content          string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	HasUsage         bool
}

// recorder keeps the server's answers that passed through its proxy.
type recorder struct {
	mu      sync.Mutex
	answers []serverAnswer
}

// record reads a chat completion (or an error answer) of the server.
func (r *recorder) record(path string, body []byte) {
	var cc struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	a := serverAnswer{Path: path}
	if err := json.Unmarshal(body, &cc); err != nil {
		a.Error = string(body)
	}
	if len(cc.Error) > 0 {
		a.Error = string(cc.Error)
	}
	if len(cc.Choices) > 0 {
		a.Content, a.FinishReason = cc.Choices[0].Message.Content, cc.Choices[0].FinishReason
	}
	if cc.Usage != nil {
		a.HasUsage, a.PromptTokens, a.CompletionTokens = true, cc.Usage.PromptTokens, cc.Usage.CompletionTokens
	}
	r.mu.Lock()
	r.answers = append(r.answers, a)
	r.mu.Unlock()
}

func (r *recorder) all() []serverAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.answers)
}

// realEnv is a store with realSchema in force for tenant acme, and an
// extractor asking llama-server through a proxy that records its answers
// and passes each through rewrite (nil: unchanged).
type realEnv struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	sch   *schema.Schema
	rec   *recorder
	x     *extract.Extractor
}

func newRealEnv(t *testing.T, srv *llamatest.Server, mode llm.Mode, maxTokens int, schemaFile string, rewrite func(body []byte) []byte) *realEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "real.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.ApplySchema(ctx, "acme", []byte(schemaFile), false)
	require.NoError(t, err)
	sch, err := schema.Parse([]byte(schemaFile))
	require.NoError(t, err)
	rec := &recorder{}
	url := srv.Rewrite(func(path string, body []byte) []byte {
		if path != "/v1/chat/completions" {
			return body
		}
		rec.record(path, body)
		if rewrite != nil {
			return rewrite(body)
		}
		return body
	})
	// Two attempts, so that a retry would show in the count of calls.
	model, err := llm.New(llm.Config{BaseURL: url, Model: srv.Model, Mode: mode, MaxTokens: maxTokens,
		Timeout: 3 * time.Minute, MaxAttempts: 2, MaxBackoff: time.Second})
	require.NoError(t, err)
	return &realEnv{t: t, ctx: ctx, store: st, sch: sch, rec: rec, x: extract.New(st, model)}
}

// add captures an episode of acme in session s1.
func (e *realEnv) add(id, content string, occurred time.Time) sgam.Episode {
	ep, err := e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "acme", ID: id, Session: "s1", Kind: sgam.KindMessage, Content: content, OccurredAt: occurred})
	require.NoError(e.t, err)
	return ep
}

// extractOne extracts ep and returns the result, the error and the one
// answer the server gave it.
func (e *realEnv) extractOne(ep sgam.Episode) (extract.Result, serverAnswer, error) {
	t := e.t
	before := len(e.rec.all())
	start := time.Now()
	res, err := e.x.Extract(e.ctx, "acme", ep.ID, extract.Options{})
	answers := e.rec.all()[before:]
	t.Logf("%s: %s in %s, %d+%d tokens, %d accepted, %d rejected, %d unchanged, error %v; the model answered (%s):\n%s",
		ep.ID, res.Record.Status, time.Since(start).Round(time.Millisecond), res.Record.TokensIn, res.Record.TokensOut,
		len(res.Record.Accepted), len(res.Record.Rejected), res.Record.Unchanged, err, answerFinish(answers), clipText(res.Record.RawOutput, 800))
	require.Len(t, answers, 1, "exactly one model call per episode")
	require.Equal(t, 1, res.Record.Calls, "one call, no retry")
	a := answers[0]
	require.Empty(t, a.Error, "the server accepts the request sgam sends (its output schema, its mode)")
	return res, a, err
}

func answerFinish(as []serverAnswer) string {
	var out []string
	for _, a := range as {
		out = append(out, "finish_reason "+a.FinishReason)
	}
	return strings.Join(out, ", ")
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkAttempt asserts what sgam guarantees of one extraction attempt,
// whatever the model answered: the record is the one stored; its tokens
// are the server's count (unless estimated says they are sgam's); an
// answer cut at max_tokens or unusable fails the attempt, coded, and
// writes nothing; a usable one is decoded whole, and every proposal in
// it is either written (grounded in the episode, typed, declared) or
// rejected with its reason.
func (e *realEnv) checkAttempt(ep sgam.Episode, res extract.Result, err error, a serverAnswer, estimated bool) {
	t := e.t
	rec := res.Record
	recs, lerr := e.store.Extractions(e.ctx, "acme", ep.ID)
	require.NoError(t, lerr)
	require.NotEmpty(t, recs)
	require.Equal(t, rec, recs[len(recs)-1], "the record returned is the one stored")
	require.Equal(t, a.Content, rec.RawOutput, "the record keeps the answer as the server gave it")
	require.False(t, rec.Cached)

	warnings := strings.Join(rec.Warnings, "\n")
	if estimated {
		require.Contains(t, warnings, "sgam's estimate is counted")
	} else {
		require.True(t, a.HasUsage)
		require.Equal(t, a.PromptTokens, rec.TokensIn, "the server's count of the prompt")
		require.Equal(t, a.CompletionTokens, rec.TokensOut, "the server's count of the answer")
		require.NotContains(t, warnings, "estimate", "the server's count is plausible: not replaced")
	}
	require.Positive(t, rec.TokensIn)
	require.Positive(t, rec.TokensOut)

	if err != nil {
		// A failed attempt: coded (never internal), recorded with its
		// reason, and nothing of the answer written.
		require.Equal(t, sgam.ExtractionFailed, rec.Status)
		require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "a bad answer is the model's fault: %v", err)
		require.Equal(t, err.Error(), rec.Error)
		require.Empty(t, rec.Accepted)
		require.Empty(t, rec.Facts)
		var le *llm.Error
		var ae *extract.AnswerError
		switch {
		case a.FinishReason == "length":
			require.ErrorAs(t, err, &le)
			require.Equal(t, llm.KindTooLarge, le.Kind)
			require.Contains(t, rec.Error, "max_tokens")
			require.False(t, sgam.Retryable(err), "the same request would be cut again")
			require.True(t, rec.GaveUp)
		case errors.As(err, &ae):
			require.True(t, sgam.Retryable(err), "the model may answer better")
			require.False(t, rec.GaveUp)
			require.True(t, strings.HasPrefix(rec.Error, "the model's answer is unusable: "), rec.Error)
			if llm.EchoesSchema(llm.Clean(a.Content)) {
				require.Contains(t, rec.Error, "the answer is the JSON Schema itself")
			}
		default:
			t.Fatalf("an attempt the server answered failed with %v", err)
		}
		e.requireNothingFrom(ep)
		return
	}

	// A usable answer: every update in it is accounted for, once.
	require.NotEqual(t, "length", a.FinishReason)
	require.Contains(t, []string{sgam.ExtractionDone, sgam.ExtractionRejected}, rec.Status)
	require.Empty(t, rec.Error)
	var top struct {
		Updates []json.RawMessage `json:"updates"`
	}
	require.NoError(t, json.Unmarshal([]byte(llm.Clean(a.Content)), &top), "a usable answer parses")
	require.Equal(t, len(top.Updates), len(rec.Accepted)+len(rec.Rejected)+rec.Unchanged,
		"every proposal is written, rejected or counted unchanged")
	require.Equal(t, len(rec.Accepted) == 0 && len(rec.Rejected) > 0, rec.Status == sgam.ExtractionRejected,
		"rejected: every proposal was, none accepted")
	seen := map[int]bool{}
	episode := normQuote(ep.Content)
	for _, c := range rec.Accepted {
		require.False(t, seen[c.Index], "update %d counted once", c.Index)
		seen[c.Index] = true
		require.Contains(t, episode, normQuote(c.Evidence), "update %d: the evidence is a quote of the episode", c.Index)
		a, ok := e.sch.Attribute(c.Attribute)
		require.True(t, ok, "update %d: %s is declared", c.Index, c.Attribute)
		require.Equal(t, a.Name, c.Attribute, "stored under the attribute's name")
		require.NoError(t, sgam.CheckSubject(c.Subject))
		if len(c.Value) > 0 {
			v, err := a.Value(c.Value)
			require.NoError(t, err, "update %d: the value is of the attribute's type", c.Index)
			require.Equal(t, string(v), string(c.Value), "stored in canonical form")
		} else {
			require.Equal(t, extract.ChangeRetract, c.Change, "only a retraction has no value")
		}
		require.False(t, c.ValidFrom.Before(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)))
		require.False(t, c.ValidFrom.After(ep.OccurredAt.Add(48*time.Hour)), "no valid_from past the episode's bound")
		switch c.Outcome {
		case sgam.OutcomeWritten, sgam.OutcomeUnchanged:
			require.NotZero(t, c.FactID)
			require.Contains(t, rec.Facts, c.FactID)
		case sgam.OutcomeKept:
			require.NotZero(t, c.FactID)
		case sgam.OutcomePending:
			require.NotEmpty(t, c.PendingID)
		default:
			t.Fatalf("update %d: outcome %q", c.Index, c.Outcome)
		}
	}
	reasons := []string{sgam.RejectUngrounded, sgam.RejectUnknownAttribute, sgam.RejectInvalidValue, sgam.RejectInvalidSubject,
		sgam.RejectInvalidTime, sgam.RejectInvalidChange, sgam.RejectUnexpectedField, sgam.RejectMalformed, sgam.RejectConflict}
	for _, r := range rec.Rejected {
		require.False(t, seen[r.Index], "update %d counted once", r.Index)
		seen[r.Index] = true
		require.Contains(t, reasons, r.Reason)
		require.NotEmpty(t, r.Message)
		require.True(t, json.Valid(r.Update), "the update as the model wrote it")
		require.JSONEq(t, string(top.Updates[r.Index]), string(r.Update))
	}
	// Every row the episode is a source of is one its record names.
	e.requireRowsRecorded(ep)
}

// normQuote is text as grounding compares a quote: case, runs of white
// space, typographic quotes and dashes aside.
func normQuote(s string) string {
	s = strings.NewReplacer("‘", "'", "’", "'", "“", `"`, "”", `"`, "–", "-", "—", "-", "−", "-").Replace(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

// requireNothingFrom asserts that no row and no pending candidate has ep
// as its source.
func (e *realEnv) requireNothingFrom(ep sgam.Episode) {
	t := e.t
	subs, err := e.store.SubjectsFrom(e.ctx, "acme", []string{ep.ID}, time.Time{})
	require.NoError(t, err)
	require.Empty(t, subs, "nothing written from %s", ep.ID)
	pend, err := e.store.Pending(e.ctx, sgam.PendingQuery{Tenant: "acme"})
	require.NoError(t, err)
	for _, p := range pend {
		require.NotEqual(t, ep.ID, p.Source)
	}
}

// requireRowsRecorded asserts that every row of the tenant that ep is a
// source of is named by one of ep's records: nothing half-written, nothing
// written that no record accounts for.
func (e *realEnv) requireRowsRecorded(ep sgam.Episode) {
	t := e.t
	recs, err := e.store.Extractions(e.ctx, "acme", ep.ID)
	require.NoError(t, err)
	var ids []int64
	var subjects []string
	for _, r := range recs {
		ids = append(ids, r.Facts...)
		subjects = append(subjects, r.Subjects...)
	}
	from, err := e.store.SubjectsFrom(e.ctx, "acme", []string{ep.ID}, time.Time{})
	require.NoError(t, err)
	for _, s := range from {
		require.Contains(t, subjects, s, "a subject written is one the record names")
	}
	if len(from) == 0 {
		return
	}
	rows, err := e.store.FactsFrom(e.ctx, "acme", []string{ep.ID}, from, time.Time{})
	require.NoError(t, err)
	for _, f := range rows {
		if slices.Contains(f.Sources, ep.ID) {
			require.Contains(t, ids, f.ID, "row %d from %s is in its record", f.ID, ep.ID)
		}
	}
}

// requireConsistent asserts the store's invariants hold and the tenant's
// budget counts exactly the tokens of its records.
func (e *realEnv) requireConsistent(ids ...string) {
	t := e.t
	vs, err := e.store.Check(e.ctx)
	require.NoError(t, err)
	require.Empty(t, vs, "the ledger's invariants hold")
	total := 0
	for _, id := range ids {
		recs, err := e.store.Extractions(e.ctx, "acme", id)
		require.NoError(t, err)
		for _, r := range recs {
			total += r.TokensIn + r.TokensOut
		}
	}
	b, err := e.store.Budget(e.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, total, b.SpentToday, "the budget counts every record's tokens")
}

// TestRealExtraction runs extraction against one llama-server, each part
// on a store of its own.
func TestRealExtraction(t *testing.T) {
	srv := llamatest.Chat(t)
	t.Run("json_schema", func(t *testing.T) { realJSONSchema(t, srv) })
	t.Run("json_object", func(t *testing.T) { realJSONObject(t, srv) })
	t.Run("grammar_is_no_validation", func(t *testing.T) { realGrammarIsNoValidation(t, srv) })
	t.Run("no_usage", func(t *testing.T) { realAnswerWithoutUsage(t, srv) })
}

// realEpisodes are short messages of one session.
var realEpisodes = []struct{ id, content string }{
	{"e1", "Mira: we moved to the pro plan, and I live in Oslo now."},
	{"e2", "Mira: Jonas manages our account, and the contract renewal date is 2026-09-01."},
	{"e3", "Mira: I keep asking about billing exports and security audits."},
}

var realOccurred = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// realJSONSchema: extraction in json_schema mode, the
// server constraining the answer by the grammar it builds from sgam's
// output schema. The server takes the schema (no 400), each episode costs
// one call, a whole answer parses and each of its proposals is written
// grounded, typed and declared, or rejected with its reason; the record's
// tokens are the server's usage; the ledger's invariants hold.
func realJSONSchema(t *testing.T, srv *llamatest.Server) {
	e := newRealEnv(t, srv, llm.JSONSchema, realMaxTokens, realSchema, nil)
	var ids []string
	parsed := 0
	for i, r := range realEpisodes {
		ep := e.add(r.id, r.content, realOccurred.Add(time.Duration(i)*5*time.Minute))
		res, a, err := e.extractOne(ep)
		e.checkAttempt(ep, res, err, a, false)
		if err == nil {
			parsed++
		}
		ids = append(ids, ep.ID)
	}
	e.requireConsistent(ids...)
	// The grammar holds the answer to sgam's output schema: an answer
	// that ended is valid under it.
	for _, a := range e.rec.all() {
		if a.FinishReason == "stop" {
			requireValidUnder(t, extract.OutputSchema(e.sch), []byte(a.Content))
		}
	}
	require.Positive(t, parsed, "at least one answer of the real model ended and was decoded (else this test proves little)")
}

// realJSONObject: json_object mode, the schema only in the
// prompt, which this small model often echoes or ignores: an answer that
// is not {"updates": [...]} fails the attempt, with the reason in its
// record and a coded error, and writes nothing; one that is gets the same
// guarantees as in json_schema mode.
func realJSONObject(t *testing.T, srv *llamatest.Server) {
	e := newRealEnv(t, srv, llm.JSONObject, realMaxTokens, realSchema, nil)
	var ids []string
	for i, r := range realEpisodes[:2] {
		ep := e.add(r.id, r.content, realOccurred.Add(time.Duration(i)*5*time.Minute))
		res, a, err := e.extractOne(ep)
		e.checkAttempt(ep, res, err, a, false)
		ids = append(ids, ep.ID)
	}
	e.requireConsistent(ids...)
}

// forgedSchema adds to realSchema attributes whose values are JSON under a
// JSON Schema: constraints sgam's output schema never carries (a value is
// a string there), some of which (uniqueItems, a number's maximum)
// llama.cpp's converter ignores wherever a schema has them.
const forgedSchema = realSchema + `
  shipping:
    memory: profile
    json_schema: {type: object, additionalProperties: false, required: [zip], properties: {zip: {type: string, pattern: "^[0-9]{4,5}$"}}}
    description: where orders ship to
  lucky_numbers:
    memory: profile
    json_schema: {type: array, uniqueItems: true, items: {type: number, maximum: 99}}
`

// realGrammarIsNoValidation: the constraints that matter to a value
// are not the server's to enforce. sgam's output schema holds every
// value as a string (read by the attribute's type: a date, one of an
// enum, JSON under the attribute's JSON Schema), and valid_from and the
// subject as strings, described but not constrained: so a grammar built
// from it, as llama.cpp builds one, lets through "premium" for an enum,
// "next autumn" for a date, a zip that breaks its pattern, a list with a
// repeated member and a number over its maximum (uniqueItems and a
// number's maximum llama.cpp's converter ignores even where a schema has
// them), "soon" for valid_from, a path for a subject. A real answer with
// those forged in, valid under the output schema, gets each of them
// rejected with its reason, and only the good update written.
func realGrammarIsNoValidation(t *testing.T, srv *llamatest.Server) {
	content := "Mira: ship to zip 12345, not 1234567. My lucky numbers are 7, 7 and 120. Put us on the premium plan from next autumn."
	type up struct {
		Evidence     string  `json:"evidence"`
		Subject      string  `json:"subject"`
		Attribute    string  `json:"attribute"`
		CurrentValue *string `json:"current_value"`
		Change       string  `json:"change"`
		Value        *string `json:"value"`
		ValidFrom    *string `json:"valid_from"`
	}
	s := func(v string) *string { return &v }
	forged := []up{
		{"ship to zip 12345", "mira", "shipping", nil, "new", s(`{"zip":"12345"}`), nil},              // good
		{"not 1234567", "mira", "shipping", nil, "update", s(`{"zip":"1234567"}`), nil},               // pattern
		{"My lucky numbers are 7, 7 and 120", "mira", "lucky_numbers", nil, "new", s(`[7,7]`), nil},   // uniqueItems
		{"Put us on the premium plan", "mira", "plan", nil, "new", s("premium"), nil},                 // not in the enum
		{"from next autumn", "mira", "renewal_date", nil, "new", s("next autumn"), nil},               // not a date
		{"ship to zip 12345", "mira", "shipping", nil, "new", s(`{"zip":"12345"}`), s("soon")},        // valid_from
		{"ship to zip 12345", "../beta/mira", "shipping", nil, "new", s(`{"zip":"12345"}`), nil},      // subject
		{"My lucky numbers are 7, 7 and 120", "mira", "lucky_numbers", nil, "new", s(`[7,120]`), nil}, // maximum
	}
	want := []string{"", sgam.RejectInvalidValue, sgam.RejectInvalidValue, sgam.RejectInvalidValue, sgam.RejectInvalidValue,
		sgam.RejectInvalidTime, sgam.RejectInvalidSubject, sgam.RejectInvalidValue}
	answer, err := json.Marshal(map[string]any{"updates": forged})
	require.NoError(t, err)

	// The forged answer is one the server's grammar would have let
	// through: it is valid under the output schema sgam sends.
	sch, err := schema.Parse([]byte(forgedSchema))
	require.NoError(t, err)
	requireValidUnder(t, extract.OutputSchema(sch), answer)

	// The model's own answer is not used: 32 tokens of it will do.
	e := newRealEnv(t, srv, llm.JSONSchema, 32, forgedSchema, func(body []byte) []byte {
		// The real completion (its id, usage, finish), its content forged.
		// (An answer of another shape goes through, and fails the test.)
		var cc struct {
			Choices []map[string]any `json:"choices"`
		}
		var all map[string]any
		if json.Unmarshal(body, &cc) != nil || json.Unmarshal(body, &all) != nil || len(cc.Choices) == 0 {
			return body
		}
		cc.Choices[0]["message"] = map[string]any{"role": "assistant", "content": string(answer)}
		cc.Choices[0]["finish_reason"] = "stop"
		all["choices"] = cc.Choices
		out, err := json.Marshal(all)
		if err != nil {
			return body
		}
		return out
	})
	_, err = e.store.AddEpisode(e.ctx, sgam.Episode{Tenant: "beta", ID: "e1", Content: content, OccurredAt: realOccurred})
	require.NoError(t, err)
	ep := e.add("e1", content, realOccurred)
	res, a, xerr := e.extractOne(ep)
	require.NoError(t, xerr)
	rec := res.Record
	require.Equal(t, sgam.ExtractionDone, rec.Status)
	require.Len(t, rec.Accepted, 1)
	require.Equal(t, 0, rec.Accepted[0].Index)
	require.Equal(t, sgam.OutcomeWritten, rec.Accepted[0].Outcome)
	require.Len(t, rec.Rejected, len(forged)-1)
	for _, r := range rec.Rejected {
		require.Equal(t, want[r.Index], r.Reason, "update %d: %s", r.Index, r.Message)
	}
	// The server's count stays: the content the proxy forged is within
	// what max_tokens allows.
	e.checkAttempt(ep, res, xerr, serverAnswer{Content: string(answer), FinishReason: "stop", HasUsage: a.HasUsage,
		PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens}, false)

	st, err := e.store.State(e.ctx, "acme", "mira", sgam.At{})
	require.NoError(t, err)
	require.Len(t, st, 1, "only the good update is memory")
	require.Equal(t, "shipping", st[0].Attribute)
	require.Equal(t, `{"zip":"12345"}`, string(st[0].Value))
	other, err := e.store.SubjectsFrom(e.ctx, "beta", []string{"e1"}, time.Time{})
	require.NoError(t, err)
	require.Empty(t, other, "nothing written outside the episode's tenant")
	e.requireConsistent("e1")
}

// requireValidUnder validates doc against the JSON Schema sch.
func requireValidUnder(t *testing.T, sch, doc []byte) {
	t.Helper()
	s, err := jsonschema.UnmarshalJSON(bytes.NewReader(sch))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("output.json", s))
	compiled, err := c.Compile("output.json")
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	require.NoError(t, compiled.Validate(v))
}

// realAnswerWithoutUsage: a real answer whose usage a server left out
// (a proxy deletes it): the record counts sgam's estimate (a quarter of
// the bytes of the prompt it sent, and of the answer), says so, and the
// tenant's budget counts those tokens: a budget of exactly that many is
// spent, and the next extraction is refused before any call.
func realAnswerWithoutUsage(t *testing.T, srv *llamatest.Server) {
	e := newRealEnv(t, srv, llm.JSONSchema, realMaxTokens, realSchema, func(body []byte) []byte {
		var cc map[string]json.RawMessage
		if json.Unmarshal(body, &cc) != nil {
			return body
		}
		delete(cc, "usage")
		out, err := json.Marshal(cc)
		if err != nil {
			return body
		}
		return out
	})
	ep := e.add("e1", realEpisodes[0].content, realOccurred)
	res, a, err := e.extractOne(ep)
	require.True(t, a.HasUsage, "the server counted")
	e.checkAttempt(ep, res, err, a, true)
	rec := res.Record
	p := res.Prompt
	require.Equal(t, llm.EstimateTokens(len(p.System)+len(p.User)+len(p.Schema)), rec.TokensIn, "a quarter of the prompt's bytes")
	require.Equal(t, llm.EstimateTokens(len(rec.RawOutput)), rec.TokensOut, "a quarter of the answer's bytes")
	e.requireConsistent("e1")

	spent := rec.TokensIn + rec.TokensOut
	require.NoError(t, e.store.SetBudget(e.ctx, "acme", spent))
	b, err := e.store.Budget(e.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, spent, b.SpentToday)
	require.True(t, b.Exhausted(), "the estimated tokens count against the budget")
	ep2 := e.add("e2", realEpisodes[1].content, realOccurred.Add(time.Minute))
	calls := len(e.rec.all())
	_, err = e.x.Extract(e.ctx, "acme", ep2.ID, extract.Options{})
	var be *extract.BudgetError
	require.ErrorAs(t, err, &be)
	require.Len(t, e.rec.all(), calls, "no call once the budget is spent")
}
