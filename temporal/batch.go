package temporal

import "fmt"

// KeyLedger applies a sequence of operations to one key in memory, for a
// store that loads the key's believed rows once per transaction and writes
// the outcome in bulk. Applying operations one by one through a KeyLedger
// gives exactly the rows that applying them one by one through PlanWrite and
// the store would give, with every row written at one transaction instant.
type KeyLedger struct {
	believed []Row         // rows believed now: loaded from the store or inserted here, any order
	at       map[int64]int // position of each believed row in believed
	stored   map[int64]Row // loaded rows by id
	byID     map[int64]*Inserted
	// corroborated marks loaded rows that gained a link in this transaction.
	corroborated map[int64]bool

	// Inserted lists the rows this ledger inserts, in order. A row inserted
	// and retracted within the same transaction is kept, with RetractedAt
	// equal to RecordedAt: never believed at any instant, but in history.
	Inserted []*Inserted
	// RetractStored lists loaded rows to retract.
	RetractStored []int64
	// EvidenceStored lists sources to attach to loaded rows (repeats).
	EvidenceStored []StoredEvidence
}

// Inserted is a row a ledger inserts and where its evidence comes from.
// Row.Source is the episode that asserted it (for a shortened copy, the
// original's); Corroborations are further episodes attached in this
// transaction, in order, without duplicates; EvidenceOf names a stored row
// whose corroborating links the row copies (0: none).
type Inserted struct {
	Row
	Supersedes     int64
	EvidenceOf     int64
	Corroborations []string
}

// StoredEvidence attaches Source to the stored row RowID.
type StoredEvidence struct {
	RowID  int64
	Source string
}

// Outcome is what one operation did: the row that now carries its value,
// and whether it was an idempotent repeat.
type Outcome struct {
	RowID  int64
	Repeat bool
	Stored bool // RowID is a loaded row (only for a repeat)
}

// NewKeyLedger starts a ledger from the key's believed rows, which must
// include the neighbours (PlanWrite) of every operation to be applied.
func NewKeyLedger(believed []Row) *KeyLedger {
	l := &KeyLedger{
		believed: append([]Row(nil), believed...),
		at:       make(map[int64]int, len(believed)),
		stored:   make(map[int64]Row, len(believed)),
		byID:     map[int64]*Inserted{},

		corroborated: map[int64]bool{},
	}
	for i, r := range believed {
		l.at[r.ID] = i
		l.stored[r.ID] = r
	}
	return l
}

// Apply plans op with source at transaction instant tx and records the
// result. nextID allocates row ids. On error (a *ConflictError) the ledger
// must be discarded with the rest of the transaction.
func (l *KeyLedger) Apply(op Op, source string, tx int64, nextID func() int64) (Outcome, error) {
	plan, err := PlanWrite(l.believed, op)
	if err != nil {
		return Outcome{}, err
	}
	if plan.Repeat != 0 {
		if ins := l.byID[plan.Repeat]; ins != nil {
			ins.corroborate(source)
			return Outcome{RowID: plan.Repeat, Repeat: true}, nil
		}
		if l.stored[plan.Repeat].Source != source {
			l.EvidenceStored = append(l.EvidenceStored, StoredEvidence{RowID: plan.Repeat, Source: source})
			l.corroborated[plan.Repeat] = true
		}
		return Outcome{RowID: plan.Repeat, Repeat: true, Stored: true}, nil
	}
	for _, id := range plan.Retract {
		l.retract(id, tx)
	}
	var out Outcome
	for _, nr := range plan.Insert {
		ins := &Inserted{
			Row: Row{ID: nextID(), ValidFrom: nr.ValidFrom, ValidTo: nr.ValidTo, Value: nr.Value,
				RecordedAt: tx, RetractedAt: Open},
			Supersedes: nr.Supersedes,
		}
		switch parent := l.byID[nr.CopyOf]; {
		case nr.CopyOf == 0:
			ins.Source = source
			ins.Version = op.Version
			out.RowID = ins.ID
		case parent != nil:
			ins.Source = parent.Source
			ins.Version = parent.Version
			ins.Actor = parent.Actor
			ins.EvidenceOf = parent.EvidenceOf
			ins.Corroborations = append([]string(nil), parent.Corroborations...)
		default:
			orig := l.stored[nr.CopyOf]
			ins.Source = orig.Source
			ins.Version = orig.Version
			ins.Actor = orig.Actor
			if orig.Corroborated || l.corroborated[nr.CopyOf] {
				ins.EvidenceOf = nr.CopyOf
			}
		}
		l.Inserted = append(l.Inserted, ins)
		l.byID[ins.ID] = ins
		l.believe(ins.Row)
	}
	return out, nil
}

