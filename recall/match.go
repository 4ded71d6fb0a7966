package recall

import (
	"slices"
	"strings"

	"github.com/sgam-dev/sgam/words"
)

// The attributes a question names are found by their words: the words of
// an attribute's name or alias (three points each) and of its description
// (one each, counted from two) against the question's, stemmed; the best
// matches and those at least half as good. gather reads the attributes
// to match when no schema declares them.

// namedAttribute is an attribute a question may name: its name, the names
// it is known by (its own and its aliases), its description.
type namedAttribute struct {
	name        string
	names       []string
	description string
}

// given resolves the attributes a query gives: old names through the
// schema's aliases, each once, in the order given.
func (sc *tenantSchema) given(attrs []string) []string {
	out := make([]string, 0, len(attrs))
	for _, a := range attrs {
		if sc.parsed != nil {
			if attr, ok := sc.parsed.Attribute(a); ok {
				a = attr.Name
			}
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// declaredAttributes are the attributes the tenant's schema declares.
func (sc *tenantSchema) declaredAttributes() []namedAttribute {
	out := make([]namedAttribute, len(sc.parsed.Attributes))
	for i, a := range sc.parsed.Attributes {
		out[i] = namedAttribute{a.Name, append([]string{a.Name}, a.Aliases...), a.Description}
	}
	return out
}

// askedStems are the stems of a question's terms.
func askedStems(question string) map[string]bool {
	asked := map[string]bool{}
	for _, t := range words.Terms(question, words.MaxTerms) {
		asked[words.Stem(t)] = true
	}
	return asked
}

// matchAttributes returns the attributes of cands the asked stems name,
// best match first; none: an empty list.
func matchAttributes(asked map[string]bool, cands []namedAttribute) []string {
	type scored struct {
		name  string
		score int
	}
	var found []scored
	for _, c := range cands {
		score := 0
		for _, n := range c.names {
			score = max(score, 3*hits(splitName(n), asked))
		}
		if d := hits(words.Terms(c.description, 64), asked); d >= 2 || score > 0 {
			score += d
		}
		if score > 0 {
			found = append(found, scored{c.name, score})
		}
	}
	out := []string{}
	if len(found) == 0 {
		return out
	}
	slices.SortStableFunc(found, func(a, b scored) int { return b.score - a.score })
	// The best matches, and those nearly as good: a question about the
	// "passport deadline" is not one about every attribute that says
	// "passport".
	for _, f := range found {
		if 2*f.score >= found[0].score {
			out = append(out, f.name)
		}
	}
	return out
}

// splitName splits an attribute name into its words ("passport_deadline"
// is passport and deadline).
func splitName(name string) []string {
	return words.Terms(nameSeparators.Replace(name), 16)
}

// nameSeparators reads the separators of an attribute's name as spaces.
var nameSeparators = strings.NewReplacer("_", " ", "-", " ", ".", " ")

// hits counts the distinct stems of ws among asked.
func hits(ws []string, asked map[string]bool) int {
	n := 0
	seen := map[string]bool{}
	for _, w := range ws {
		st := words.Stem(w)
		if asked[st] && !seen[st] {
			seen[st] = true
			n++
		}
	}
	return n
}
