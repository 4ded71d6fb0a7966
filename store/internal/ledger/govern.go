package ledger

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/temporal"
)

// Gov is the schema a write is validated under. The zero Gov is "no
// schema": any attribute, any JSON value, every attribute single-valued,
// conflicts rejected.
type Gov struct {
	Head
	Schema *schema.Schema
}

// Head names the schema version in force for a tenant: Owner is the tenant
// when it applied a schema of its own, "" when the store-wide default
// serves it; Version 0 is no schema at all.
type Head struct {
	Owner   string
	Version int
}

// HeadOf is the head of tenant's schema given the latest version of its
// own (0: none) and of the store default's: its own when it has one.
func HeadOf(tenant string, own, def int) Head {
	if own > 0 {
		return Head{Owner: tenant, Version: own}
	}
	return Head{Version: def}
}

// Govs are the schemas of a write's tenants, by tenant.
type Govs map[string]Gov

// For returns tenant's schema (the zero Gov when govs has none for it).
func (govs Govs) For(tenant string) Gov { return govs[tenant] }

// Heads returns the head of every tenant's schema.
func (govs Govs) Heads() map[string]Head {
	out := make(map[string]Head, len(govs))
	for t, g := range govs {
		out[t] = g.Head
	}
	return out
}

// attribute resolves a written attribute name: a declared name or alias,
// or an old name still in a rename's dual-read window. With no schema it
// is nil (any attribute, any value), but for a built-in attribute.
func (g Gov) attribute(name string, now time.Time) (*schema.Attribute, error) {
	if a, ok := g.lookup(name); ok || g.Schema == nil {
		return a, nil
	}
	if to, ok := g.Schema.DualRead(name, now); ok {
		if a, ok := g.Schema.Attribute(to); ok {
			return a, nil
		}
	}
	e := sgam.Errorf(sgam.Invalid, "attribute", "%q is not declared in schema version %d", name, g.Version)
	e.Reason = sgam.RejectUnknownAttribute
	return nil, e
}

// Assertion turns a checked assertion into an op under the schema: the
// attribute resolved to its declared name, the value validated and in
// canonical form, a set member keyed by its value. set says whether the
// caller meant a set (Add: true, Assert: either).
func (g Gov) Assertion(a sgam.Assertion, now time.Time) (Op, error) {
	o := AssertionOp(a)
	o.Op.Version = g.Version
	attr, err := g.attribute(a.Key.Attribute, now)
	if err != nil || attr == nil {
		return o, err
	}
	v, err := attr.Value(a.Value)
	if err != nil {
		return o, err
	}
	o.Key.Attribute, o.Op.Value = attr.Name, v
	o.Policy, o.Sensitive, o.Promote = attr.Conflict, attr.Sensitive, attr.Promote
	if attr.Cardinality == schema.Many {
		if len(v) > sgam.MaxMemberBytes {
			return o, sgam.Errorf(sgam.Invalid, "value", "is %d bytes; a member of the set %s may have at most %d", len(v), attr.Name, sgam.MaxMemberBytes)
		}
		o.Key.Member, o.Set = string(v), true
	}
	if o.Policy == schema.LatestRecorded {
		o.Op.Replace = true
	}
	return o, nil
}

