// Package ledger is the part of a write transaction that every store does
// the same way: it groups a batch of assertions and retractions by key,
// says which believed rows each key needs loaded, applies the temporal
// rules through temporal.KeyLedger, and builds the results and errors
// callers see. A driver supplies the rows, ids and transaction instant,
// and writes the outcome with its own SQL.
package ledger

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/temporal"
)

// Op is one validated assertion (Op.Value set) or retraction.
type Op struct {
	Key    sgam.Key
	Op     temporal.Op
	Source string
	// Policy settles a different value at an equal valid_from ("" is
	// reject); Sensitive holds the value pending unless its source is
	// user_confirmed; Set marks a set member's op. Gov fills them in.
	Policy    schema.Policy
	Sensitive bool
	Set       bool
	// Promote is the attribute's consolidation rule, nil for none.
	Promote *schema.Promote

	// Kind is Write (the temporal rules), or a schema migration's Rewrite
	// (RowID's value replaced, window kept) or RetractAll (every believed
	// row of the key retracted). Migrated marks a migration's write: at a
	// conflict the stored row, newer than the migrated one, is kept.
	Kind     OpKind
	RowID    int64
	Migrated bool
}

// OpKind says how Apply treats an op.
type OpKind int

// Op kinds.
const (
	Write OpKind = iota
	Rewrite
	RetractAll
)

// fullWindow loads every believed row of a key: the valid instants
// CheckTime allows.
var fullWindow = [2]int64{sgam.Micros(sgam.MinTime()), sgam.Micros(sgam.MaxTime())}

// AssertionOp turns a validated assertion into an Op.
func AssertionOp(a sgam.Assertion) Op {
	return Op{Key: a.Key, Op: temporal.Op{ValidFrom: sgam.Micros(a.ValidFrom), Value: a.Value}, Source: a.Source}
}

// RetractionOp turns a validated retraction into an Op.
func RetractionOp(r sgam.Retraction) Op {
	return Op{Key: r.Key, Op: temporal.Op{ValidFrom: sgam.Micros(r.At)}, Source: r.Source}
}

// Batch is the work of one write transaction.
type Batch struct {
	Ops []Op
	// Keys are the distinct keys of Ops, in the order first seen.
	Keys []sgam.Key
	// Govs are the schemas the ops were validated under, by tenant: their
	// versions are checked by the driver inside the transaction, their
	// source ranks used by prefer_source.
	Govs Govs
	// Pending lists the candidates Apply held back; Hold, after
	// SettlePending, those of them the driver stores (the others repeat a
	// stored candidate).
	Pending []sgam.Candidate
	Hold    []sgam.Candidate
	// Failed is the index of the op Apply refused, -1 when none did.
	Failed int
	// Dropped lists the stored signals Apply made obsolete (a different
	// value, outside the window, promoted): the driver deletes them.
	Dropped []sgam.Candidate

	keys     map[sgam.Key]*keyState
	outcomes []temporal.Outcome
	pending  []int  // by op: 1 + its index in Pending, 0 when not held
	kept     []bool // by op: prefer_source kept the existing row
	kinds    map[EpisodeRef]string
	signals  map[sgam.Key][]sgam.Candidate // stored and held signals, by key
	held     map[string]int                // a signal held by this batch: its index in Pending
	unheld   map[int]bool                  // signals held by this batch that a later op dropped or promoted
}

type keyState struct {
	tmin, tmax int64
	loaded     []temporal.Row
	ledger     *temporal.KeyLedger
}

