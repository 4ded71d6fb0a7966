package temporal

import (
	"bytes"
	"fmt"
	"math"
	"sort"
)

// Open is the end of an open window (valid_to or retracted_at not set).
const Open int64 = math.MaxInt64

// Row is one stored fact row of a key, as the rules see it.
type Row struct {
	ID          int64
	ValidFrom   int64
	ValidTo     int64  // Open when the row is open
	Value       []byte // canonical JSON; nil for a tombstone
	RecordedAt  int64
	RetractedAt int64 // Open while the row is believed
	// Source is the episode that asserted the row, and Corroborated tells
	// whether other episodes were linked to it later. The rules ignore
	// both; KeyLedger carries them to shortened copies.
	Source       string
	Corroborated bool
	// Version is the schema version the row was written under; KeyLedger
	// stamps an operation's on its row and keeps a row's on its copies.
	Version int
	// Actor is the system actor that keeps a row without a source
	// ("retention", "migration"); copies keep it.
	Actor string
}

// Tombstone reports whether the row records the absence of a value.
func (r Row) Tombstone() bool { return r.Value == nil }

// Contains reports whether valid instant v is inside the row's valid window.
func (r Row) Contains(v int64) bool { return r.ValidFrom <= v && v < r.ValidTo }

// BelievedAt reports whether the store believed the row at transaction
// instant k.
func (r Row) BelievedAt(k int64) bool { return r.RecordedAt <= k && k < r.RetractedAt }

// Op is an incoming assertion (Value set) or retraction (Value nil) at
// valid time ValidFrom.
type Op struct {
	ValidFrom int64
	Value     []byte
	// Replace settles a different value at an equal valid_from in the
	// operation's favour (conflict policy latest_recorded, a preferred
	// source, a confirmed candidate): the existing row is retracted and the
	// new value takes its window. Without it that is a *ConflictError.
	Replace bool
	Version int // schema version to stamp on the row carrying the value
}

// NewRow is a row a plan inserts.
type NewRow struct {
	ValidFrom int64
	ValidTo   int64
	Value     []byte
	// Supersedes is the row this one replaced or shortened (0: none).
	Supersedes int64
	// CopyOf is set when the row is a shortened copy of a retracted row: it
	// keeps that row's value and evidence. Zero for the row carrying the
	// operation's own value, which takes the operation's source.
	CopyOf int64
}

// Plan is what one operation does to a key.
type Plan struct {
	// Repeat is the id of a believed row that already says exactly this
	// (same valid_from, same value). Nothing is retracted or inserted; the
	// operation's source is attached to that row as extra evidence.
	Repeat int64
	// Retract lists believed rows to retract (set retracted_at).
	Retract []int64
	// Insert lists rows to insert. Exactly one of them has CopyOf == 0 and
	// carries the operation's value, unless Repeat is set.
	Insert []NewRow
}

// ConflictError reports a different value asserted at the valid_from of an
// existing believed row. Nothing may be written.
type ConflictError struct {
	Existing Row
	Op       Op
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("a different value already starts at this valid_from (fact %d)", e.Existing.ID)
}

// PlanWrite computes the plan for op against the believed rows of a key.
// believed need not be every believed row of the key, but must include the
// believed row with the greatest ValidFrom <= op.ValidFrom and the one with
// the least ValidFrom > op.ValidFrom, where they exist; its order does not
// matter. It returns a *ConflictError for a different value at an equal
// valid_from.
func PlanWrite(believed []Row, op Op) (Plan, error) {
	prev, next := neighbours(believed, op.ValidFrom)
	if prev != nil && prev.ValidFrom == op.ValidFrom {
		if SameValue(prev.Value, op.Value) {
			return Plan{Repeat: prev.ID}, nil
		}
		if op.Replace {
			return Plan{
				Retract: []int64{prev.ID},
				Insert:  []NewRow{{ValidFrom: op.ValidFrom, ValidTo: prev.ValidTo, Value: op.Value, Supersedes: prev.ID}},
			}, nil
		}
		return Plan{}, &ConflictError{Existing: *prev, Op: op}
	}
	if prev != nil && prev.Contains(op.ValidFrom) {
		// The new row takes the rest of the shortened row's window.
		return Plan{
			Retract: []int64{prev.ID},
			Insert: []NewRow{
				{ValidFrom: prev.ValidFrom, ValidTo: op.ValidFrom, Value: prev.Value, Supersedes: prev.ID, CopyOf: prev.ID},
				{ValidFrom: op.ValidFrom, ValidTo: prev.ValidTo, Value: op.Value, Supersedes: prev.ID},
			},
		}, nil
	}
	// The new row runs to the next believed row, so that a delayed
	// assertion stops where a later one (or a revocation) starts.
	end := Open
	if next != nil {
		end = next.ValidFrom
	}
	return Plan{Insert: []NewRow{{ValidFrom: op.ValidFrom, ValidTo: end, Value: op.Value}}}, nil
}