// Rewrite replaces the value of the believed row id (a schema migration
// retyping a value): the row is retracted and inserted again over the same
// window with value and version, keeping its source, actor and evidence,
// superseding it. Rows are not re-planned: the window does not change.
func (l *KeyLedger) Rewrite(id int64, value []byte, version int, tx int64, nextID func() int64) (Outcome, error) {
	i, ok := l.at[id]
	if !ok {
		return Outcome{}, fmt.Errorf("rewrite: fact %d is not believed", id)
	}
	old := l.believed[i]
	l.retract(id, tx)
	ins := &Inserted{
		Row: Row{ID: nextID(), ValidFrom: old.ValidFrom, ValidTo: old.ValidTo, Value: value, RecordedAt: tx, RetractedAt: Open,
			Source: old.Source, Version: version, Actor: old.Actor},
		Supersedes: id,
	}
	switch parent := l.byID[id]; {
	case parent != nil:
		ins.EvidenceOf = parent.EvidenceOf
		ins.Corroborations = append([]string(nil), parent.Corroborations...)
	case old.Corroborated || l.corroborated[id]:
		ins.EvidenceOf = id
	}
	l.Inserted = append(l.Inserted, ins)
	l.byID[ins.ID] = ins
	l.believe(ins.Row)
	return Outcome{RowID: ins.ID}, nil
}

// RetractAll retracts every believed row of the key (a schema migration
// moving the key's values to another attribute). It inserts nothing.
func (l *KeyLedger) RetractAll(tx int64) {
	for len(l.believed) > 0 {
		l.retract(l.believed[0].ID, tx)
	}
}

func (l *KeyLedger) believe(r Row) {
	l.at[r.ID] = len(l.believed)
	l.believed = append(l.believed, r)
}

// Believed returns the rows believed now, loaded or inserted here, in no
// particular order. The caller must not change them.
func (l *KeyLedger) Believed() []Row { return l.believed }

// Row returns a row inserted by this ledger, or nil.
func (l *KeyLedger) Row(id int64) *Inserted { return l.byID[id] }

func (l *KeyLedger) retract(id int64, tx int64) {
	// Swap-remove: believed has no order, and a migration retracts many
	// rows of one key.
	if i, ok := l.at[id]; ok {
		last := len(l.believed) - 1
		l.believed[i] = l.believed[last]
		l.at[l.believed[i].ID] = i
		l.believed = l.believed[:last]
		delete(l.at, id)
	}
	if ins := l.byID[id]; ins != nil {
		ins.RetractedAt = tx
		return
	}
	l.RetractStored = append(l.RetractStored, id)
}

func (ins *Inserted) corroborate(s string) {
	if s == ins.Source {
		return
	}
	for _, have := range ins.Corroborations {
		if have == s {
			return
		}
	}
	ins.Corroborations = append(ins.Corroborations, s)
}

// Sources returns the row's source followed by its corroborations made in
// this transaction (not those copied from a stored row).
func (ins *Inserted) Sources() []string {
	out := make([]string, 0, 1+len(ins.Corroborations))
	if ins.Source != "" {
		out = append(out, ins.Source)
	}
	return append(out, ins.Corroborations...)
}
