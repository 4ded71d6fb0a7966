package recall

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// Bounds of the past values read: the keys whose histories are read per
// subject, and the values kept per key (the latest ones).
const (
	maxHistoryKeys = 8
	maxPastPerKey  = 3
)

// narrowed is a subject's state narrowed to the attributes asked for
// (none: every attribute), each row marked current.
func narrowed(state []sgam.Fact, attrs []string, sc *tenantSchema) []Fact {
	out := make([]Fact, 0, len(state))
	for _, f := range state {
		if len(attrs) > 0 && !slices.Contains(attrs, sc.declared(f.Attribute)) {
			continue
		}
		out = append(out, Fact{Fact: f, Status: Current})
	}
	return out
}

// historyKeys are the keys of a subject whose past values are read: those
// of its facts shown and those of the attributes asked for, at most
// maxHistoryKeys, by attribute.
func historyKeys(tenant, subject string, shown []Fact, attrs []string) []sgam.Key {
	set := map[sgam.Key]bool{}
	for _, f := range shown {
		// Keyed by attribute, as the attributes asked for are: a set's
		// members share one key here.
		set[sgam.Key{Tenant: f.Tenant, Subject: f.Subject, Attribute: f.Attribute}] = true
	}
	for _, a := range attrs {
		set[sgam.Key{Tenant: tenant, Subject: subject, Attribute: a}] = true
	}
	keys := make([]sgam.Key, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sgam.Key) int {
		if a.Subject != b.Subject {
			return strings.Compare(a.Subject, b.Subject)
		}
		return strings.Compare(a.Attribute, b.Attribute)
	})
	return keys[:min(len(keys), maxHistoryKeys)]
}

// superseded picks, from a key's history, the rows believed at known_at
// whose validity ended by as_of: what held before the value at as_of, the
// latest maxPastPerKey of them, newest first.
func superseded(rows []sgam.Fact, at sgam.At) []Fact {
	var out []Fact
	for _, f := range rows {
		if believedAt(f, at.KnownAt) && !f.Tombstone && f.ValidTo != nil && !f.ValidTo.After(at.AsOf) {
			out = append(out, Fact{Fact: f, Status: Past})
		}
	}
	slices.SortFunc(out, func(a, b Fact) int { return b.ValidFrom.Compare(a.ValidFrom) })
	return out[:min(len(out), maxPastPerKey)]
}

// byAttribute orders facts by their attribute's place among attrs (the
// best match first), keeping the order of facts of the same attribute;
// with no attrs it keeps every order.
func byAttribute(facts []Fact, attrs []string, sc *tenantSchema) {
	if len(attrs) == 0 {
		return
	}
	rank := func(f Fact) int { return slices.Index(attrs, sc.declared(f.Attribute)) }
	slices.SortStableFunc(facts, func(a, b Fact) int { return rank(a) - rank(b) })
}

// declared is the attribute of the tenant's schema that a row's attribute
// is now: itself, the attribute that has it as an alias, or the target of
// a rename it is the old name of (whatever its dual-read window says: the
// window is about reads of the old name, this about rows that have it).
// A row believed before a migration still has the old name, and answers a
// question that names the new one.
func (sc *tenantSchema) declared(name string) string {
	s := sc.parsed
	if s == nil {
		return name
	}
	if a, ok := s.Attribute(name); ok {
		return a.Name
	}
	for i := len(s.Migrations) - 1; i >= 0; i-- {
		if m := s.Migrations[i]; m.Kind == schema.KindRename && m.From == name {
			return m.To[0]
		}
	}
	return name
}

// subjectValue is the subject id a fact's value names, if it is one (a
// JSON string that is a valid subject id): where a relation leads.
func subjectValue(v json.RawMessage) (string, bool) {
	var id string
	if json.Unmarshal(v, &id) != nil || id == "" || sgam.CheckSubject(id) != nil {
		return "", false
	}
	return id, true
}