// neighbours returns the row with the greatest ValidFrom <= t and the row
// with the least ValidFrom > t.
func neighbours(rows []Row, t int64) (prev, next *Row) {
	for i := range rows {
		r := &rows[i]
		if r.ValidFrom <= t {
			if prev == nil || r.ValidFrom > prev.ValidFrom {
				prev = r
			}
		} else if next == nil || r.ValidFrom < next.ValidFrom {
			next = r
		}
	}
	return prev, next
}

// SameValue reports whether two canonical values are equal; two tombstones
// are equal, a tombstone never equals a value.
func SameValue(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return bytes.Equal(a, b)
}

// Resolve returns the row that answers "what was the value at valid instant
// v, as believed at transaction instant k" among all rows of a key
// (retracted ones too), or nil. The row may be a tombstone: no value.
func Resolve(rows []Row, v, k int64) *Row {
	var best *Row
	for i := range rows {
		r := &rows[i]
		if !r.BelievedAt(k) || r.ValidFrom > v {
			continue
		}
		if best == nil || r.ValidFrom > best.ValidFrom {
			best = r
		}
	}
	if best == nil || !best.Contains(v) {
		return nil
	}
	return best
}

// Problem is a broken invariant among the rows of one key.
type Problem struct {
	Rule    string // "window", "belief_window", "overlap", "open"
	IDs     []int64
	Message string
}

// Rules checked by Check.
const (
	RuleWindow       = "window"        // valid_from < valid_to
	RuleBeliefWindow = "belief_window" // recorded_at <= retracted_at
	RuleOverlap      = "overlap"       // believed rows never overlap in valid time
	RuleOpen         = "open"          // at most one believed row is open
)

// Check returns every broken invariant among the rows of one key (all rows,
// retracted ones too; any order).
func Check(rows []Row) []Problem {
	var out []Problem
	var believed []Row
	for _, r := range rows {
		if r.ValidTo != Open && r.ValidFrom >= r.ValidTo {
			out = append(out, Problem{Rule: RuleWindow, IDs: []int64{r.ID},
				Message: fmt.Sprintf("fact %d: valid_from is not before valid_to", r.ID)})
		}
		if r.RetractedAt != Open && r.RetractedAt < r.RecordedAt {
			out = append(out, Problem{Rule: RuleBeliefWindow, IDs: []int64{r.ID},
				Message: fmt.Sprintf("fact %d: retracted_at is before recorded_at", r.ID)})
		}
		if r.RetractedAt == Open {
			believed = append(believed, r)
		}
	}
	sort.Slice(believed, func(i, j int) bool {
		if believed[i].ValidFrom != believed[j].ValidFrom {
			return believed[i].ValidFrom < believed[j].ValidFrom
		}
		return believed[i].ID < believed[j].ID
	})
	var open []int64
	var reach *Row // the row reaching furthest in valid time so far
	for i := range believed {
		r := &believed[i]
		if r.ValidTo == Open {
			open = append(open, r.ID)
		}
		if reach != nil && reach.ValidTo > r.ValidFrom {
			out = append(out, Problem{Rule: RuleOverlap, IDs: []int64{reach.ID, r.ID},
				Message: fmt.Sprintf("believed facts %d and %d overlap in valid time", reach.ID, r.ID)})
		}
		if reach == nil || r.ValidTo > reach.ValidTo {
			reach = r
		}
	}
	if len(open) > 1 {
		out = append(out, Problem{Rule: RuleOpen, IDs: open,
			Message: fmt.Sprintf("%d believed facts are open (at most one may be): %v", len(open), open)})
	}
	return out
}