// Retraction turns a checked retraction into an op under the schema. On a
// set, r.Value names the member to remove and is required; on a single
// value it must be empty.
func (g Gov) Retraction(r sgam.Retraction, now time.Time) (Op, error) {
	o := RetractionOp(r)
	o.Op.Version = g.Version
	attr, err := g.attribute(r.Key.Attribute, now)
	if err != nil {
		return o, err
	}
	if attr == nil {
		if len(r.Value) > 0 {
			return o, sgam.Errorf(sgam.Invalid, "value", "names a set member, but no schema declares %s a set", r.Key.Attribute)
		}
		return o, nil
	}
	o.Key.Attribute = attr.Name
	// A retraction at the valid_from of a value is settled by the same
	// policy as a different value (review holds values only: a retraction
	// conflicts there). It is never held as sensitive: removing a value
	// needs no confirmation.
	o.Policy = attr.Conflict
	if o.Policy == schema.LatestRecorded {
		o.Op.Replace = true
	}
	switch {
	case attr.Cardinality != schema.Many && len(r.Value) > 0:
		return o, sgam.Errorf(sgam.Invalid, "value", "names a set member, but %s holds a single value: retract it without a value", attr.Name)
	case attr.Cardinality == schema.Many && len(r.Value) == 0:
		return o, sgam.Errorf(sgam.Invalid, "value", "is required: %s is a set, name the member to remove", attr.Name)
	case attr.Cardinality == schema.Many:
		v, err := attr.Value(r.Value)
		if err != nil {
			return o, err
		}
		o.Key.Member, o.Set = string(v), true
	}
	return o, nil
}

// Candidate turns a pending candidate into the ops of its confirmation: the
// candidate's value, validated again under the schema in force (which may
// have changed since it was held), from its own source, settling any
// conflict in its favour; then the confirming episode linked to the same
// row as evidence.
func (g Gov) Candidate(c sgam.Candidate, confirmer string, now time.Time) ([]Op, error) {
	a := sgam.Assertion{Key: sgam.Key{Tenant: c.Tenant, Subject: c.Subject, Attribute: c.Attribute},
		Value: c.Value, ValidFrom: c.ValidFrom, Source: c.Source}
	o, err := g.Assertion(a, now)
	if err != nil {
		return nil, err
	}
	o.Policy, o.Sensitive, o.Promote, o.Op.Replace = "", false, nil, true
	ops := []Op{o}
	if confirmer != c.Source {
		o.Op.Replace = false
		o.Source = confirmer
		ops = append(ops, o)
	}
	return ops, nil
}

// pend holds op i back as a candidate.
func (b *Batch) pend(i int, o Op, reason string, conflictsWith *int64, now int64) {
	c := sgam.Candidate{
		ID: "pd_" + NewEpisodeID()[3:], Tenant: o.Key.Tenant, Subject: o.Key.Subject, Attribute: o.Key.Attribute,
		Value: o.Op.Value, ValidFrom: sgam.FromMicros(o.Op.ValidFrom), Source: o.Source, Reason: reason,
		ConflictsWith: conflictsWith, RecordedAt: sgam.FromMicros(now), SchemaVersion: o.Op.Version,
	}
	if o.Key.Member != "" {
		c.Member = []byte(o.Key.Member)
	}
	b.Pending = append(b.Pending, c)
	b.pending[i] = len(b.Pending)
}

