package temporal_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sgam-dev/sgam/internal/refmodel"
	"github.com/sgam-dev/sgam/temporal"
)

// memKey is a key's full row history in memory, written through PlanWrite.
type memKey struct {
	rows   []temporal.Row
	nextID int64
}

func (m *memKey) believed() []temporal.Row {
	var out []temporal.Row
	for _, r := range m.rows {
		if r.RetractedAt == temporal.Open {
			out = append(out, r)
		}
	}
	return out
}

func (m *memKey) apply(t require.TestingT, op temporal.Op, tx int64) (temporal.Plan, error) {
	plan, err := temporal.PlanWrite(m.believed(), op)
	if err != nil {
		return plan, err
	}
	for _, id := range plan.Retract {
		for i := range m.rows {
			if m.rows[i].ID == id {
				require.Equal(t, temporal.Open, m.rows[i].RetractedAt, "retracting a row that is not believed")
				m.rows[i].RetractedAt = tx
			}
		}
	}
	for _, nr := range plan.Insert {
		m.nextID++
		m.rows = append(m.rows, temporal.Row{ID: m.nextID, ValidFrom: nr.ValidFrom, ValidTo: nr.ValidTo,
			Value: nr.Value, RecordedAt: tx, RetractedAt: temporal.Open})
	}
	return plan, nil
}

func (m *memKey) value(v, k int64) []byte {
	r := temporal.Resolve(m.rows, v, k)
	if r == nil {
		return nil
	}
	return r.Value
}

var (
	a = []byte(`"a"`)
	b = []byte(`"b"`)
)

const day = int64(86_400_000_000)

func TestReplaceClosesTheContainingRow(t *testing.T) {
	var m memKey
	_, err := m.apply(t, temporal.Op{ValidFrom: 1 * day, Value: a}, 10)
	require.NoError(t, err)
	plan, err := m.apply(t, temporal.Op{ValidFrom: 3 * day, Value: b}, 20)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, plan.Retract)
	require.Len(t, plan.Insert, 2)
	require.Equal(t, temporal.NewRow{ValidFrom: 1 * day, ValidTo: 3 * day, Value: a, Supersedes: 1, CopyOf: 1}, plan.Insert[0])
	require.Equal(t, temporal.NewRow{ValidFrom: 3 * day, ValidTo: temporal.Open, Value: b, Supersedes: 1}, plan.Insert[1])

	require.Equal(t, b, m.value(4*day, 20))
	require.Equal(t, a, m.value(2*day, 20))
	require.Equal(t, a, m.value(4*day, 19), "before the correction was recorded we believed a")
	require.Nil(t, m.value(0, 20))
	require.Empty(t, temporal.Check(m.rows))
}

func TestRepeatedValueAtNewValidFromIsABoundary(t *testing.T) {
	var m memKey
	_, err := m.apply(t, temporal.Op{ValidFrom: 1 * day, Value: a}, 10)
	require.NoError(t, err)
	plan, err := m.apply(t, temporal.Op{ValidFrom: 5 * day, Value: a}, 20)
	require.NoError(t, err)
	require.Len(t, plan.Insert, 2, "a re-affirmation splits the row")
	// A delayed assertion between the two stops where the re-affirmation starts.
	plan, err = m.apply(t, temporal.Op{ValidFrom: 3 * day, Value: b}, 30)
	require.NoError(t, err)
	require.Equal(t, int64(5*day), plan.Insert[1].ValidTo)
	require.Equal(t, b, m.value(4*day, 30))
	require.Equal(t, a, m.value(5*day, 30))
	require.Empty(t, temporal.Check(m.rows))
}

func TestDelayedAssertionEndsAtTheNextRow(t *testing.T) {
	var m memKey
	_, err := m.apply(t, temporal.Op{ValidFrom: 5 * day, Value: a}, 10)
	require.NoError(t, err)
	plan, err := m.apply(t, temporal.Op{ValidFrom: 2 * day, Value: b}, 20)
	require.NoError(t, err)
	require.Empty(t, plan.Retract, "later rows are untouched")
	require.Equal(t, []temporal.NewRow{{ValidFrom: 2 * day, ValidTo: 5 * day, Value: b}}, plan.Insert)
	require.Equal(t, a, m.value(9*day, 20), "the current value stays current")
	require.Equal(t, b, m.value(3*day, 20))
}

