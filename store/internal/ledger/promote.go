package ledger

import (
	"bytes"

	"github.com/sgam-dev/sgam"
)

// Consolidation (schema promote: {after: N, within: W}): a value becomes a
// fact only after N consistent signals, the same value from distinct
// episodes whose valid_from lie within W of it; until then each signal is
// a pending candidate (reason recurrence) with the count so far. A signal
// of a different value drops the others: the run starts over. The fact is
// valid from the earliest signal of the run, its sources all of them.

// PromoteKeys lists the keys of ops under a promote rule: the driver loads
// their stored signals (Tx.Signals) for SetSignals.
func (b *Batch) PromoteKeys() []sgam.Key {
	var out []sgam.Key
	seen := map[sgam.Key]bool{}
	for _, o := range b.Ops {
		if o.Promote != nil && o.Op.Value != nil && o.Kind == Write && !seen[o.Key] {
			seen[o.Key] = true
			out = append(out, o.Key)
		}
	}
	return out
}

// SetSignals gives the stored signals of a key.
func (b *Batch) SetSignals(k sgam.Key, signals []sgam.Candidate) {
	if b.signals == nil {
		b.signals = map[sgam.Key][]sgam.Candidate{}
	}
	b.signals[k] = signals
}

// promote applies op i under its promote rule: it holds the op as a
// signal, or writes the fact the signals now support. It reports whether
// it handled the op (false: the value already holds there, and the op is
// an ordinary repeat).
func (b *Batch) promote(i int, o Op, now int64, nextID func() int64) (bool, error) {
	ks := b.keys[o.Key]
	t, v := o.Op.ValidFrom, o.Op.Value
	// Believed now: the stored rows and those this batch wrote (a promotion
	// of an earlier op).
	for _, r := range ks.ledger.Believed() {
		if r.Contains(t) && bytes.Equal(r.Value, v) {
			return false, nil
		}
	}
	within := o.Promote.Within.Microseconds()
	var run []sgam.Candidate
	kept := b.signals[o.Key][:0:0]
	for _, c := range b.signals[o.Key] {
		vf := sgam.Micros(c.ValidFrom)
		switch {
		case !bytes.Equal(c.Value, v), vf < t-within, vf > t+within:
			// A different value starts the run over; a signal outside the
			// window no longer counts.
			b.drop(c)
		default:
			run = append(run, c)
			kept = append(kept, c)
		}
	}
	b.signals[o.Key] = kept
	sources := map[string]bool{o.Source: true}
	earliest, first := t, o.Source
	for _, c := range run {
		sources[c.Source] = true
		if vf := sgam.Micros(c.ValidFrom); vf < earliest {
			earliest, first = vf, c.Source
		}
	}
	if len(sources) < o.Promote.After {
		b.pend(i, o, sgam.ReasonRecurrence, nil, now)
		p := len(b.Pending) - 1
		b.Pending[p].Signals = len(sources)
		// Later ops of the batch count this one.
		if b.held == nil {
			b.held, b.unheld = map[string]int{}, map[int]bool{}
		}
		b.held[b.Pending[p].ID] = p
		b.signals[o.Key] = append(b.signals[o.Key], b.Pending[p])
		return true, nil
	}
	// Enough: the fact, from the earliest signal, the others as evidence.
	op := o.Op
	op.ValidFrom = earliest
	out, err := ks.ledger.Apply(op, first, now, nextID)
	if err != nil {
		return true, Conflict(o, err)
	}
	for src := range sources {
		if src != first {
			if _, err := ks.ledger.Apply(op, src, now, nextID); err != nil {
				return true, Conflict(o, err)
			}
		}
	}
	b.outcomes[i] = out
	for _, c := range run {
		if p, ok := b.held[c.ID]; ok {
			// Held by an earlier op of this batch: that op's result is
			// the fact too.
			for j := range b.pending {
				if b.pending[j] == p+1 {
					b.pending[j], b.outcomes[j] = 0, out
				}
			}
		}
		b.drop(c)
	}
	b.signals[o.Key] = nil
	return true, nil
}

// drop makes a signal obsolete: a stored one is deleted after the flush
// (Dropped), one held by this batch is not stored at all.
func (b *Batch) drop(c sgam.Candidate) {
	if p, ok := b.held[c.ID]; ok {
		b.unheld[p] = true
		return
	}
	b.Dropped = append(b.Dropped, c)
}

// KeepSettled takes back from Dropped the stored signals that a held
// candidate of the batch was settled onto (SettlePending found it
// identical, a retried signal): the candidate is that row, so it stays.
// Call it after SettlePending.
func (b *Batch) KeepSettled() {
	if len(b.Dropped) == 0 {
		return
	}
	held := map[string]bool{}
	for i, c := range b.Pending {
		if !b.unheld[i] {
			held[c.ID] = true
		}
	}
	kept := b.Dropped[:0]
	for _, c := range b.Dropped {
		if !held[c.ID] {
			kept = append(kept, c)
		}
	}
	b.Dropped = kept
}