// New groups ops by key.
func New(ops []Op) *Batch {
	b := &Batch{Ops: ops, keys: make(map[sgam.Key]*keyState), Failed: -1}
	for _, o := range ops {
		tmin, tmax := o.Op.ValidFrom, o.Op.ValidFrom
		if o.Kind != Write {
			tmin, tmax = fullWindow[0], fullWindow[1]
		}
		if o.Promote != nil && o.Op.Value != nil {
			// A promotion writes the fact from the earliest signal, up to
			// Within before the op: its neighbours there must be loaded.
			tmin = max(fullWindow[0], tmin-o.Promote.Within.Microseconds())
		}
		ks := b.keys[o.Key]
		if ks == nil {
			b.keys[o.Key] = &keyState{tmin: tmin, tmax: tmax}
			b.Keys = append(b.Keys, o.Key)
			continue
		}
		ks.tmin = min(ks.tmin, tmin)
		ks.tmax = max(ks.tmax, tmax)
	}
	return b
}

// Window returns the valid instants of k's operations, earliest and latest.
// The driver loads k's believed rows from the one at or before tmin to the
// one after tmax: the neighbours of every operation.
func (b *Batch) Window(k sgam.Key) (tmin, tmax int64) {
	ks := b.keys[k]
	return ks.tmin, ks.tmax
}

// SetBelieved gives the loaded believed rows of k. Every key needs it
// before Apply.
func (b *Batch) SetBelieved(k sgam.Key, rows []temporal.Row) {
	b.keys[k].loaded = rows
	b.keys[k].ledger = temporal.NewKeyLedger(rows)
}

// Apply applies the operations in order at transaction instant now.
// nextID allocates fact ids (at most two per operation). A conflict is
// returned as the *sgam.Error callers see, its field prefixed with
// "field[i]" when field is not empty (for batches).
func (b *Batch) Apply(now int64, nextID func() int64, field string) error {
	b.outcomes = make([]temporal.Outcome, len(b.Ops))
	b.pending, b.kept, b.Pending = make([]int, len(b.Ops)), make([]bool, len(b.Ops)), nil
	b.Failed = -1
	for i, o := range b.Ops {
		ks := b.keys[o.Key]
		if ks.ledger == nil {
			ks.ledger = temporal.NewKeyLedger(nil)
		}
		switch o.Kind {
		case Rewrite:
			out, err := ks.ledger.Rewrite(o.RowID, o.Op.Value, o.Op.Version, now, nextID)
			if err != nil {
				b.Failed = i
				return err
			}
			b.outcomes[i] = out
			continue
		case RetractAll:
			ks.ledger.RetractAll(now)
			b.outcomes[i] = temporal.Outcome{}
			continue
		}
		if o.Sensitive && o.Op.Value != nil && b.kind(o.Key.Tenant, o.Source) != sgam.KindUserConfirmed {
			b.pend(i, o, sgam.ReasonSensitive, nil, now)
			continue
		}
		if o.Promote != nil && o.Op.Value != nil {
			handled, err := b.promote(i, o, now, nextID)
			if err != nil {
				b.Failed = i
				if field != "" {
					err = sgam.PrefixField(fmt.Sprintf("%s[%d]", field, i), err)
				}
				return err
			}
			if handled {
				continue
			}
		}
		out, err := ks.ledger.Apply(o.Op, o.Source, now, nextID)
		var ce *temporal.ConflictError
		if errors.As(err, &ce) {
			var settled bool
			if settled, err = b.settle(i, o, ce, now, nextID); settled {
				continue
			}
		}
		if err != nil {
			b.Failed = i
			err = Conflict(o, err)
			if field != "" {
				err = sgam.PrefixField(fmt.Sprintf("%s[%d]", field, i), err)
			}
			return err
		}
		b.outcomes[i] = out
	}
	return nil
}

// Actors lists the inserted rows that carry a system actor instead of a
// source (copies of such rows, and a migration's writes of them), by actor,
// for the driver to set after inserting.
func (b *Batch) Actors() map[string][]int64 {
	var out map[string][]int64
	for _, k := range b.Keys {
		for _, ins := range b.keys[k].ledger.Inserted {
			actor := ins.Actor
			if actor == "" && ins.Source == "" {
				actor = sgam.ActorMigration
			}
			if actor != "" {
				if out == nil {
					out = map[string][]int64{}
				}
				out[actor] = append(out[actor], ins.ID)
			}
		}
	}
	return out
}

