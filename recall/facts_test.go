package recall

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptr(t time.Time) *time.Time { return &t }

// row is a fact row of mira's deadline, valid from day from (of June
// 2026) to day to (0: open), recorded on day rec and retracted on day ret
// (0: believed still).
func row(id int64, from, to, rec, ret int) sgam.Fact {
	day := func(d int) time.Time { return time.Date(2026, 6, d, 0, 0, 0, 0, time.UTC) }
	f := sgam.Fact{ID: id, Tenant: "acme", Subject: "mira", Attribute: "deadline", Value: json.RawMessage(`"x"`), ValidFrom: day(from), RecordedAt: day(rec)}
	if to > 0 {
		f.ValidTo = ptr(day(to))
	}
	if ret > 0 {
		f.RetractedAt = ptr(day(ret))
	}
	return f
}

func TestSuperseded(t *testing.T) {
	asOf := sgam.At{AsOf: at("2026-06-20T00:00:00Z"), KnownAt: at("2026-06-25T00:00:00Z")}
	tomb := row(9, 12, 14, 12, 0)
	tomb.Tombstone = true
	for _, tc := range []struct {
		name string
		rows []sgam.Fact
		want []int64
	}{
		{"none ended", []sgam.Fact{row(1, 1, 0, 1, 0)}, nil},
		{"ended by as_of, newest first", []sgam.Fact{row(1, 1, 5, 1, 0), row(2, 5, 10, 5, 0), row(3, 10, 0, 10, 0)}, []int64{2, 1}},
		{"ended after as_of: still held then", []sgam.Fact{row(1, 1, 22, 1, 0)}, nil},
		{"retracted by known_at, or recorded after it", []sgam.Fact{row(1, 1, 5, 1, 6), row(2, 1, 5, 26, 0), row(3, 1, 5, 1, 30)}, []int64{3}},
		{"a tombstone is no value", []sgam.Fact{tomb}, nil},
		{"the latest three", []sgam.Fact{row(1, 1, 2, 1, 0), row(2, 2, 3, 2, 0), row(3, 3, 4, 3, 0), row(4, 4, 5, 4, 0)}, []int64{4, 3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			for _, f := range superseded(tc.rows, asOf) {
				require.Equal(t, Past, f.Status)
				got = append(got, f.ID)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNarrowAndOrder(t *testing.T) {
	sc := &tenantSchema{}
	state := []sgam.Fact{{ID: 1, Tenant: "acme", Subject: "mira", Attribute: "city"},
		{ID: 2, Tenant: "acme", Subject: "mira", Attribute: "deadline"}, {ID: 3, Tenant: "acme", Subject: "mira", Attribute: "employer"}}
	ids := func(fs []Fact) (out []int64) {
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return out
	}
	require.Equal(t, []int64{1, 2, 3}, ids(narrowed(state, nil, sc)), "no attributes asked: every one")
	facts := narrowed(state, []string{"employer", "city"}, sc)
	require.Equal(t, []int64{1, 3}, ids(facts))
	byAttribute(facts, []string{"employer", "city"}, sc)
	require.Equal(t, []int64{3, 1}, ids(facts), "the best match first")

	keys := historyKeys("acme", "mira", facts, []string{"zip", "city"})
	require.Equal(t, []string{"city", "employer", "zip"}, []string{keys[0].Attribute, keys[1].Attribute, keys[2].Attribute})
	many := make([]string, 20)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	require.Len(t, historyKeys("acme", "mira", nil, many), maxHistoryKeys)
}

func TestDeclared(t *testing.T) {
	s, err := schema.Parse([]byte(`attributes:
  plan: {memory: account, type: string, aliases: [level]}
migrations:
  - {name: tier-to-plan, rename: {from: tier, to: plan}}
`))
	require.NoError(t, err)
	sc := &tenantSchema{parsed: s}
	for name, want := range map[string]string{"plan": "plan", "level": "plan", "tier": "plan", "zip": "zip"} {
		require.Equal(t, want, sc.declared(name), name)
	}
	require.Equal(t, "tier", (&tenantSchema{}).declared("tier"), "no schema: the name itself")
	require.Equal(t, []string{"plan", "zip"}, sc.given([]string{"level", "plan", "zip"}))
}

func TestSubjectValue(t *testing.T) {
	for v, want := range map[string]string{`"initrode"`: "initrode", `"acct-42"`: "acct-42", `""`: "", `42`: "", `" padded "`: "", `"a\nb"`: "", `{"a":1}`: ""} {
		id, ok := subjectValue(json.RawMessage(v))
		require.Equal(t, want, id, v)
		require.Equal(t, want != "", ok, v)
	}
}

func TestQuotes(t *testing.T) {
	f := sgam.Fact{ID: 7, Subject: "mira", Attribute: "passport_deadline", Value: json.RawMessage(`"2026-06-30"`)}
	recs := []sgam.Extraction{
		{Accepted: []sgam.Accepted{{Evidence: "the first  answer", Subject: "mira", Attribute: "passport_deadline", Value: json.RawMessage(`"2026-06-30"`)}}},
		{Accepted: []sgam.Accepted{{Evidence: "another fact", FactID: 8}, {Evidence: "the\nlatest answer", FactID: 7}}},
	}
	q, ok := recordedQuote(f, recs)
	require.True(t, ok)
	require.Equal(t, "the latest answer", q, "the latest record's, on one line")
	q, ok = recordedQuote(f, recs[:1])
	require.True(t, ok)
	require.Equal(t, "the first answer", q, "by subject, attribute and value")
	_, ok = recordedQuote(sgam.Fact{ID: 9, Subject: "mira", Attribute: "city", Value: json.RawMessage(`"Oslo"`)}, recs)
	require.False(t, ok)

	require.Equal(t, "Mira: correction, the deadline is June 30, not July 15.", contentQuote(f, "Mira: correction, the deadline is June 30, not July 15."))
	long := "We talked about the weather for a long while, and the trains, and then the garden, and the neighbours' new dog, which barks at night. " +
		"Then Mira said: my passport deadline is June 30. After that we talked about the weather again, at length, and about nothing at all."
	require.Contains(t, contentQuote(f, long), "passport deadline is June 30")
	require.LessOrEqual(t, len(contentQuote(f, long)), maxQuoteBytes)
	require.Empty(t, contentQuote(f, ""), "an episode gone quotes nothing")
}

func TestMatchAttributes(t *testing.T) {
	cands := []namedAttribute{
		{name: "passport_deadline", names: []string{"passport_deadline"}, description: "when the passport must be renewed"},
		{name: "passport_number", names: []string{"passport_number"}},
		{name: "plan", names: []string{"plan", "tier"}, description: "the customer's subscription level"},
		{name: "city", names: []string{"city"}, description: "where they live"},
	}
	for question, want := range map[string][]string{
		"When is Mira's passport deadline?":     {"passport_deadline"},
		"What is Mira's passport?":              {"passport_deadline", "passport_number"},
		"Which tier is cust-9 on?":              {"plan"},
		"What subscription level do they have?": {"plan"},
		"Which city do they live in?":           {"city"},
		"What about it?":                        {},
	} {
		require.Equal(t, want, matchAttributes(askedStems(question), cands), question)
	}
}
