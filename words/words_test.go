package words

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestTerms(t *testing.T) {
	require.Equal(t, []string{"mira", "passport", "deadline"}, Terms("When is Mira's passport deadline? The deadline!", MaxTerms))
	require.Equal(t, []string{"swim"}, Terms("I won't swim", MaxTerms))
	require.Equal(t, []string{"café", "42"}, Terms("Café 42 a b", MaxTerms))
	require.Len(t, Terms(strings.Repeat("word", 1)+" "+strings.Repeat("x1 x2 x3 x4 ", 20), 3), 3)
	require.Empty(t, Terms("what is it?", MaxTerms))
}

func TestStem(t *testing.T) {
	for _, pair := range [][2]string{{"deadlines", "deadline"}, {"moved", "move"}, {"renewing", "renew"}, {"countries", "country"}} {
		require.Equal(t, Stem(pair[1]), Stem(pair[0]), pair[0])
	}
	require.Equal(t, "is", Stem("is"))
}

func TestSnippet(t *testing.T) {
	require.Equal(t, "short text", Snippet("short   text", []string{"x"}, 80))
	long := strings.Repeat("filler words here ", 20) + "the passport deadline moved to June 30 " + strings.Repeat("more filler ", 20)
	s := Snippet(long, []string{"passport", "deadline"}, 60)
	require.Contains(t, s, "passport deadline")
	require.LessOrEqual(t, len(s), 60+2*len("…"))
	require.True(t, strings.HasPrefix(s, "…") && strings.HasSuffix(s, "…"))
	// No term at all: the start, cut on a rune boundary.
	s = Snippet(strings.Repeat("é", 100), nil, 11)
	require.True(t, utf8.ValidString(s))
}

func FuzzSnippet(f *testing.F) {
	f.Add("the passport deadline moved", "deadline", 10)
	f.Fuzz(func(t *testing.T, content, term string, max int) {
		if max < 8 || max > 1000 {
			return
		}
		s := Snippet(content, Terms(term, MaxTerms), max)
		if utf8.ValidString(content) && !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 from %q", content)
		}
		if len(s) > max+2*len("…") {
			t.Fatalf("snippet of %d bytes, max %d", len(s), max)
		}
	})
}

func TestTokens(t *testing.T) {
	require.Equal(t, []string{"mira", "don", "t", "say", "café", "42", "o", "neill"}, Tokens("Mira's DON'T say: café-42, O’Neill’s"))
	require.Empty(t, Tokens("' ’s -- "))
	require.Equal(t, Stem("deadlines"), Stem(strings.Clone("deadlines")), "a remembered stem is the stemmer's")
}

func TestSelective(t *testing.T) {
	for _, c := range []struct {
		terms []string
		rows  []int
		want  []string
	}{
		{[]string{"a", "b", "c", "d"}, []int{5 * MaxRankedRows, 3, MaxRankedRows / 4, MaxRankedRows}, []string{"b", "c"}},
		{[]string{"a", "b"}, []int{MaxRankedRows - 1, 1}, []string{"a", "b"}},
		{[]string{"common"}, []int{10 * MaxRankedRows}, []string{"common"}},
		{[]string{"commoner", "common"}, []int{20 * MaxRankedRows, 10 * MaxRankedRows}, []string{"common"}},
		// A term no row holds is kept, and does not count as the rarest.
		{[]string{"pizzza", "weather"}, []int{0, 5 * MaxRankedRows}, []string{"pizzza", "weather"}},
		{[]string{"pizzza", "weather", "rain"}, []int{0, 5 * MaxRankedRows, 7}, []string{"pizzza", "rain"}},
		{nil, nil, nil},
	} {
		require.Equal(t, c.want, Selective(c.terms, c.rows), "%v %v", c.terms, c.rows)
	}
}

// TestStemHead: recall skips stemming a word whose head starts no stem it
// looks for, which is right only if a stem's head always starts its
// word's.
func TestStemHead(t *testing.T) {
	holds := func(w string) bool {
		st := Stem(w)
		return st != "" && strings.HasPrefix(StemHead(w), StemHead(st))
	}
	for _, w := range []string{"ies", "sses", "ing", "eed", "yes", "y", "aaa", "ational", "relational", "ponies", "happy",
		"hoping", "sensibiliti", "generalization", "über", "éléphant", "42nd", "x", "ays", "ayed", "uys", "says", "aing"} {
		require.True(t, holds(w), "%s → %s", w, Stem(w))
	}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.StringMatching(`[a-z0-9éü中]{1,14}`).Draw(t, "word")
		if !holds(w) {
			t.Fatalf("%q stems to %q", w, Stem(w))
		}
	})
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"Mira Chen":      "mira chen",
		"  MIRA \t Chen": "mira chen",
		"Dr. Lind's":     "dr lind",
		"Jean-Luc":       "jean luc",
		"Zoë Ørsted":     "zoë ørsted",
		"...":            "",
	} {
		require.Equal(t, want, Name(in), in)
		require.Equal(t, in == want, IsName(in), in)
		require.True(t, IsName(want), want)
	}
}

// TestIsName: IsName(s) is Name(s) == s, for any text (names, their
// words' apostrophes and spacing, letters of other scripts).
func TestIsName(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s string
		if rapid.Bool().Draw(t, "from a name") {
			s = Name(rapid.String().Draw(t, "text"))
		} else {
			parts := rapid.SliceOf(rapid.SampledFrom([]string{"mira", "Mira", " ", "  ", "'s", "'", "’", "don't", "zoë", "Ø", "42", "-", ".", "\t", "a"})).Draw(t, "parts")
			s = strings.Join(parts, "")
		}
		require.Equal(t, Name(s) == s, IsName(s), "%q", s)
	})
}

func TestNames(t *testing.T) {
	require.Equal(t, []string{"ask", "ask dr", "ask dr lind", "dr", "dr lind", "lind"}, Names("Ask Dr. Lind.", 100))
	require.Equal(t, []string{"ask", "ask dr"}, Names("Ask Dr. Lind.", 2))
	require.Equal(t, []string{"a", "a a", "a a a"}, Names("a a a", 100), "each name once")
	long := Names("one two three four five six seven eight", 100)
	require.Contains(t, long, "one two three four five six")
	require.NotContains(t, long, "one two three four five six seven")
	for _, n := range long {
		require.Equal(t, n, Name(n), "a name is in its own form")
	}
}

func TestHolds(t *testing.T) {
	for _, c := range []struct {
		text, phrase string
		want         bool
	}{
		{"Caroline: I went on 7 May, 2023.", "7 May 2023", true},
		{"Melanie painted a sunrise.", "sunrise", true},
		{"- mira passport_deadline = \"2026-06-30\"", "2026-06-30", true},
		{"She paints lakes", "painting lakes", true}, // by stem
		{"She paints lakes", "painting rivers", false},
		{"It is a", "a", true},       // no term: as it is
		{"nothing here", "A", false}, // nor there
		{"Mira likes tea", "", true}, // the empty phrase
		{"Gina's dance studio", "Gina", true},
	} {
		require.Equal(t, c.want, Holds(c.text, c.phrase), "%q in %q", c.phrase, c.text)
	}
}