// Ledger returns k's ledger after Apply: what to retract, insert and link.
func (b *Batch) Ledger(k sgam.Key) *temporal.KeyLedger { return b.keys[k].ledger }

// Inserted reports whether Apply inserted any row.
func (b *Batch) Inserted() bool {
	for _, ks := range b.keys {
		if ks.ledger != nil && len(ks.ledger.Inserted) > 0 {
			return true
		}
	}
	return false
}

// NeedsReads reports whether Results will read rows back from the store
// (repeats of stored rows, copies carrying stored evidence), so that a
// driver can commit in the same round trip as the writes when it won't.
func (b *Batch) NeedsReads() bool {
	for i, o := range b.Ops {
		if b.pending[i] != 0 || o.Kind == RetractAll {
			continue
		}
		if ins := b.keys[o.Key].ledger.Row(b.outcomes[i].RowID); ins == nil || ins.EvidenceOf != 0 {
			return true
		}
	}
	return false
}

// Results returns the result of every operation after the outcome was
// written. Rows whose sources are all known in memory are built directly;
// read fetches the others (repeats of stored rows, copies that carry
// stored evidence) inside the transaction.
func (b *Batch) Results(read func(k sgam.Key, id int64) (sgam.Fact, error)) ([]sgam.WriteResult, error) {
	out := make([]sgam.WriteResult, len(b.Ops))
	for i, o := range b.Ops {
		if p := b.pending[i]; p != 0 {
			c := b.Pending[p-1]
			out[i] = sgam.WriteResult{Pending: &c}
			continue
		}
		if o.Kind == RetractAll {
			continue
		}
		oc := b.outcomes[i]
		var f sgam.Fact
		if ins := b.keys[o.Key].ledger.Row(oc.RowID); ins != nil && ins.EvidenceOf == 0 {
			f = InsertedFact(o.Key, ins)
		} else {
			var err error
			if f, err = read(o.Key, oc.RowID); err != nil {
				return nil, err
			}
		}
		out[i] = sgam.WriteResult{Fact: &f, NoChange: oc.Repeat || b.kept[i], Kept: b.kept[i]}
	}
	return out, nil
}

// InsertedFact builds the fact of a row a ledger inserted.
func InsertedFact(k sgam.Key, ins *temporal.Inserted) sgam.Fact {
	f := sgam.Fact{
		ID: ins.ID, Tenant: k.Tenant, Subject: k.Subject, Attribute: k.Attribute,
		Value: ins.Value, Tombstone: ins.Value == nil,
		ValidFrom: sgam.FromMicros(ins.ValidFrom), ValidTo: TimeOrNil(ins.ValidTo),
		RecordedAt: sgam.FromMicros(ins.RecordedAt), RetractedAt: TimeOrNil(ins.RetractedAt),
		Sources: ins.Sources(), SchemaVersion: ins.Version,
	}
	if k.Member != "" {
		f.Member = json.RawMessage(k.Member)
	}
	if ins.Supersedes != 0 {
		id := ins.Supersedes
		f.Supersedes = &id
	}
	return f
}

// TimeOrNil converts a stored instant to a time, nil for temporal.Open.
func TimeOrNil(us int64) *time.Time {
	if us == temporal.Open {
		return nil
	}
	t := sgam.FromMicros(us)
	return &t
}

