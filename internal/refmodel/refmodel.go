// Package refmodel is the simple reference model the temporal rules are
// tested against: for a key, the value at (V, K) is the value of the
// accepted operation (assertion, or retraction meaning none) with the
// greatest valid_from <= V among those recorded at or before K. An
// operation at an equal valid_from with a different value is rejected and
// changes nothing; with the same value it is a repeat.
package refmodel

import "bytes"

// Op is one accepted operation of a key. Value nil is a retraction.
type Op struct {
	ValidFrom  int64
	Value      []byte
	RecordedAt int64
}

// Key is the model of one key: its accepted operations.
type Key struct {
	ops []Op
}

// Result of offering an operation to the model.
type Result int

const (
	Accepted Result = iota
	Repeat
	Rejected
)

func (r Result) String() string {
	return [...]string{"accepted", "repeat", "rejected"}[r]
}

// Apply offers an operation recorded at recordedAt.
func (k *Key) Apply(validFrom int64, value []byte, recordedAt int64) Result {
	for _, o := range k.ops {
		if o.ValidFrom == validFrom {
			if same(o.Value, value) {
				return Repeat
			}
			return Rejected
		}
	}
	k.ops = append(k.ops, Op{ValidFrom: validFrom, Value: value, RecordedAt: recordedAt})
	return Accepted
}

// Accept records an operation known to have been accepted (for example by
// a concurrent store, whose commit order the test learns afterwards).
func (k *Key) Accept(o Op) { k.ops = append(k.ops, o) }

// Value returns the value at valid time v as believed at transaction time
// k; ok is false when there is none (never asserted, or retracted).
func (k *Key) Value(v, kt int64) (value []byte, ok bool) {
	var best *Op
	for i := range k.ops {
		o := &k.ops[i]
		if o.RecordedAt > kt || o.ValidFrom > v {
			continue
		}
		if best == nil || o.ValidFrom > best.ValidFrom {
			best = o
		}
	}
	if best == nil || best.Value == nil {
		return nil, false
	}
	return best.Value, true
}

// Ops returns the accepted operations in the order they were offered.
func (k *Key) Ops() []Op { return k.ops }

func same(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return bytes.Equal(a, b)
}
