package recall

import (
	"slices"

	"github.com/sgam-dev/sgam"
)

// Evidence modes (Query.Evidence). DESIGN 4 asks for the smallest cited
// context: exact state first, evidence only when state is not enough. So
// by default (auto) EvidenceLimit is a maximum, not a quota: an episode
// whose score is far below the best one's is left out (aboveBar), and
// when the facts answer every subject and attribute in play, the evidence
// is only what their lines do not cite already (supporting).
const (
	// EvidenceAuto cites the evidence that clears the bar; when the facts
	// answer the question, only the sources their quotes leave out.
	EvidenceAuto = "auto"
	// EvidenceAlways cites the best EvidenceLimit episodes, whatever the
	// facts say and however weak the match.
	EvidenceAlways = "always"
	// EvidenceNone cites none (as EvidenceLimit None).
	EvidenceNone = "none"
)

// aboveBar keeps, of the ranked evidence (best first), the episodes whose
// score is at least bar times the best one's.
func aboveBar(ranked []sgam.EpisodeHit, bar float64) []sgam.EpisodeHit {
	if len(ranked) == 0 || ranked[0].Score <= 0 {
		return ranked
	}
	floor := bar * ranked[0].Score
	n := 0
	for n < len(ranked) && ranked[n].Score >= floor {
		n++
	}
	return ranked[:n]
}

// answered reports whether the facts answer the question: it names
// attributes (attrs), and every subject in play has, for each of them, a
// value at the read's instants (among current) or an absence that says
// what ended its value. A key that never had a value is not an answer:
// the evidence may hold what the facts do not.
func answered(subjects, attrs []string, current []Fact, absent []absence, sc *tenantSchema) bool {
	if len(subjects) == 0 || len(attrs) == 0 {
		return false
	}
	for _, s := range subjects {
		for _, attr := range attrs {
			has := slices.ContainsFunc(current, func(f Fact) bool { return f.Subject == s && sc.declared(f.Attribute) == attr }) ||
				slices.ContainsFunc(absent, func(ab absence) bool { return ab.subject == s && ab.attribute == attr && ab.end != nil })
			if !has {
				return false
			}
		}
	}
	return true
}

// supporting keeps, of the ranked evidence, the episodes that support a
// fact shown (a current or past value, or what ended an absent one)
// whose line quotes nothing of its source, in their order. A quote is the
// source's own words, checked against it (package extract): with it, the
// fact's line cites its support already, and the whole episode would say
// it twice.
func supporting(ranked []sgam.EpisodeHit, a answer) []sgam.EpisodeHit {
	need := unquoted(a)
	return slices.DeleteFunc(slices.Clone(ranked), func(h sgam.EpisodeHit) bool { return !need[h.Episode.ID] })
}

// unquoted returns the sources of the facts shown whose lines quote
// nothing of them: the episodes supporting would cite.
func unquoted(a answer) map[string]bool {
	need := map[string]bool{}
	add := func(f Fact) {
		if f.Quote == "" && len(f.Sources) > 0 {
			need[f.Sources[0]] = true
		}
	}
	for _, f := range slices.Concat(a.current, a.past) {
		add(f)
	}
	for _, ab := range a.absent {
		if ab.end != nil {
			add(*ab.end)
		}
	}
	return need
}