func TestEqualValidFrom(t *testing.T) {
	var m memKey
	_, err := m.apply(t, temporal.Op{ValidFrom: day, Value: a}, 10)
	require.NoError(t, err)

	t.Run("same value is an idempotent repeat", func(t *testing.T) {
		plan, err := m.apply(t, temporal.Op{ValidFrom: day, Value: a}, 20)
		require.NoError(t, err)
		require.Equal(t, temporal.Plan{Repeat: 1}, plan)
	})
	t.Run("different value is a conflict", func(t *testing.T) {
		_, err := m.apply(t, temporal.Op{ValidFrom: day, Value: b}, 20)
		var ce *temporal.ConflictError
		require.True(t, errors.As(err, &ce))
		require.Equal(t, int64(1), ce.Existing.ID)
	})
	t.Run("a retraction is a different value", func(t *testing.T) {
		_, err := m.apply(t, temporal.Op{ValidFrom: day}, 20)
		require.Error(t, err)
	})
	require.Len(t, m.rows, 1, "nothing was written")
}

func TestRetractionIsATombstone(t *testing.T) {
	var m memKey
	_, err := m.apply(t, temporal.Op{ValidFrom: 1 * day, Value: a}, 10)
	require.NoError(t, err)
	_, err = m.apply(t, temporal.Op{ValidFrom: 4 * day}, 20) // "I no longer prefer a"
	require.NoError(t, err)
	require.Nil(t, m.value(5*day, 20), "reads treat a tombstone as no value")
	require.Equal(t, a, m.value(5*day, 19))
	r := temporal.Resolve(m.rows, 5*day, 20)
	require.NotNil(t, r)
	require.True(t, r.Tombstone())

	// A delayed assertion stops where the revocation starts.
	plan, err := m.apply(t, temporal.Op{ValidFrom: 2 * day, Value: b}, 30)
	require.NoError(t, err)
	require.Equal(t, int64(4*day), plan.Insert[1].ValidTo)
	require.Nil(t, m.value(5*day, 30))
	// Retracting again at the same instant is a repeat.
	plan, err = m.apply(t, temporal.Op{ValidFrom: 4 * day}, 40)
	require.NoError(t, err)
	require.NotZero(t, plan.Repeat)
}

func TestCheckFindsBrokenInvariants(t *testing.T) {
	rows := []temporal.Row{
		{ID: 1, ValidFrom: 0, ValidTo: 10, RecordedAt: 1, RetractedAt: temporal.Open},
		{ID: 2, ValidFrom: 5, ValidTo: temporal.Open, RecordedAt: 1, RetractedAt: temporal.Open},
		{ID: 3, ValidFrom: 20, ValidTo: temporal.Open, RecordedAt: 1, RetractedAt: temporal.Open},
		{ID: 4, ValidFrom: 30, ValidTo: 30, RecordedAt: 5, RetractedAt: 4},
	}
	var got []temporal.Problem
	for _, p := range temporal.Check(rows) {
		p.Message = ""
		got = append(got, p)
	}
	require.ElementsMatch(t, []temporal.Problem{
		{Rule: temporal.RuleWindow, IDs: []int64{4}},
		{Rule: temporal.RuleBeliefWindow, IDs: []int64{4}},
		{Rule: temporal.RuleOverlap, IDs: []int64{1, 2}},
		{Rule: temporal.RuleOverlap, IDs: []int64{2, 3}},
		{Rule: temporal.RuleOpen, IDs: []int64{2, 3}},
	}, got)
}

type genOp struct {
	ValidFrom int64
	Value     []byte
	TxStep    int64 // 0: same transaction instant as the previous op
}

func genOps(t *rapid.T) []genOp {
	values := [][]byte{nil, []byte(`"a"`), []byte(`"b"`), []byte(`{"x":1}`)}
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) genOp {
		return genOp{
			ValidFrom: rapid.Int64Range(0, 30).Draw(t, "valid_from"),
			Value:     values[rapid.IntRange(0, len(values)-1).Draw(t, "value")],
			TxStep:    rapid.Int64Range(0, 3).Draw(t, "tx_step"),
		}
	}), 1, 40).Draw(t, "ops")
}

