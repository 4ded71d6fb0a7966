package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// Get implements sgam.FactReader.
func (s *Store) Get(ctx context.Context, key sgam.Key, at sgam.At) (f *sgam.Fact, err error) {
	defer s.track("Get", s.start(), &err)
	if err := key.Check(); err != nil {
		return nil, err
	}
	if at, err = checkAt(at); err != nil {
		return nil, err
	}
	g, err := s.readGov(ctx, key.Tenant)
	if err != nil {
		return nil, err
	}
	if err := g.CheckGet(key); err != nil {
		return nil, err
	}
	if g.Schema == nil {
		return s.d.Get(ctx, key, at) // no names to resolve: the hot path of an ungoverned tenant
	}
	// During a rename's dual-read window the old and the new key may both
	// answer: the value that starts latest is the newer (the new key wins
	// a tie).
	var best *sgam.Fact
	for _, k := range g.ReadKeys(key, s.now()) {
		f, err := s.d.Get(ctx, k, at)
		if err != nil {
			return nil, err
		}
		if f != nil && (best == nil || !f.ValidFrom.Before(best.ValidFrom)) {
			best = f
		}
	}
	return best, nil
}

// Members implements sgam.FactReader.
func (s *Store) Members(ctx context.Context, key sgam.Key, at sgam.At) (out []sgam.Fact, err error) {
	defer s.track("Members", s.start(), &err)
	key.Member = ""
	if err := key.Check(); err != nil {
		return nil, err
	}
	if at, err = checkAt(at); err != nil {
		return nil, err
	}
	g, err := s.readGov(ctx, key.Tenant)
	if err != nil {
		return nil, err
	}
	keys := g.ReadKeys(key, s.now())
	slices.Reverse(keys) // the new name first during a dual-read window
	for _, k := range keys {
		if out, err = s.d.Members(ctx, k, at); err != nil || len(out) > 0 {
			return out, err
		}
	}
	return out, nil
}

