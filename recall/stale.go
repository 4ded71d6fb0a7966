package recall

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/temporal"
)

// An evidence episode can say what is no longer so: "I prefer concise
// answers", quoted under a question whose answer is that Mira revoked
// that preference since. Vector memory shows both statements and cannot
// say which holds; recall marks the stale one. For every evidence episode
// it reads, in one statement (FactReader.FactsFrom), the rows the episode
// is a source of on the subjects in play and the rows that closed them,
// and says of each statement on a key the answer is about that is not
// current at the read's instants what ended it, when, and which episode
// said so. An episode whose statements on those keys are all stale is
// ranked below the others (unless the question asks about the past), and
// the episode that ended its statement is shown with it.

// Superseded is a statement of an evidence episode that is not current at
// the read's instants.
type Superseded struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Member    json.RawMessage `json:"member,omitempty"`
	Value     json.RawMessage `json:"value"`
	FactID    int64           `json:"fact_id"`
	// How it ended: "replaced" (a later value), "revoked" (a tombstone),
	// "removed" (a set member's tombstone), "ended" (its validity ran out
	// with nothing after it), "retracted" (no longer believed: the store
	// took the row back).
	How string `json:"how"`
	// Until is when it stopped holding (its valid_to), or, retracted,
	// when it stopped being believed.
	Until time.Time `json:"until"`
	// ByFact and ByEpisode are the row that ended it and that row's first
	// source, when there is one.
	ByFact    int64  `json:"by_fact,omitempty"`
	ByEpisode string `json:"by_episode,omitempty"`
}

// How a statement ended (Superseded.How).
const (
	Replaced  = "replaced"
	Revoked   = "revoked"
	Removed   = "removed"
	Ended     = "ended"
	Retracted = "retracted"
)

// believedAt reports whether f was believed at known, by the temporal
// rules (package temporal: the rules live there once).
func believedAt(f sgam.Fact, known time.Time) bool {
	return window(f).BelievedAt(sgam.Micros(known))
}

// holdsAt reports whether f holds a value at asOf (its validity contains
// it, and it is no tombstone).
func holdsAt(f sgam.Fact, asOf time.Time) bool {
	return !f.Tombstone && window(f).Contains(sgam.Micros(asOf))
}

// window is a fact's two windows as the temporal rules read them.
func window(f sgam.Fact) temporal.Row {
	r := temporal.Row{ID: f.ID, ValidFrom: sgam.Micros(f.ValidFrom), ValidTo: temporal.Open,
		RecordedAt: sgam.Micros(f.RecordedAt), RetractedAt: temporal.Open}
	if f.ValidTo != nil {
		r.ValidTo = sgam.Micros(*f.ValidTo)
	}
	if f.RetractedAt != nil {
		r.RetractedAt = sgam.Micros(*f.RetractedAt)
	}
	return r
}

// staleKey is a key of a row: its subject, attribute and set member.
type staleKey struct{ subject, attribute, member string }

func keyOf(f sgam.Fact) staleKey { return staleKey{f.Subject, f.Attribute, string(f.Member)} }

// staleness says, for each of episodes, its statements on the keys the
// answer is about (asked: whose attribute, as the schema now names it, is
// among attrs, or any with no attrs) that are not current at at: rows is
// what FactsFrom returned for them. An episode with no stale statement has
// no entry; all reports whether every statement of the episode on those
// keys is stale.
func staleness(rows []sgam.Fact, episodes []string, attrs []string, sc *tenantSchema, at sgam.At) (stale map[string][]Superseded, all map[string]bool) {
	asked := func(f sgam.Fact) bool { return len(attrs) == 0 || slices.Contains(attrs, sc.declared(f.Attribute)) }
	// The row of each key that starts at an instant, believed at known_at:
	// what closed a row that ended there.
	starts := map[staleKey]map[time.Time]sgam.Fact{}
	for _, f := range rows {
		if believedAt(f, at.KnownAt) {
			k := keyOf(f)
			if starts[k] == nil {
				starts[k] = map[time.Time]sgam.Fact{}
			}
			starts[k][f.ValidFrom] = f
		}
	}
	stale, all = map[string][]Superseded{}, map[string]bool{}
	for _, ep := range episodes {
		// The episode's rows by key, in fact id order.
		byKey := map[staleKey][]sgam.Fact{}
		var keys []staleKey
		for _, f := range rows {
			if !asked(f) || !slices.Contains(f.Sources, ep) {
				continue
			}
			k := keyOf(f)
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], f)
		}
		current := 0
		for _, k := range keys {
			s, ok := statementEnd(byKey[k], starts[k], at)
			if !ok {
				current++
				continue
			}
			stale[ep] = append(stale[ep], s)
		}
		if len(stale[ep]) > 0 && current == 0 {
			all[ep] = true
		}
	}
	return stale, all
}

