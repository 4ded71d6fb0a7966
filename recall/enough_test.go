package recall

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func hitIDs(hits []sgam.EpisodeHit) []string {
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.Episode.ID)
	}
	return ids
}

func TestAboveBar(t *testing.T) {
	ranked := []sgam.EpisodeHit{hitOf(ep("a", "", ""), 4), hitOf(ep("b", "", ""), 2), hitOf(ep("c", "", ""), 1.99), hitOf(ep("d", "", ""), 0.5)}
	for _, c := range []struct {
		bar  float64
		want []string
	}{
		{0, []string{"a", "b", "c", "d"}},
		{0.5, []string{"a", "b"}}, // at the bar is in
		{0.6, []string{"a"}},
		{1, []string{"a"}}, // the best always
	} {
		require.Equal(t, c.want, hitIDs(aboveBar(ranked, c.bar)), "bar %v", c.bar)
	}
	require.Empty(t, aboveBar(nil, 0.5))
	// Scores that are not positive give no bar to measure by: all stay.
	flat := []sgam.EpisodeHit{hitOf(ep("a", "", ""), 0), hitOf(ep("b", "", ""), -1)}
	require.Equal(t, []string{"a", "b"}, hitIDs(aboveBar(flat, 0.5)))
}

func TestAnswered(t *testing.T) {
	sc := &tenantSchema{}
	fact := func(subject, attribute string) Fact {
		return Fact{Fact: sgam.Fact{Subject: subject, Attribute: attribute}, Status: Current}
	}
	ended := &Fact{Fact: sgam.Fact{Subject: "mira", Attribute: "style", Tombstone: true}}
	for _, c := range []struct {
		name            string
		subjects, attrs []string
		current         []Fact
		absent          []absence
		want            bool
	}{
		{"a value for the key asked", []string{"mira"}, []string{"deadline"}, []Fact{fact("mira", "deadline")}, nil, true},
		{"no attribute named: the question may ask anything", []string{"mira"}, nil, []Fact{fact("mira", "deadline")}, nil, false},
		{"no subject", nil, []string{"deadline"}, nil, nil, false},
		{"a value ended, and what ended it", []string{"mira"}, []string{"style"}, nil, []absence{{subject: "mira", attribute: "style", end: ended}}, true},
		{"never a value: the evidence may hold it", []string{"mira"}, []string{"style"}, nil, []absence{{subject: "mira", attribute: "style"}}, false},
		{"one of two attributes", []string{"mira"}, []string{"deadline", "style"}, []Fact{fact("mira", "deadline")}, nil, false},
		{"one of two subjects", []string{"mira", "jonas"}, []string{"deadline"}, []Fact{fact("mira", "deadline")}, nil, false},
	} {
		require.Equal(t, c.want, answered(c.subjects, c.attrs, c.current, c.absent, sc), c.name)
	}
}

func TestSupporting(t *testing.T) {
	ranked := []sgam.EpisodeHit{hitOf(ep("e1", "", ""), 3), hitOf(ep("e2", "", ""), 2), hitOf(ep("e3", "", ""), 1), hitOf(ep("e4", "", ""), 1)}
	quoted := Fact{Fact: sgam.Fact{Sources: []string{"e1"}}, Quote: "the deadline is June 30"}
	unquoted := Fact{Fact: sgam.Fact{Sources: []string{"e3", "e2"}}}
	end := &Fact{Fact: sgam.Fact{Sources: []string{"e4"}, Tombstone: true}}

	a := answer{current: []Fact{quoted}}
	require.Empty(t, supporting(ranked, a), "a quoted fact cites its source on its own line")
	a = answer{current: []Fact{quoted}, past: []Fact{unquoted}}
	require.Equal(t, []string{"e3"}, hitIDs(supporting(ranked, a)), "the first source of a fact with no quote, in the ranking's order")
	a = answer{absent: []absence{{subject: "mira", attribute: "style", end: end}}}
	require.Equal(t, []string{"e4"}, hitIDs(supporting(ranked, a)), "what ended an absent value, unquoted")
	require.Len(t, ranked, 4, "the ranking is not changed")
}
