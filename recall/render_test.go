package recall_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// The render goldens: render is pure, so each is a context's header and
// ranked items made here, with no store.

// header is a context's header as gather leaves it.
func header(t *testing.T, question string, budget int) *recall.Context {
	now := ts(t, "2026-12-01T15:04:05Z")
	return &recall.Context{Question: question, AsOf: now, KnownAt: now, Instants: recall.Instants{AsOf: "now", KnownAt: "now"},
		Subjects: []string{"mira"}, Attributes: []string{"passport_deadline"}, Budget: budget,
		Facts: []recall.Fact{}, Evidence: []recall.Evidence{}, Related: []recall.Fact{}}
}

// fact is a fact row of mira with one source.
func fact(t *testing.T, id int64, attribute, value, from, to, source, quote, status string) recall.Fact {
	f := recall.Fact{Fact: sgam.Fact{ID: id, Tenant: "acme", Subject: "mira", Attribute: attribute, Value: []byte(value),
		ValidFrom: ts(t, from), RecordedAt: ts(t, from), Sources: []string{source}}, Status: status, Quote: quote}
	if to != "" {
		end := ts(t, to)
		f.ValidTo = &end
	}
	return f
}

func hit(t *testing.T, id, occurred, content string, score float64) sgam.EpisodeHit {
	return sgam.EpisodeHit{Episode: sgam.Episode{Tenant: "acme", ID: id, Session: "s1", Content: content, OccurredAt: ts(t, occurred)}, Score: score}
}

func TestRenderGoldens(t *testing.T) {
	deadline := fact(t, 3, "passport_deadline", `"2026-06-30"`, "2026-06-03T10:00:00Z", "", "e2",
		"Mira: correction, the deadline is June 30, not July 15.", recall.Current)
	evidence := []sgam.EpisodeHit{
		hit(t, "e2", "2026-06-03T10:00:00Z", "Mira: correction, the deadline is June 30, not July 15.", 2.5),
		hit(t, "e1", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15.", 1.75),
		hit(t, "e0", "2026-05-30T08:00:00Z", "Consulate letter to Mira, extracted late: renew by August 1.", 0.5),
	}
	for _, tc := range []struct {
		name                   string
		c                      *recall.Context
		current, past, related []recall.Fact
		evidence               []sgam.EpisodeHit
		omitted                recall.Omitted
	}{
		{name: "facts_only", c: header(t, "When is Mira's passport deadline?", recall.DefaultBudget), current: []recall.Fact{deadline}},
		{name: "facts_evidence", c: header(t, "When is Mira's passport deadline?", recall.DefaultBudget),
			current: []recall.Fact{deadline}, evidence: evidence},
		{name: "budget", c: header(t, "When is Mira's passport deadline?", 190),
			current: []recall.Fact{deadline}, evidence: evidence, omitted: recall.Omitted{Evidence: 2}},
		{name: "as_of", c: func() *recall.Context {
			c := header(t, "What was Mira's passport deadline on June 2, 2026?", recall.DefaultBudget)
			c.AsOf, c.Instants.AsOf = ts(t, "2026-06-02T23:59:59.999999Z"), `the question: "on June 2, 2026"`
			return c
		}(),
			current: []recall.Fact{fact(t, 2, "passport_deadline", `"2026-07-15"`, "2026-06-01T09:00:00Z", "2026-06-03T10:00:00Z", "e1",
				"Mira: my passport renewal deadline is July 15.", recall.Current)},
			past: []recall.Fact{fact(t, 4, "passport_deadline", `"2026-08-01"`, "2026-05-30T08:00:00Z", "2026-06-01T09:00:00Z", "e0",
				"Consulate letter to Mira, extracted late: renew by August 1.", recall.Past)},
			evidence: evidence[1:2]},
		{name: "related", c: header(t, "Where does Mira work?", recall.DefaultBudget),
			current: []recall.Fact{fact(t, 7, "employer", `"initrode"`, "2026-06-01T09:00:00Z", "", "r1", "Mira works at Initrode.", recall.Current)},
			related: []recall.Fact{func() recall.Fact {
				f := fact(t, 8, "city", `"Oslo"`, "2026-06-01T10:00:00Z", "", "r2", "Initrode is based in Oslo.", recall.Current)
				f.Subject, f.Via = "initrode", 7
				return f
			}()}},
		{name: "no_value", c: func() *recall.Context {
			c := header(t, "What drink does Mira prefer?", recall.DefaultBudget)
			c.Attributes = []string{"drink_preference"}
			return c
		}()},
		{name: "empty", c: func() *recall.Context {
			c := header(t, "When is Mira's passport deadline?", recall.DefaultBudget)
			c.Subjects, c.Attributes = []string{}, []string{}
			return c
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, recall.Render(tc.c, tc.current, tc.past, tc.related, tc.evidence))
			require.LessOrEqual(t, tc.c.Tokens, tc.c.Budget)
			require.Equal(t, recall.Tokens(tc.c.Rendered), tc.c.Tokens)
			require.Equal(t, tc.omitted, tc.c.Omitted)
			shown := len(tc.c.Facts) + len(tc.c.Related) + len(tc.c.Evidence)
			require.Equal(t, len(tc.current)+len(tc.past)+len(tc.related)+len(tc.evidence), shown+tc.omitted.Facts+tc.omitted.Related+tc.omitted.Evidence)
			golden(t, "render_"+tc.name+".txt", tc.c.Rendered)
		})
	}
}

// TestRenderDropsQuotes: a budget too small for a fact's quote shows the
// fact without it, in the block and in the JSON, and leaves the ranked
// fact as it was; a budget too small for the question is refused.
func TestRenderDropsQuotes(t *testing.T) {
	c := header(t, "When is Mira's passport deadline?", 130)
	f := fact(t, 3, "passport_deadline", `"2026-06-30"`, "2026-06-03T10:00:00Z", "", "e2",
		"Mira: correction, the deadline is June 30, not July 15.", recall.Current)
	current := []recall.Fact{f}
	evidence := []sgam.EpisodeHit{hit(t, "e1", "2026-06-01T09:00:00Z", "Mira: my passport renewal deadline is July 15.", 1.75)}
	require.NoError(t, recall.Render(c, current, nil, nil, evidence))
	require.Len(t, c.Facts, 1)
	require.Empty(t, c.Facts[0].Quote)
	require.NotContains(t, c.Rendered, "correction")
	require.Equal(t, recall.Omitted{Evidence: 1}, c.Omitted)
	require.Equal(t, f.Quote, current[0].Quote)
	golden(t, "render_no_quote.txt", c.Rendered)

	long := header(t, strings.Repeat("When is Mira's passport deadline? ", 8), recall.MinBudget)
	err := recall.Render(long, current, nil, nil, evidence)
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Contains(t, err.Error(), "budget")
}