// statementEnd says how an episode's statement on one key (its rows of
// the key) ended, or ok false when it still holds at at (or holds only
// later: a value from a future instant is not stale).
func statementEnd(mine []sgam.Fact, starts map[time.Time]sgam.Fact, at sgam.At) (s Superseded, ok bool) {
	var ended, retracted *sgam.Fact
	for i, f := range mine {
		switch {
		case f.Tombstone:
			// The episode's own tombstone is no value of its: it ended
			// one, and is current or stale as such rows are not shown.
			continue
		case believedAt(f, at.KnownAt):
			if holdsAt(f, at.AsOf) || f.ValidFrom.After(at.AsOf) {
				return s, false
			}
			if ended == nil || f.ValidTo.After(*ended.ValidTo) {
				ended = &mine[i]
			}
		case !f.RecordedAt.After(at.KnownAt):
			// Believed once, taken back by known_at.
			if retracted == nil || f.RetractedAt.After(*retracted.RetractedAt) {
				retracted = &mine[i]
			}
		}
	}
	switch {
	case ended != nil:
		s = Superseded{Subject: ended.Subject, Attribute: ended.Attribute, Member: ended.Member, Value: ended.Value,
			FactID: ended.ID, How: Ended, Until: *ended.ValidTo}
		if by, ok := starts[*ended.ValidTo]; ok {
			s.ByFact = by.ID
			if len(by.Sources) > 0 {
				s.ByEpisode = by.Sources[0]
			}
			switch {
			case !by.Tombstone:
				s.How = Replaced
			case len(by.Member) > 0:
				s.How = Removed
			default:
				s.How = Revoked
			}
		}
		return s, true
	case retracted != nil:
		return Superseded{Subject: retracted.Subject, Attribute: retracted.Attribute, Member: retracted.Member, Value: retracted.Value,
			FactID: retracted.ID, How: Retracted, Until: *retracted.RetractedAt}, true
	}
	return s, false
}

// supersededText is a stale statement as the rendered block says it:
// mira.answer_style "concise" revoked 2026-06-05 by e6 (the date; the JSON
// has the instant).
func supersededText(s Superseded) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.%s %s %s %s", s.Subject, s.Attribute, s.Value, s.How, s.Until.UTC().Format(time.DateOnly))
	if s.ByEpisode != "" {
		fmt.Fprintf(&b, " by %s", s.ByEpisode)
	} else if s.ByFact != 0 {
		fmt.Fprintf(&b, " by fact %d", s.ByFact)
	}
	return b.String()
}

// markStale reads what the evidence's episodes said of the subjects in
// play (one FactsFrom, and one more for each episode it brings in) and
// marks each episode's stale statements on the keys the answer is about. The episode that ended a stale statement is
// shown just above the stale one, moved up or brought in: never the stale
// statement without what ended it, and never below it. When that makes
// the evidence longer than EvidenceLimit, an episode that takes no part
// in this gives way first.
func (g *gather) markStale(a *answer, past bool) error {
	if len(a.evidence) == 0 || len(g.out.Subjects) == 0 {
		return nil
	}
	ids := make([]string, len(a.evidence))
	for i, h := range a.evidence {
		ids[i] = h.Episode.ID
	}
	rows, err := g.r.store.FactsFrom(g.ctx, g.q.Tenant, ids, g.out.Subjects, g.at.KnownAt)
	if err != nil {
		return err
	}
	stale, all := staleness(rows, ids, g.out.Attributes, g.sc, g.at)
	if len(stale) == 0 {
		return nil
	}
	a.stale = stale
	limit := g.q.EvidenceLimit
	position := func(id string) int {
		return slices.IndexFunc(a.evidence, func(h sgam.EpisodeHit) bool { return h.Episode.ID == id })
	}
	enders := map[string]bool{} // the episodes that ended a shown statement
	// An ender moved up or brought in is looked at next, at its new place:
	// it may have said what a later episode ended in turn (a chain of
	// corrections shows the last first). Each is placed once, so
	// episodes that ended each other's statements (on two keys) end it.
	placed := map[string]bool{}
	for i := 0; i < len(a.evidence); {
		moved := false
		for _, s := range stale[a.evidence[i].Episode.ID] {
			by := s.ByEpisode
			if by == "" {
				continue
			}
			enders[by] = true
			j := position(by)
			if (j >= 0 && j <= i) || placed[by] {
				continue // above it already (or itself), or placed for another
			}
			if j > i {
				h := a.evidence[j]
				a.evidence = slices.Delete(a.evidence, j, j+1)
				a.evidence = slices.Insert(a.evidence, i, h)
			} else {
				ep, ok := g.episodes[by]
				if !ok {
					read, err := g.r.store.Episode(g.ctx, g.q.Tenant, by)
					if sgam.ErrorCode(err) == sgam.NotFound {
						continue // forgotten since: nothing to show
					}
					if err != nil {
						return err
					}
					ep = &read
					g.episodes[by] = ep
				}
				// What it said is marked as the rest's is.
				rows, err := g.r.store.FactsFrom(g.ctx, g.q.Tenant, []string{by}, g.out.Subjects, g.at.KnownAt)
				if err != nil {
					return err
				}
				more, moreAll := staleness(rows, []string{by}, g.out.Attributes, g.sc, g.at)
				maps.Copy(stale, more)
				maps.Copy(all, moreAll)
				a.evidence = slices.Insert(a.evidence, i, sgam.EpisodeHit{Episode: *ep, Score: a.evidence[i].Score})
			}
			placed[by], moved = true, true
			break
		}
		if !moved {
			i++
		}
	}
	for len(a.evidence) > limit {
		// Over the limit by what was brought in: the last episode that
		// neither ended a shown statement nor said one that ended gives
		// way; else (unless the question is about the past) the last that
		// is all stale; else the last.
		drop := -1
		for j := len(a.evidence) - 1; j >= 0 && drop < 0; j-- {
			if id := a.evidence[j].Episode.ID; !enders[id] && len(stale[id]) == 0 {
				drop = j
			}
		}
		for j := len(a.evidence) - 1; j >= 0 && drop < 0 && !past; j-- {
			if all[a.evidence[j].Episode.ID] {
				drop = j
			}
		}
		if drop < 0 {
			drop = len(a.evidence) - 1
		}
		a.evidence = slices.Delete(a.evidence, drop, drop+1)
	}
	return nil
}

