package extract_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/schema"
)

const testSchema = `
attributes:
  passport_deadline: {memory: task, type: date, description: "when the passport must be renewed"}
  age: {memory: profile, type: integer}
  vip: {memory: account, type: boolean}
  plan: {memory: account, type: {enum: [free, pro]}}
  tags: {memory: profile, type: string, cardinality: many}
  address: {memory: profile, json_schema: {type: object, required: [city], properties: {city: {type: string}}}}
`

func input(t testing.TB) extract.Input {
	sch, err := schema.Parse([]byte(testSchema))
	require.NoError(t, err)
	return extract.Input{
		Episode: sgam.Episode{Tenant: "acme", ID: "e2", Kind: "message", Session: "s1",
			Content:    "Mira: correction, the deadline is  June 30, not July 15. I’m 42 and a VIP.",
			OccurredAt: time.Date(2026, 6, 3, 10, 0, 0, 0, time.UTC)},
		Schema: sch, Version: 3,
		Subjects: []extract.Subject{{ID: "mira", Facts: []sgam.Fact{{Attribute: "passport_deadline", Value: []byte(`"2026-07-15"`),
			ValidFrom: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}}}},
	}
}

func answer(ups ...llmtest.Update) string {
	b, _ := json.Marshal(map[string]any{"updates": ups})
	return string(b)
}

func TestOutputSchemaIsStrictAndOrdered(t *testing.T) {
	in := input(t)
	raw := extract.OutputSchema(in.Schema)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	s := string(raw)
	last := -1
	for _, f := range []string{`"evidence":{`, `"subject":{`, `"attribute":{`, `"current_value":{`, `"change":{`, `"value":{`, `"valid_from":{`} {
		i := strings.Index(s, f)
		require.Greater(t, i, last, "%s in reasoning order", f)
		last = i
	}
	require.Contains(t, s, `"enum":["passport_deadline","age","vip","plan","tags","address","alias"]`, "the declared attributes, then the built-in alias")
	require.NotContains(t, s, "tenant")
	require.NotContains(t, s, `"source"`)
	// Without a schema the attribute is a free slug.
	require.NotContains(t, string(extract.OutputSchema(nil)), `"enum":["passport`)
}

func TestPrompt(t *testing.T) {
	in := input(t)
	in.Recent = []sgam.Episode{{Kind: "message", Content: "Mira: my passport renewal deadline is July 15.", OccurredAt: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}}
	p := extract.Build(in)
	require.Contains(t, p.User, "Reference time (when the episode occurred): 2026-06-03T10:00:00Z")
	require.Contains(t, p.User, "- passport_deadline (date YYYY-MM-DD, one value): when the passport must be renewed")
	require.Contains(t, p.User, "- tags (string, a set")
	require.Contains(t, p.User, "passport_deadline = 2026-07-15 (since 2026-06-01T09:00:00Z)")
	require.Contains(t, p.User, "context only")
	require.Equal(t, in.Episode.Content, llmtest.Call{User: p.User}.Episode(), "the fake finds the episode in the prompt")
	require.Equal(t, p.Digest("m", "json_schema"), extract.Build(in).Digest("m", "json_schema"), "the same input, the same prompt")
	require.NotEqual(t, p.Digest("m", "json_schema"), p.Digest("m", "tools"))
}

func TestDecodeAccepts(t *testing.T) {
	in := input(t)
	out, err := extract.Decode(in, answer(
		llmtest.Update{Evidence: "the deadline is june 30", Subject: "mira", Attribute: "passport_deadline", CurrentValue: llmtest.S("2026-07-15"),
			Change: "update", Value: llmtest.S("2026-06-30"), ValidFrom: nil},
		llmtest.Update{Evidence: "I'm 42", Subject: "mira", Attribute: "age", Change: "new", Value: llmtest.S(" 42 "), ValidFrom: llmtest.S("2026-06-03")},
		llmtest.Update{Evidence: "a VIP", Subject: "mira", Attribute: "vip", Change: "new", Value: llmtest.S("True")},
		llmtest.Update{Evidence: "a VIP", Subject: "mira", Attribute: "vip", Change: "no_change", Value: llmtest.S("true")},
	))
	require.NoError(t, err)
	require.Empty(t, out.Rejected)
	require.Equal(t, 4, out.Proposed)
	require.Equal(t, 1, out.Unchanged)
	require.Len(t, out.Writes, 3)
	w := out.Writes[0]
	require.Equal(t, `"2026-06-30"`, string(w.Value))
	require.Equal(t, in.Episode.OccurredAt, w.ValidFrom, "null valid_from is the episode's occurred_at")
	require.Equal(t, `42`, string(out.Writes[1].Value))
	require.Equal(t, time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC), out.Writes[1].ValidFrom)
	require.Equal(t, `true`, string(out.Writes[2].Value))
	require.Empty(t, out.Warnings)
}