// TestPropertyMatchesModel: random sequences of assertions and retractions,
// in random arrival order, give the model's answer at every (V, K), and
// the invariants hold after every step.
func TestPropertyMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ops := genOps(rt)
		var m memKey
		var model refmodel.Key
		tx := int64(100)
		for i, o := range ops {
			tx += o.TxStep
			want := model.Apply(o.ValidFrom, o.Value, tx)
			plan, err := m.apply(rt, temporal.Op{ValidFrom: o.ValidFrom, Value: o.Value}, tx)
			switch want {
			case refmodel.Rejected:
				if err == nil {
					rt.Fatalf("op %d: want conflict, got plan %+v", i, plan)
				}
			case refmodel.Repeat:
				if err != nil || plan.Repeat == 0 {
					rt.Fatalf("op %d: want repeat, got %+v, %v", i, plan, err)
				}
			default:
				if err != nil || plan.Repeat != 0 {
					rt.Fatalf("op %d: want accepted, got %+v, %v", i, plan, err)
				}
			}
			if p := temporal.Check(m.rows); len(p) > 0 {
				rt.Fatalf("after op %d: %v", i, p)
			}
		}
		for range 30 {
			v := rapid.Int64Range(-1, 32).Draw(rt, "probe_v")
			k := rapid.Int64Range(99, tx+1).Draw(rt, "probe_k")
			want, _ := model.Value(v, k)
			if got := m.value(v, k); string(got) != string(want) {
				rt.Fatalf("value at (v=%d, k=%d): got %s, want %s", v, k, got, want)
			}
		}
	})
}

// TestPropertyLedgerMatchesPlanWrite: applying a batch through a KeyLedger
// at one transaction instant gives the same rows as applying it op by op.
func TestPropertyLedgerMatchesPlanWrite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		before := genOps(rt)
		batch := genOps(rt)
		var m memKey
		tx := int64(100)
		for _, o := range before {
			tx += o.TxStep
			_, _ = m.apply(rt, temporal.Op{ValidFrom: o.ValidFrom, Value: o.Value}, tx)
		}
		tx++
		byOne := memKey{rows: append([]temporal.Row(nil), m.rows...), nextID: m.nextID}
		l := temporal.NewKeyLedger(m.believed())
		nextID := m.nextID
		alloc := func() int64 { nextID++; return nextID }
		for i, o := range batch {
			op := temporal.Op{ValidFrom: o.ValidFrom, Value: o.Value}
			_, wantErr := byOne.apply(rt, op, tx)
			out, err := l.Apply(op, fmt.Sprintf("e%d", i), tx, alloc)
			if (err != nil) != (wantErr != nil) {
				rt.Fatalf("op %d: ledger error %v, one by one %v", i, err, wantErr)
			}
			if err != nil {
				return // a batch with a conflict is discarded whole
			}
			if out.RowID == 0 {
				rt.Fatalf("op %d: no row", i)
			}
		}
		// Rebuild the rows the ledger would leave in the store.
		rows := append([]temporal.Row(nil), m.rows...)
		for _, id := range l.RetractStored {
			for i := range rows {
				if rows[i].ID == id {
					rows[i].RetractedAt = tx
				}
			}
		}
		for _, ins := range l.Inserted {
			rows = append(rows, ins.Row)
		}
		if p := temporal.Check(rows); len(p) > 0 {
			rt.Fatalf("ledger rows break invariants: %v", p)
		}
		require.Equal(t, len(byOne.rows), len(rows))
		for i := range rows {
			w, g := byOne.rows[i], rows[i]
			if w.ID != g.ID || w.ValidFrom != g.ValidFrom || w.ValidTo != g.ValidTo || string(w.Value) != string(g.Value) ||
				w.RecordedAt != g.RecordedAt || w.RetractedAt != g.RetractedAt {
				rt.Fatalf("row %d: ledger %+v, one by one %+v", i, g, w)
			}
		}
	})
}