// absence is a key the question asks about that has no value at the
// read's instants: end is the row whose end left it without one (a
// tombstone, or a value whose validity ran out), nil when it never had a
// value as believed then; quote is what end's source says.
type absence struct {
	subject, attribute string
	end                *Fact
}

// absences reads, for each subject and asked attribute without a current
// value among current, the key's history (at most maxHistoryKeys keys),
// and says what ended its last value.
func (g *gather) absences(subjects, attrs []string, current []Fact) ([]absence, error) {
	var out []absence
	for _, s := range subjects {
		for _, attr := range attrs {
			if slices.ContainsFunc(current, func(f Fact) bool { return f.Subject == s && g.sc.declared(f.Attribute) == attr }) {
				continue
			}
			if len(out) == maxHistoryKeys {
				return out, nil
			}
			rows, err := g.r.store.History(g.ctx, sgam.Key{Tenant: g.q.Tenant, Subject: s, Attribute: attr})
			if err != nil {
				return nil, err
			}
			out = append(out, absence{subject: s, attribute: attr, end: lastEnd(rows, g.at)})
		}
	}
	return out, nil
}

// lastEnd is, of a key's rows, the one whose end left the key without a
// value at at: the latest believed tombstone starting by as_of, or the
// latest believed value that ended by then; nil when none was believed.
func lastEnd(rows []sgam.Fact, at sgam.At) *Fact {
	var end *sgam.Fact
	when := func(f sgam.Fact) time.Time {
		if f.Tombstone {
			return f.ValidFrom
		}
		return *f.ValidTo
	}
	for i, f := range rows {
		if !believedAt(f, at.KnownAt) || f.ValidFrom.After(at.AsOf) {
			continue
		}
		if !f.Tombstone && (f.ValidTo == nil || f.ValidTo.After(at.AsOf)) {
			continue // holds: not what ended it
		}
		// At one instant a value ends and a tombstone starts: the
		// tombstone is what ended it.
		if end == nil || when(f).After(when(*end)) || when(f).Equal(when(*end)) && f.Tombstone {
			end = &rows[i]
		}
	}
	if end == nil {
		return nil
	}
	return &Fact{Fact: *end, Status: Past}
}

// noneLine is the rendered line of an absence: what ended the value, when,
// and the words of the episode that said so.
func noneLine(a absence) string {
	what := a.attribute + " of " + a.subject
	if a.end == nil {
		return "- none: no value of " + what + " has been recorded, as believed at those instants"
	}
	f := a.end
	var line string
	if f.Tombstone {
		line = fmt.Sprintf("- none: no value of %s since %s (revoked", what, f.ValidFrom.UTC().Format(time.DateOnly))
	} else {
		line = fmt.Sprintf("- none: no value of %s since %s (%s ended then", what, f.ValidTo.UTC().Format(time.DateOnly), f.Value)
	}
	if len(f.Sources) > 0 {
		line += " by " + f.Sources[0]
		if f.Quote != "" {
			line += fmt.Sprintf(": %q", f.Quote)
		}
	}
	return line + ")"
}