// KindsNeeded lists the episodes whose kind Apply will ask for: the sources
// of sensitive and prefer_source operations, and of the believed rows
// prefer_source may weigh against them. Call it after SetBelieved.
func (b *Batch) KindsNeeded() []EpisodeRef {
	var out []EpisodeRef
	seen := map[EpisodeRef]bool{}
	add := func(tenant, id string) {
		r := EpisodeRef{tenant, id}
		if id != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, o := range b.Ops {
		if o.Sensitive || o.Policy == schema.PreferSource {
			add(o.Key.Tenant, o.Source)
		}
		if o.Policy == schema.PreferSource {
			for _, r := range b.keys[o.Key].loaded {
				add(o.Key.Tenant, r.Source)
			}
		}
	}
	return out
}

// SetKinds gives the kinds of the episodes KindsNeeded listed (a missing
// episode has none).
func (b *Batch) SetKinds(kinds map[EpisodeRef]string) { b.kinds = kinds }

func (b *Batch) kind(tenant, id string) string { return b.kinds[EpisodeRef{tenant, id}] }

// rank is the strength of an episode as a source under the schema.
func (b *Batch) rank(tenant, id string) int {
	g := b.Govs.For(tenant)
	if g.Schema == nil {
		return 0
	}
	return g.Schema.Rank(b.kind(tenant, id))
}

// settle applies conflict policy to op i after the temporal rules found a
// different value at its valid_from. It reports handled when the op was
// settled without error (held pending, kept the existing row, or replaced
// it); otherwise the conflict stands.
func (b *Batch) settle(i int, o Op, ce *temporal.ConflictError, now int64, nextID func() int64) (bool, error) {
	ks := b.keys[o.Key]
	if o.Migrated {
		b.outcomes[i] = temporal.Outcome{RowID: ce.Existing.ID, Stored: ks.ledger.Row(ce.Existing.ID) == nil}
		b.kept[i] = true
		return true, nil
	}
	switch o.Policy {
	case schema.Review:
		if o.Op.Value == nil {
			return false, ce
		}
		id := ce.Existing.ID
		b.pend(i, o, sgam.ReasonReview, &id, now)
		return true, nil
	case schema.PreferSource:
		mine, theirs := b.rank(o.Key.Tenant, o.Source), b.rank(o.Key.Tenant, ce.Existing.Source)
		switch {
		case mine > theirs:
			op := o.Op
			op.Replace = true
			out, err := ks.ledger.Apply(op, o.Source, now, nextID)
			b.outcomes[i] = out
			return err == nil, err
		case mine < theirs:
			b.outcomes[i] = temporal.Outcome{RowID: ce.Existing.ID, Stored: ks.ledger.Row(ce.Existing.ID) == nil}
			b.kept[i] = true
			return true, nil
		}
		return false, fmt.Errorf("%w; both sources rank %d under prefer_source", ce, mine)
	}
	return false, ce
}

// LoadGov rebuilds the Gov of a stored schema version (version 0: none).
func LoadGov(h Head, body []byte) (Gov, error) {
	if h.Version == 0 {
		return Gov{Head: h}, nil
	}
	s, err := schema.Parse(body)
	if err != nil {
		return Gov{}, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("stored schema version %d no longer parses: %v", h.Version, err), Err: err}
	}
	return Gov{Head: h, Schema: s}, nil
}

// NextSchema parses a schema file to apply over cur, the schema in force
// for owner ("" for the store default). It returns the new version to
// store (Version and Body set, Hash and Diff filled in), or unchanged when
// the file says what cur says. The version follows cur's, so a tenant's
// first schema of its own follows the default version that served it.
func NextSchema(owner string, cur Gov, file []byte) (next sgam.SchemaVersion, unchanged bool, err error) {
	s, err := schema.Parse(file)
	if err != nil {
		return next, false, err
	}
	next = sgam.SchemaVersion{Tenant: owner, StoreDefault: owner == "", Version: cur.Version + 1, Hash: s.Hash(), Body: s.Canonical(),
		Diff: schema.Diff(cur.Schema, s)}
	if cur.Schema != nil && cur.Schema.Hash() == next.Hash {
		return next, true, nil
	}
	return next, false, nil
}

// ReadNames are the attribute names a read of name tries, in order: a
// declared name; during a rename's dual-read window the old name and then
// the new one, so that rows not yet migrated and past beliefs still answer
// under the old name; else the attribute that has name as an alias.
func (g Gov) ReadNames(name string, now time.Time) []string {
	if g.Schema == nil {
		return []string{name}
	}
	a, declared := g.Schema.Attribute(name)
	if declared && a.Name == name {
		return []string{name}
	}
	// The old name of a rename in its window reads both keys, even when
	// the new attribute lists it as an alias too: the alias alone would
	// read the new key only, and lose the beliefs from before the
	// migration.
	if to, ok := g.Schema.DualRead(name, now); ok {
		return []string{name, to}
	}
	if declared {
		return []string{a.Name}
	}
	return []string{name}
}

// lookup returns the attribute called name (a declared name or alias)
// under the schema; with no schema, the built-in one, if any.
func (g Gov) lookup(name string) (*schema.Attribute, bool) {
	if g.Schema == nil {
		return schema.Builtin(name)
	}
	return g.Schema.Attribute(name)
}