// State implements sgam.FactReader.
func (s *Store) State(ctx context.Context, tenant, subject string, at sgam.At) (out []sgam.Fact, err error) {
	defer s.track("State", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := sgam.CheckSubject(subject); err != nil {
		return nil, err
	}
	if at, err = checkAt(at); err != nil {
		return nil, err
	}
	return s.d.State(ctx, tenant, subject, at)
}

// Subjects implements sgam.FactReader.
func (s *Store) Subjects(ctx context.Context, tenant string, ids []string) (out []string, err error) {
	defer s.track("Subjects", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if len(ids) > sgam.MaxSubjectsLookup {
		return nil, sgam.Errorf(sgam.Invalid, "ids", "has %d ids; at most %d", len(ids), sgam.MaxSubjectsLookup)
	}
	// Ids that cannot be subjects are not looked up: a text's words are
	// candidates, not input to refuse.
	var ok []string
	for _, id := range ids {
		if sgam.CheckSubject(id) == nil && !slices.Contains(ok, id) {
			ok = append(ok, id)
		}
	}
	if len(ok) == 0 {
		return []string{}, nil
	}
	known, err := s.d.Subjects(ctx, tenant, ok)
	if err != nil {
		return nil, err
	}
	out = []string{}
	for _, id := range ok {
		if slices.Contains(known, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// Attributes implements sgam.FactReader.
func (s *Store) Attributes(ctx context.Context, tenant, subject string) (out []string, err error) {
	defer s.track("Attributes", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := sgam.CheckSubject(subject); err != nil {
		return nil, err
	}
	out, err = s.d.Attributes(ctx, tenant, subject, sgam.MaxAttributesLookup)
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}

// SubjectsNamed implements sgam.FactReader.
func (s *Store) SubjectsNamed(ctx context.Context, tenant string, names []string, at sgam.At) (out []sgam.NamedSubject, err error) {
	defer s.track("SubjectsNamed", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if len(names) > sgam.MaxNamesLookup {
		return nil, sgam.Errorf(sgam.Invalid, "names", "has %d names; at most %d", len(names), sgam.MaxNamesLookup)
	}
	if at, err = checkAt(at); err != nil {
		return nil, err
	}
	// A name not in the stored form of an alias names nothing: a text's
	// runs of words are candidates, not input to refuse.
	order := map[string]int{}
	var members []string
	for _, n := range names {
		if m, ok := schema.AliasMember(n); ok {
			if _, dup := order[m]; !dup {
				order[m] = len(members)
				members = append(members, m)
			}
		}
	}
	out = []sgam.NamedSubject{}
	if len(members) == 0 {
		return out, nil
	}
	pairs, err := s.d.SubjectsNamed(ctx, tenant, members, at)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pairs, func(a, b [2]string) int {
		if c := order[a[0]] - order[b[0]]; c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	for _, p := range pairs {
		var name string
		if json.Unmarshal([]byte(p[0]), &name) == nil {
			out = append(out, sgam.NamedSubject{Name: name, Subject: p[1]})
		}
	}
	return out, nil
}

// SubjectsFrom implements sgam.FactReader.
func (s *Store) SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt time.Time) (out []string, err error) {
	defer s.track("SubjectsFrom", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if len(episodes) > sgam.MaxSubjectsLookup {
		return nil, sgam.Errorf(sgam.Invalid, "episodes", "has %d ids; at most %d", len(episodes), sgam.MaxSubjectsLookup)
	}
	if len(episodes) == 0 {
		return []string{}, nil
	}
	if knownAt.IsZero() {
		knownAt = s.now()
	} else if knownAt, err = sgam.CheckTime("known_at", knownAt); err != nil {
		return nil, err
	}
	out, err = s.d.SubjectsFrom(ctx, tenant, episodes, sgam.Micros(knownAt))
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}

// FactsFrom implements sgam.FactReader.
func (s *Store) FactsFrom(ctx context.Context, tenant string, episodes, subjects []string, knownAt time.Time) (out []sgam.Fact, err error) {
	defer s.track("FactsFrom", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	switch {
	case len(episodes) > sgam.MaxSubjectsLookup:
		return nil, sgam.Errorf(sgam.Invalid, "episodes", "has %d ids; at most %d", len(episodes), sgam.MaxSubjectsLookup)
	case len(subjects) > sgam.MaxSubjectsLookup:
		return nil, sgam.Errorf(sgam.Invalid, "subjects", "has %d ids; at most %d", len(subjects), sgam.MaxSubjectsLookup)
	case len(episodes) == 0 || len(subjects) == 0:
		return []sgam.Fact{}, nil
	}
	if knownAt.IsZero() {
		knownAt = s.now()
	} else if knownAt, err = sgam.CheckTime("known_at", knownAt); err != nil {
		return nil, err
	}
	out, err = s.d.FactsFrom(ctx, tenant, episodes, subjects, sgam.Micros(knownAt), sgam.MaxFactsFrom)
	if out == nil && err == nil {
		out = []sgam.Fact{}
	}
	return out, err
}

// History implements sgam.FactReader.
func (s *Store) History(ctx context.Context, key sgam.Key) (out []sgam.Fact, err error) {
	defer s.track("History", s.start(), &err)
	if err := key.Check(); err != nil {
		return nil, err
	}
	g, err := s.readGov(ctx, key.Tenant)
	if err != nil {
		return nil, err
	}
	return s.d.History(ctx, g.ReadKeys(key, s.now())[0])
}

// Trace implements sgam.FactReader.
func (s *Store) Trace(ctx context.Context, tenant string, factID int64) (tr sgam.Trace, err error) {
	defer s.track("Trace", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return tr, err
	}
	if tr, err = s.d.Trace(ctx, tenant, factID); err != nil {
		return tr, err
	}
	if len(tr.Chain) == 0 {
		return tr, notFound("fact_id", "tenant %s has no fact %d", tenant, factID)
	}
	return tr, nil
}