func TestDecodeRejects(t *testing.T) {
	in := input(t)
	ok := llmtest.Update{Evidence: "June 30", Subject: "mira", Attribute: "passport_deadline", Change: "update", Value: llmtest.S("2026-06-30")}
	with := func(f func(*llmtest.Update)) llmtest.Update { u := ok; f(&u); return u }
	cases := []struct {
		name   string
		update any
		reason string
		field  string
	}{
		{"ungrounded", with(func(u *llmtest.Update) { u.Evidence = "the deadline is August 1" }), sgam.RejectUngrounded, "evidence"},
		{"empty quote", with(func(u *llmtest.Update) { u.Evidence = "  " }), sgam.RejectUngrounded, "evidence"},
		{"quote from the context", with(func(u *llmtest.Update) { u.Evidence = "my passport renewal deadline" }), sgam.RejectUngrounded, "evidence"},
		{"unknown attribute", with(func(u *llmtest.Update) { u.Attribute = "shoe_size" }), sgam.RejectUnknownAttribute, "attribute"},
		{"wrong type", with(func(u *llmtest.Update) { u.Attribute = "age"; u.Value = llmtest.S("forty-two") }), sgam.RejectInvalidValue, "value"},
		{"not a date", with(func(u *llmtest.Update) { u.Value = llmtest.S("June 30") }), sgam.RejectInvalidValue, "value"},
		{"not in the enum", with(func(u *llmtest.Update) { u.Attribute = "plan"; u.Value = llmtest.S("gold") }), sgam.RejectInvalidValue, "value"},
		{"json schema", with(func(u *llmtest.Update) { u.Attribute = "address"; u.Value = llmtest.S(`{"street":"x"}`) }), sgam.RejectInvalidValue, "value"},
		{"not json", with(func(u *llmtest.Update) { u.Attribute = "address"; u.Value = llmtest.S(`{city: x}`) }), sgam.RejectInvalidValue, "value"},
		{"null value", with(func(u *llmtest.Update) { u.Value = nil }), sgam.RejectInvalidValue, "value"},
		{"bad subject", with(func(u *llmtest.Update) { u.Subject = "" }), sgam.RejectInvalidSubject, "subject"},
		{"bad valid_from", with(func(u *llmtest.Update) { u.ValidFrom = llmtest.S("next Friday") }), sgam.RejectInvalidTime, "valid_from"},
		{"bad change", with(func(u *llmtest.Update) { u.Change = "replace" }), sgam.RejectInvalidChange, "change"},
		{"smuggled tenant", with(func(u *llmtest.Update) { u.Extra = map[string]any{"tenant": "beta"} }), sgam.RejectUnexpectedField, "tenant"},
		{"smuggled source", with(func(u *llmtest.Update) { u.Extra = map[string]any{"source": "e9"} }), sgam.RejectUnexpectedField, "source"},
		{"not an object", "mira", sgam.RejectMalformed, ""},
		{"missing subject", map[string]any{"evidence": "June 30", "attribute": "age", "change": "new", "value": "1"}, sgam.RejectMalformed, "subject"},
		{"evidence not a string", map[string]any{"evidence": 30, "subject": "mira", "attribute": "age", "change": "new", "value": "1"}, sgam.RejectMalformed, "evidence"},
		{"a set removal without a member", with(func(u *llmtest.Update) { u.Attribute = "tags"; u.Change = "retract"; u.Value = nil }), sgam.RejectInvalidValue, "value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]any{"updates": []any{c.update}})
			out, err := extract.Decode(in, string(b))
			require.NoError(t, err)
			require.Empty(t, out.Writes)
			require.Len(t, out.Rejected, 1)
			r := out.Rejected[0]
			require.Equal(t, c.reason, r.Reason, r.Message)
			require.Equal(t, c.field, r.Field)
			require.NotEmpty(t, r.Message)
			require.JSONEq(t, string(mustJSON(c.update)), string(r.Update))
		})
	}
}