// IsSet reports whether attribute name is a set: declared so by the
// schema, or a built-in set.
func (g Gov) IsSet(name string) bool {
	a, ok := g.lookup(name)
	return ok && a.Cardinality == schema.Many
}

// Build turns a write's input into ops under the schemas of its tenants,
// inside the write transaction (so that no schema can change before
// commit); now resolves dual-read windows.
type Build struct {
	// Tenants are the tenants of the ops, whose schemas Ops needs.
	Tenants []string
	Ops     func(g Govs, now time.Time) ([]Op, error)
	// Err is set when the input failed its checks: there is nothing to write.
	Err error
}

// Failed is the Build of an input that failed its checks.
func Failed(err error) Build { return Build{Err: err} }

// AssertOne checks a single assertion and returns its Build (Failed when
// the check fails). set: the caller asked to Add to a set, and the
// attribute must be one.
func AssertOne(l sgam.Limits, a sgam.Assertion, set bool) Build {
	a, err := l.CheckAssertion(a)
	if err != nil {
		return Failed(err)
	}
	return Build{Tenants: []string{a.Key.Tenant}, Ops: func(g Govs, now time.Time) ([]Op, error) {
		o, err := g.For(a.Key.Tenant).Assertion(a, now)
		if err == nil && set && !o.Set {
			err = notASet(o.Key.Attribute, "assert")
		}
		return []Op{o}, err
	}}
}

// RetractOne checks a single retraction and returns its Build. set: the
// caller asked to Remove from a set.
func RetractOne(l sgam.Limits, r sgam.Retraction, set bool) Build {
	r, err := l.CheckRetraction(r)
	if err != nil {
		return Failed(err)
	}
	if set && len(r.Value) == 0 {
		return Failed(sgam.Errorf(sgam.Invalid, "value", "is required: the member to remove"))
	}
	return Build{Tenants: []string{r.Key.Tenant}, Ops: func(g Govs, now time.Time) ([]Op, error) {
		o, err := g.For(r.Key.Tenant).Retraction(r, now)
		if err == nil && set && !o.Set {
			err = notASet(o.Key.Attribute, "retract")
		}
		return []Op{o}, err
	}}
}

// AssertAll checks a batch of assertions and returns its Build, naming a
// bad one "assertions[i]".
func AssertAll(l sgam.Limits, as []sgam.Assertion) Build {
	checked := make([]sgam.Assertion, len(as))
	var tenants []string
	for i, a := range as {
		a, err := l.CheckAssertion(a)
		if err != nil {
			return Failed(sgam.PrefixField(fmt.Sprintf("assertions[%d]", i), err))
		}
		checked[i] = a
		if !slices.Contains(tenants, a.Key.Tenant) {
			tenants = append(tenants, a.Key.Tenant)
		}
	}
	return Build{Tenants: tenants, Ops: func(g Govs, now time.Time) ([]Op, error) {
		ops := make([]Op, len(checked))
		for i, a := range checked {
			o, err := g.For(a.Key.Tenant).Assertion(a, now)
			if err != nil {
				return nil, sgam.PrefixField(fmt.Sprintf("assertions[%d]", i), err)
			}
			ops[i] = o
		}
		return ops, nil
	}}
}

// Join builds several writes as one: their ops in order. It returns the
// joined Build and, for each part, the index of its first op.
func Join(parts []Build) (Build, []int) {
	var tenants []string
	for _, p := range parts {
		for _, t := range p.Tenants {
			if !slices.Contains(tenants, t) {
				tenants = append(tenants, t)
			}
		}
	}
	starts := make([]int, len(parts))
	return Build{Tenants: tenants, Ops: func(g Govs, now time.Time) ([]Op, error) {
		var ops []Op
		for i, p := range parts {
			starts[i] = len(ops)
			o, err := p.Ops(g, now)
			if err != nil {
				return nil, err
			}
			ops = append(ops, o...)
		}
		return ops, nil
	}}, starts
}

func notASet(attr, use string) error {
	return sgam.Errorf(sgam.Invalid, "attribute", "%s is not a set (cardinality many) in the schema: %s it instead", attr, use)
}