// Conflict turns a temporal conflict into the error callers see.
func Conflict(o Op, err error) error {
	var ce *temporal.ConflictError
	if !errors.As(err, &ce) {
		return err
	}
	field := "valid_from"
	if o.Op.Value == nil {
		field = "at"
	}
	existing := "a retraction"
	if ce.Existing.Value != nil {
		existing = string(ce.Existing.Value)
		if len(existing) > 200 {
			existing = existing[:200] + "…"
		}
	}
	return &sgam.Error{Code: sgam.Conflict, Field: field, Reason: sgam.RejectConflict, Err: err, Message: fmt.Sprintf(
		"%s already has %s from %s (fact %d); a different value at the same instant is rejected: assert it at another instant, or correct it from a later one",
		o.Key.Subject+"."+o.Key.Attribute, existing, sgam.FormatTime(sgam.FromMicros(ce.Existing.ValidFrom)), ce.Existing.ID)}
}

// Row is a stored fact as the temporal rules see it (for import checks).
func Row(f sgam.StoredFact) temporal.Row {
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

// EpisodeRef names an episode.
type EpisodeRef struct{ Tenant, ID string }

// ImportStore is what PlanImport asks of a store, inside the import's
// transaction, each question for a whole batch at once.
type ImportStore interface {
	// StoredFacts returns the stored rows with the ids (within the same
	// tenant) of the given facts.
	StoredFacts(facts []sgam.StoredFact) (map[int64]sgam.StoredFact, error)
	// HasEpisodes reports which episodes exist.
	HasEpisodes(refs []EpisodeRef) (map[EpisodeRef]bool, error)
	// KeyRows returns every row of each key.
	KeyRows(keys []sgam.Key) (map[sgam.Key][]temporal.Row, error)
	// FactTenant returns the tenant of a stored fact id, when the store can
	// tell (ids are store-wide); "" when there is no such fact or it cannot.
	FactTenant(id int64) (string, error)
}

// ImportPlan is what of a batch's facts to insert.
type ImportPlan struct {
	Fresh        []int      // indexes into the batch's facts to insert
	Keys         []sgam.Key // the keys they touch
	FactsPresent int        // facts already stored, identical
}

// PlanImport decides which of a batch's facts to insert, after its episodes
// were written: rows already present and identical are skipped; a different
// row under a present id is a Conflict; the rest must cite episodes that
// exist, supersede facts of their own tenant and keep every invariant of
// their keys, or the import is refused with an error naming the record.
func PlanImport(st ImportStore, b sgam.ImportBatch) (ImportPlan, error) {
	var p ImportPlan
	stored, err := st.StoredFacts(b.Facts)
	if err != nil {
		return p, err
	}
	for i, f := range b.Facts {
		have, ok := stored[f.ID]
		switch {
		case !ok:
			p.Fresh = append(p.Fresh, i)
		case sgam.StoredFactsEqual(have, f):
			p.FactsPresent++
		default:
			return p, sgam.Errorf(sgam.Conflict, fmt.Sprintf("facts[%d]", i), "fact %d already exists with different content", f.ID)
		}
	}
	var refs []EpisodeRef
	seen := map[EpisodeRef]bool{}
	ref := func(tenant, id string) {
		r := EpisodeRef{tenant, id}
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	batchTenant := map[int64]string{}
	byKey := map[sgam.Key][]int{}
	for _, i := range p.Fresh {
		f := b.Facts[i]
		batchTenant[f.ID] = f.Tenant
		if f.Source != "" {
			ref(f.Tenant, f.Source)
		}
		for _, e := range f.Evidence {
			ref(f.Tenant, e.EpisodeID)
		}
		if byKey[f.Key()] == nil {
			p.Keys = append(p.Keys, f.Key())
		}
		byKey[f.Key()] = append(byKey[f.Key()], i)
	}
	exists, err := st.HasEpisodes(refs)
	if err != nil {
		return p, err
	}
	for _, i := range p.Fresh {
		f := b.Facts[i]
		field := fmt.Sprintf("facts[%d]", i)
		missing := func(id, at string) error {
			return sgam.Errorf(sgam.Invalid, field+at, "tenant %s has no episode %s: an export lists episodes before the facts that cite them", f.Tenant, id)
		}
		if f.Source != "" && !exists[EpisodeRef{f.Tenant, f.Source}] {
			return p, missing(f.Source, ".source")
		}
		for j, e := range f.Evidence {
			if !exists[EpisodeRef{f.Tenant, e.EpisodeID}] {
				return p, missing(e.EpisodeID, fmt.Sprintf(".evidence[%d].episode_id", j))
			}
		}
		if f.Supersedes != nil {
			tenant, ok := batchTenant[*f.Supersedes]
			if !ok {
				if tenant, err = st.FactTenant(*f.Supersedes); err != nil {
					return p, err
				}
			}
			if tenant != "" && tenant != f.Tenant {
				return p, sgam.Errorf(sgam.Invalid, field+".supersedes", "fact %d belongs to another tenant", *f.Supersedes)
			}
		}
	}
	rows, err := st.KeyRows(p.Keys)
	if err != nil {
		return p, err
	}
	for _, k := range p.Keys {
		all := rows[k]
		batchIndex := map[int64]int{}
		for _, i := range byKey[k] {
			all = append(all, Row(b.Facts[i]))
			batchIndex[b.Facts[i].ID] = i
		}
		if ps := temporal.Check(all); len(ps) > 0 {
			field := "facts"
			for _, id := range ps[0].IDs {
				if i, ok := batchIndex[id]; ok {
					field = fmt.Sprintf("facts[%d]", i)
				}
			}
			return p, sgam.Errorf(sgam.Conflict, field, "importing would break an invariant of %s: %s", k, ps[0].Message)
		}
	}
	return p, nil
}

// IsPlaceholder reports whether e was created by a write that named it as
// a source before it was captured; adding the episode fills it in.
func IsPlaceholder(e sgam.Episode) bool {
	return e.Kind == sgam.KindUnknown && e.Content == "" && e.Session == "" && e.Metadata == nil && e.IdempotencyKey == "" && len(e.Subjects) == 0
}

// SameEpisode reports whether adding e repeats the stored have. occurred_at
// counts only when the caller gave it: a retry that defaulted it to "now"
// is still a repeat.
func SameEpisode(have, e sgam.Episode, explicitTime bool) bool {
	return have.Session == e.Session && have.Kind == e.Kind && have.Retention == e.Retention && have.Content == e.Content &&
		bytes.Equal(have.Metadata, e.Metadata) && have.IdempotencyKey == e.IdempotencyKey && slices.Equal(have.Subjects, e.Subjects) &&
		(!explicitTime || have.OccurredAt.Equal(e.OccurredAt)) && (e.ID == "" || have.ID == e.ID)
}

// NewEpisodeID returns a random episode id.
func NewEpisodeID() string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	var b [16]byte
	rand.Read(b[:])
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[c&31]
	}
	return "ep_" + string(out)
}

// KeyChecker runs the temporal invariants over a stream of fact rows
// ordered by key, holding one key's rows at a time: what Check does over a
// whole store.
type KeyChecker struct {
	cur        sgam.Key
	rows       []temporal.Row
	Violations []sgam.Violation
}

// Add takes the next row; rows of one key must come together.
func (c *KeyChecker) Add(k sgam.Key, r temporal.Row) {
	if k != c.cur {
		c.flush()
		c.cur = k
	}
	c.rows = append(c.rows, r)
}

// Done checks the last key and returns every violation found.
func (c *KeyChecker) Done() []sgam.Violation {
	c.flush()
	if c.Violations == nil {
		c.Violations = []sgam.Violation{}
	}
	return c.Violations
}

func (c *KeyChecker) flush() {
	for _, p := range temporal.Check(c.rows) {
		c.Violations = append(c.Violations, sgam.Violation{Rule: p.Rule, Tenant: c.cur.Tenant, Subject: c.cur.Subject,
			Attribute: c.cur.Attribute, FactIDs: p.IDs, Message: p.Message})
	}
	c.rows = c.rows[:0]
}