func TestDecodeWarnsOnCurrentValue(t *testing.T) {
	in := input(t)
	out, err := extract.Decode(in, answer(llmtest.Update{Evidence: "June 30", Subject: "mira", Attribute: "passport_deadline",
		CurrentValue: llmtest.S("2026-08-01"), Change: "new", Value: llmtest.S("2026-06-30")}))
	require.NoError(t, err)
	require.Len(t, out.Writes, 1, "change and current_value are the model's reasoning, not authority")
	require.Len(t, out.Warnings, 1)
	require.Contains(t, out.Warnings[0], `the stored value is 2026-07-15`)

	out, err = extract.Decode(in, answer(llmtest.Update{Evidence: "June 30", Subject: "mira", Attribute: "passport_deadline",
		Change: "new", Value: llmtest.S("2026-06-30")}))
	require.NoError(t, err)
	require.Len(t, out.Warnings, 1)
	require.Contains(t, out.Warnings[0], `current_value null, but the stored value is 2026-07-15`, "null is not shown as \"\"")
}

func TestDecodeRefusesBadAnswers(t *testing.T) {
	in := input(t)
	for _, a := range []string{``, `not json`, `[]`, `{"updates": {}}`, `{"update": []}`, `{"updates": [], "tenant": "beta"}`,
		`{"updates": [], "updates": []}`, `{"updates": null}`, "{\"updates\": [\"\xff\"]}"} {
		_, err := extract.Decode(in, a)
		require.Error(t, err, a)
	}
	// Each says where, once, from the answer's top.
	for a, says := range map[string]string{
		`{"updates":[{"a":1,"a":2}]}`:   `the answer holds the key "a" twice in one object (at /updates/0)`,
		`{"updates":[],"updates":[]}`:   `the answer holds the key "updates" twice`,
		`{"updates":[{"value":1e400}]}`: "the answer holds the number 1e400, beyond the range of a 64-bit float (about ±1.8e308) (at /updates/0/value)",
		`nope`:                          "the answer is not valid JSON: expected null: 'n' at offset 0",
	} {
		_, err := extract.Decode(in, a)
		require.EqualError(t, err, says, a)
	}
	// A small model in json_object mode answered llama-server with the
	// schema of the prompt (seen in TestDoctorRealServer): said so.
	_, err := extract.Decode(in, `{"type":"object","properties":{"updates":{"type":"array"}}}`)
	require.ErrorContains(t, err, "the answer is the JSON Schema itself")
}

func TestRetractOfASetNamesTheMember(t *testing.T) {
	in := input(t)
	in.Episode.Content = "Mira no longer likes jazz."
	out, err := extract.Decode(in, answer(llmtest.Update{Evidence: "no longer likes jazz", Subject: "mira", Attribute: "tags",
		Change: "retract", Value: llmtest.S("jazz")}))
	require.NoError(t, err)
	require.Len(t, out.Writes, 1)
	require.True(t, out.Writes[0].Retract)
	require.True(t, out.Writes[0].Set)
	require.Equal(t, `"jazz"`, string(out.Writes[0].Value))
}

func FuzzDecode(f *testing.F) {
	in := input(f)
	f.Add(answer(llmtest.Update{Evidence: "June 30", Subject: "mira", Attribute: "passport_deadline", Change: "update", Value: llmtest.S("2026-06-30")}))
	f.Add(`{"updates":[{"evidence":"42","subject":"mira","attribute":"age","change":"new","value":42,"valid_from":"2026-13-01"}]}`)
	f.Add(`{"updates":[{"tenant":"x"}, 1, null, []]}`)
	f.Add(`{"updates":[{"evidence":"VIP","subject":"mira","attribute":"address","change":"new","value":"{\"city\":\"Oslo\"}"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		out, err := extract.Decode(in, s)
		if err != nil {
			return
		}
		require.Equal(t, out.Proposed, len(out.Writes)+len(out.Rejected)+out.Unchanged)
		for _, w := range out.Writes {
			// Everything accepted is grounded, typed and valid for the store.
			require.Contains(t, strings.ToLower(strings.Join(strings.Fields(in.Episode.Content), " ")),
				strings.ToLower(strings.Join(strings.Fields(strings.NewReplacer("’", "'", "‘", "'").Replace(w.Evidence)), " ")))
			require.NoError(t, sgam.CheckSubject(w.Subject))
			a, ok := in.Schema.Attribute(w.Attribute)
			require.True(t, ok)
			if !w.Retract {
				v, err := a.Value(w.Value)
				require.NoError(t, err)
				require.Equal(t, string(v), string(w.Value), "canonical")
			}
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