// ReadKeys are the keys a read of k tries, in order, until one has a value
// (see ReadNames).
func (g Gov) ReadKeys(k sgam.Key, now time.Time) []sgam.Key {
	names := g.ReadNames(k.Attribute, now)
	out := make([]sgam.Key, len(names))
	for i, n := range names {
		out[i] = k
		out[i].Attribute = n
	}
	return out
}

// CheckGet refuses Get on a set: a set has many values at once.
func (g Gov) CheckGet(k sgam.Key) error {
	if k.Member == "" && g.IsSet(k.Attribute) {
		return &sgam.Error{Code: sgam.Invalid, Field: "attribute", Err: sgam.ErrSet,
			Message: fmt.Sprintf("%s is a set (cardinality many): read its members", k.Attribute)}
	}
	return nil
}

// CheckImport holds the imported rows of tenant that are still believed to
// g, the tenant's schema: their attribute declared under its own name, a value in the
// canonical form of its type, a set member keyed by its value (with no
// schema, the rows of a built-in attribute only). Retracted
// rows are history and keep the shape they had (a migration may have
// changed it since).
func (g Gov) CheckImport(b sgam.ImportBatch, tenant string) error {
	for i, f := range b.Facts {
		if f.RetractedAt != nil || f.Tenant != tenant {
			continue
		}
		field := fmt.Sprintf("facts[%d]", i)
		attr, ok := g.lookup(f.Attribute)
		if !ok && g.Schema == nil {
			continue // no schema: any attribute
		}
		if !ok || attr.Name != f.Attribute {
			return sgam.Errorf(sgam.Invalid, field+".attribute", "%q is not declared in schema version %d; import into a store with a matching schema, or migrate after importing without one", f.Attribute, g.Version)
		}
		many := attr.Cardinality == schema.Many
		if many != (len(f.Member) > 0) {
			return sgam.Errorf(sgam.Invalid, field+".member", "%s is %s in schema version %d", f.Attribute, map[bool]string{true: "a set", false: "single-valued"}[many], g.Version)
		}
		if f.Tombstone {
			continue
		}
		v, err := attr.Value(f.Value)
		if err != nil {
			return sgam.PrefixField(field, err)
		}
		if !bytes.Equal(v, f.Value) {
			return sgam.Errorf(sgam.Invalid, field+".value", "%s is not in the canonical form of %s (%s)", f.Value, f.Attribute, v)
		}
	}
	return nil
}

// SettlePending sets Hold to the candidates Apply held back that are new.
// One that repeats a stored candidate (same key, valid_from, value and
// source: a retried write) or an earlier one of the batch takes that
// candidate's id instead, so that a retry holds nothing twice. find looks a
// stored one up ("" when there is none).
func (b *Batch) SettlePending(find func(sgam.Candidate) (string, error)) error {
	b.Hold = b.Hold[:0]
	type ident struct {
		key         sgam.Key
		validFrom   int64
		value, from string
	}
	seen := map[ident]string{}
	for i := range b.Pending {
		if b.unheld[i] {
			continue // a signal a later op of the batch dropped or promoted
		}
		c := &b.Pending[i]
		id := ident{c.Key(), sgam.Micros(c.ValidFrom), string(c.Value), c.Source}
		if have, ok := seen[id]; ok {
			c.ID = have
			continue
		}
		have, err := find(*c)
		if err != nil {
			return err
		}
		if have != "" {
			c.ID = have
		} else {
			b.Hold = append(b.Hold, *c)
		}
		seen[id] = c.ID
	}
	return nil
}

// Relation reports whether the schema declares attribute name a relation
// (type ref); governed is false without a schema, when any attribute whose
// values are subject ids may be followed.
func (g Gov) Relation(name string) (ref, governed bool) {
	if g.Schema == nil {
		return false, false
	}
	a, ok := g.Schema.Attribute(name)
	return ok && a.Type == schema.TypeRef, true
}
