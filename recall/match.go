package recall

import (
	"slices"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/words"
)

// attributes are the attributes the read is narrowed to, best match
// first: the given ones (old names resolved through the schema's
// aliases), else those the question names, by name, alias or description
// (the tenant's schema's attributes, or, with no schema, those the
// subjects have values of). None matched: every attribute.
func (g *gather) attributes(subjects []string) ([]string, error) {
	if len(g.q.Attributes) > 0 {
		out := make([]string, 0, len(g.q.Attributes))
		for _, a := range g.q.Attributes {
			if g.sc.parsed != nil {
				if attr, ok := g.sc.parsed.Attribute(a); ok {
					a = attr.Name
				}
			}
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		return out, nil
	}
	asked := map[string]bool{}
	for _, t := range words.Terms(g.q.Question, words.MaxTerms) {
		asked[words.Stem(t)] = true
	}
	if len(asked) == 0 {
		return []string{}, nil
	}
	type scored struct {
		name  string
		score int
	}
	var found []scored
	consider := func(name string, names []string, description string) {
		score := 0
		for _, n := range names {
			score = max(score, 3*hits(splitName(n), asked))
		}
		if d := hits(words.Terms(description, 64), asked); d >= 2 || score > 0 {
			score += d
		}
		if score > 0 {
			found = append(found, scored{name, score})
		}
	}
	if g.sc.parsed != nil {
		for _, a := range g.sc.parsed.Attributes {
			consider(a.Name, append([]string{a.Name}, a.Aliases...), a.Description)
		}
	} else {
		// Every attribute the subjects ever had: a retracted value's
		// attribute is still one the question may name.
		seen := map[string]bool{}
		for _, s := range subjects {
			attrs, err := g.r.store.Attributes(g.ctx, g.q.Tenant, s)
			if err != nil {
				return nil, err
			}
			for _, a := range attrs {
				if !seen[a] {
					seen[a] = true
					consider(a, []string{a}, "")
				}
			}
		}
	}
	if len(found) == 0 {
		return []string{}, nil
	}
	slices.SortStableFunc(found, func(a, b scored) int { return b.score - a.score })
	// The best matches, and those nearly as good: a question about the
	// "passport deadline" is not one about every attribute that says
	// "passport".
	out := []string{}
	for _, f := range found {
		if 2*f.score >= found[0].score {
			out = append(out, f.name)
		}
	}
	return out, nil
}

// splitName splits an attribute name into its words ("passport_deadline"
// is passport and deadline).
func splitName(name string) []string {
	return words.Terms(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(name), 16)
}

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

// state is a subject's state at the read's instants, read once.
func (g *gather) state(subject string) ([]sgam.Fact, error) {
	if f, ok := g.states[subject]; ok {
		return f, nil
	}
	f, err := g.r.store.State(g.ctx, g.q.Tenant, subject, g.at)
	if err != nil {
		return nil, err
	}
	if g.states == nil {
		g.states = map[string][]sgam.Fact{}
	}
	g.states[subject] = f
	return f, nil
}
