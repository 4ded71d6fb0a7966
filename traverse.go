package sgam

import (
	"context"
	"encoding/json"
	"fmt"
)

// MaxHops bounds the path of a Traverse.
const MaxHops = 8

// Hop is one step of a traversal: the fact of attribute Attribute of
// subject From (a relation, its value a subject id) that leads to To.
type Hop struct {
	Depth     int    `json:"depth"` // 1 for the first attribute of the path
	From      string `json:"from"`
	Attribute string `json:"attribute"`
	To        string `json:"to"`
	Fact      Fact   `json:"fact"`
	// Cycle marks a hop to a subject already reached at the same depth or
	// before: it is reported, not followed again.
	Cycle bool `json:"cycle,omitempty"`
}

// Graph is what Traverse reads: facts, and the schemas that say which
// attributes are relations.
type Graph interface {
	FactReader
	Schemas
}

// Traverse follows relations from subject along path, one attribute per
// hop ("account", then "policy": Mira's account, then its policies; under a
// schema every attribute of the path must be a ref), every
// hop read at the same instants (at resolved once against clock). A hop's
// value must be a subject id (a JSON string, as a ref attribute holds); a
// set fans out to every member. Subjects already reached are not expanded
// again, so a cyclic graph ends. Hops come breadth first, in path order.
func Traverse(ctx context.Context, st Graph, clock Clock, tenant, subject string, path []string, at At) ([]Hop, error) {
	if err := CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := CheckSubject(subject); err != nil {
		return nil, err
	}
	switch {
	case len(path) == 0:
		return nil, Errorf(Invalid, "path", "is required: one or more attributes to follow")
	case len(path) > MaxHops:
		return nil, Errorf(Invalid, "path", "has %d hops; the limit is %d", len(path), MaxHops)
	}
	for i, a := range path {
		if err := checkIdentifier(fmt.Sprintf("path[%d]", i), a, maxAttributeBytes); err != nil {
			return nil, err
		}
	}
	for i, a := range path {
		ref, governed, err := st.Relation(ctx, tenant, a)
		if err != nil {
			return nil, err
		}
		if governed && !ref {
			return nil, Errorf(Invalid, fmt.Sprintf("path[%d]", i), "%s is not a relation: the schema does not declare it type ref", a)
		}
	}
	asOf, knownAt, err := at.Resolve(clock.Now())
	if err != nil {
		return nil, err
	}
	at = At{AsOf: asOf, KnownAt: knownAt}
	seen := map[string]bool{subject: true}
	frontier := []string{subject}
	hops := []Hop{}
	const maxFanout = 10000
	for depth, attr := range path {
		var next []string
		for _, from := range frontier {
			facts, err := st.Members(ctx, Key{Tenant: tenant, Subject: from, Attribute: attr}, at)
			if err != nil {
				return nil, err
			}
			for _, f := range facts {
				var to string
				if json.Unmarshal(f.Value, &to) != nil || CheckSubject(to) != nil {
					return nil, Errorf(Invalid, fmt.Sprintf("path[%d]", depth),
						"%s.%s holds %s, not a subject id: only relations (ref attributes) can be followed", from, attr, f.Value)
				}
				h := Hop{Depth: depth + 1, From: from, Attribute: attr, To: to, Fact: f, Cycle: seen[to]}
				hops = append(hops, h)
				if !h.Cycle {
					seen[to] = true
					next = append(next, to)
				}
				if len(hops) > maxFanout {
					return nil, Errorf(Invalid, "path", "reaches more than %d facts; narrow the path", maxFanout)
				}
			}
		}
		frontier = next
	}
	return hops, nil
}
