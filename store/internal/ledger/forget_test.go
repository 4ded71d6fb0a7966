package ledger_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

const day = int64(86_400_000_000)

func set(ids ...int64) func(int64) bool {
	return func(id int64) bool { return slices.Contains(ids, id) }
}

func row(id, from, to int64) temporal.Row {
	return temporal.Row{ID: id, ValidFrom: from, ValidTo: to, RetractedAt: temporal.Open}
}

func TestPlanMend(t *testing.T) {
	o := temporal.Open
	rows := []temporal.Row{row(3, 3*day, 5*day), row(1, 1*day, 3*day), row(5, 5*day, 8*day), row(8, 8*day, o)}
	require.Empty(t, ledger.PlanMend(rows, set()), "nothing deleted, nothing mended")
	require.Equal(t, []ledger.Mend{{Of: 1, ValidFrom: 1 * day, ValidTo: 5 * day}}, ledger.PlanMend(rows, set(3)),
		"the predecessor takes the deleted window")
	require.Equal(t, []ledger.Mend{{Of: 1, ValidFrom: 1 * day, ValidTo: 8 * day}}, ledger.PlanMend(rows, set(3, 5)),
		"a run of deleted rows goes to the survivor before it")
	require.Equal(t, []ledger.Mend{{Of: 5, ValidFrom: 5 * day, ValidTo: o}}, ledger.PlanMend(rows, set(8)),
		"deleting the open row opens its predecessor")
	require.Empty(t, ledger.PlanMend(rows, set(1)), "a first row has no predecessor: its window is left empty")
	require.Equal(t, []ledger.Mend{{Of: 3, ValidFrom: 3 * day, ValidTo: o}}, ledger.PlanMend(rows, set(1, 5, 8)))
	require.Empty(t, ledger.PlanMend(rows, set(1, 3, 5, 8)))

	// A gap (possible through import): the row before it did not end where
	// the deleted one starts, so it is not extended over the gap.
	gap := []temporal.Row{row(1, 1*day, 2*day), row(2, 3*day, 4*day), row(3, 4*day, o)}
	require.Empty(t, ledger.PlanMend(gap, set(2)))
	require.Empty(t, ledger.PlanMend(gap, set(2, 3)))
	require.Equal(t, []ledger.Mend{{Of: 2, ValidFrom: 3 * day, ValidTo: o}}, ledger.PlanMend(gap, set(3)))
}

func TestUnsupport(t *testing.T) {
	gone := func(ids ...string) func(string) bool {
		return func(e string) bool { return slices.Contains(ids, e) }
	}
	for _, c := range []struct {
		name string
		row  ledger.Support
		gone []string
		keep bool
		want ledger.Outcome
	}{
		{"untouched", ledger.Support{Source: "e1", Evidence: []string{"e2"}}, []string{"e9"}, false, ledger.Outcome{Fate: ledger.Untouched, Source: "e1"}},
		{"only source goes", ledger.Support{Source: "e1"}, []string{"e1"}, false, ledger.Outcome{Fate: ledger.Deleted, Source: "e1"}},
		{"retained", ledger.Support{Source: "e1"}, []string{"e1"}, true, ledger.Outcome{Fate: ledger.Retained, Actor: sgam.ActorRetention}},
		{"promoted", ledger.Support{Source: "e1", Evidence: []string{"e2", "e3"}}, []string{"e1"}, true, ledger.Outcome{Fate: ledger.Promoted, Source: "e2"}},
		{"promoted past a link that goes too", ledger.Support{Source: "e1", Evidence: []string{"e2", "e3"}}, []string{"e1", "e2"}, false, ledger.Outcome{Fate: ledger.Promoted, Source: "e3"}},
		{"a link goes", ledger.Support{Source: "e1", Evidence: []string{"e2"}}, []string{"e2"}, false, ledger.Outcome{Fate: ledger.Unlinked, Source: "e1"}},
		{"everything goes", ledger.Support{Source: "e1", Evidence: []string{"e2"}}, []string{"e1", "e2"}, false, ledger.Outcome{Fate: ledger.Deleted, Source: "e1"}},
		{"no source, a link is left", ledger.Support{Evidence: []string{"e2", "e3"}}, []string{"e2"}, false, ledger.Outcome{Fate: ledger.Unlinked}},
		{"no source, no link left", ledger.Support{Evidence: []string{"e2"}}, []string{"e2"}, false, ledger.Outcome{Fate: ledger.Deleted}},
		{"an actor keeps it", ledger.Support{Actor: "retention", Evidence: []string{"e2"}}, []string{"e2"}, false, ledger.Outcome{Fate: ledger.Unlinked, Actor: "retention"}},
	} {
		require.Equal(t, c.want, ledger.Unsupport(c.row, gone(c.gone...), c.keep), c.name)
	}
}

// TestSubjectTarget: a receipt's target is keyed by the store's secret, so
// that it cannot be computed without it, and differs across tenants.
func TestSubjectTarget(t *testing.T) {
	a, b := []byte("secret one"), []byte("secret two")
	d := ledger.SubjectTarget(a, "acme", "mira")
	require.Len(t, d, 64)
	require.NotContains(t, d, "mira")
	require.Equal(t, d, ledger.SubjectTarget(a, "acme", "mira"), "stable")
	require.NotEqual(t, d, ledger.SubjectTarget(b, "acme", "mira"), "keyed by the secret")
	require.NotEqual(t, d, ledger.SubjectTarget(a, "globex", "mira"), "and by the tenant")
	sum := sha256.Sum256([]byte("mira"))
	require.NotEqual(t, hex.EncodeToString(sum[:]), d, "not the unkeyed hash a guess could confirm")
}

// op is an assertion of one key from one episode. The value at each valid
// instant is fixed up front (valueAt), so that operations never conflict:
// the same valid_from always carries the same value, and a repeat only
// adds evidence.
type op struct {
	validFrom int64
	source    string
}

// believedRow is a believed row as the comparison sees it.
type believedRow struct {
	ValidFrom, ValidTo int64
	Value              string
	Sources            string // sorted, comma-separated
}

func sources(s []string) string {
	s = slices.Clone(s)
	slices.Sort(s)
	return strings.Join(s, ",")
}

// replay writes ops through a KeyLedger, one transaction each, and returns
// every row it inserted.
func replay(t *rapid.T, ops []op, valueAt map[int64][]byte) []*temporal.Inserted {
	l := temporal.NewKeyLedger(nil)
	var id int64
	for i, o := range ops {
		_, err := l.Apply(temporal.Op{ValidFrom: o.validFrom, Value: valueAt[o.validFrom]}, o.source, int64(i+1), func() int64 { id++; return id })
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	return l.Inserted
}

// TestForgetEpisodeMatchesReplay: forgetting an episode from a key's rows
// (deleting the rows only it supports, promoting other evidence, mending
// the predecessors of deleted rows with PlanMend) leaves exactly the
// believed rows that writing only the other episodes' assertions gives.
func TestForgetEpisodeMatchesReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		episodes := []string{"e0", "e1", "e2", "e3"}
		valueAt := map[int64][]byte{}
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op {
			return op{validFrom: rapid.Int64Range(0, 12).Draw(t, "day") * day, source: rapid.SampledFrom(episodes).Draw(t, "source")}
		}), 1, 30).Draw(t, "ops")
		for _, o := range ops {
			if _, ok := valueAt[o.validFrom]; !ok {
				v := rapid.SampledFrom([]string{"", `"a"`, `"b"`, `"c"`}).Draw(t, fmt.Sprintf("value@%d", o.validFrom/day))
				if v != "" {
					valueAt[o.validFrom] = []byte(v)
				} else {
					valueAt[o.validFrom] = nil // a tombstone
				}
			}
		}
		forget := rapid.SampledFrom(episodes).Draw(t, "forget")
		gone := func(e string) bool { return e == forget }

		rows := replay(t, ops, valueAt)
		tx := int64(len(ops) + 1)
		var believed []temporal.Row
		byID := map[int64]*temporal.Inserted{}
		deleted := map[int64]bool{}
		for _, r := range rows {
			byID[r.ID] = r
			out := ledger.Unsupport(ledger.Support{ID: r.ID, Source: r.Source, Evidence: r.Corroborations}, gone, false)
			switch out.Fate {
			case ledger.Deleted:
				deleted[r.ID] = true
			case ledger.Promoted:
				r.Corroborations = slices.DeleteFunc(slices.Clone(r.Corroborations), func(e string) bool { return gone(e) || e == out.Source })
				r.Source = out.Source
			case ledger.Unlinked:
				r.Corroborations = slices.DeleteFunc(slices.Clone(r.Corroborations), gone)
			}
			if r.RetractedAt == temporal.Open {
				believed = append(believed, r.Row)
			}
		}
		mends := ledger.PlanMend(believed, func(id int64) bool { return deleted[id] })

		// The rows after forgetting: every row not deleted, predecessors
		// retracted and their mended copies added.
		var after []temporal.Row
		got := map[int64]believedRow{}
		retracted := map[int64]bool{}
		for _, m := range mends {
			retracted[m.Of] = true
			require.False(t, deleted[m.Of], "a deleted row is not mended")
		}
		for _, r := range rows {
			if deleted[r.ID] {
				continue
			}
			row := r.Row
			if retracted[r.ID] {
				require.Equal(t, temporal.Open, row.RetractedAt, "only believed rows are mended")
				row.RetractedAt = tx
			}
			after = append(after, row)
			if row.RetractedAt == temporal.Open {
				got[r.ID] = believedRow{row.ValidFrom, row.ValidTo, string(row.Value), sources(r.Sources())}
			}
		}
		for i, m := range mends {
			of := byID[m.Of]
			require.Equal(t, of.ValidFrom, m.ValidFrom)
			id := int64(1_000_000 + i)
			after = append(after, temporal.Row{ID: id, ValidFrom: m.ValidFrom, ValidTo: m.ValidTo, Value: of.Value, RecordedAt: tx, RetractedAt: temporal.Open})
			got[id] = believedRow{m.ValidFrom, m.ValidTo, string(of.Value), sources(of.Sources())}
		}
		require.Empty(t, temporal.Check(after), "the rows keep every invariant")

		var remaining []op
		for _, o := range ops {
			if o.source != forget {
				remaining = append(remaining, o)
			}
		}
		want := []believedRow{}
		for _, r := range replay(t, remaining, valueAt) {
			if r.RetractedAt == temporal.Open {
				want = append(want, believedRow{r.ValidFrom, r.ValidTo, string(r.Value), sources(r.Sources())})
			}
		}
		have := []believedRow{}
		for _, r := range got {
			have = append(have, r)
		}
		byFrom := func(a, b believedRow) int { return int(a.ValidFrom/day - b.ValidFrom/day) }
		slices.SortFunc(want, byFrom)
		slices.SortFunc(have, byFrom)
		require.Equal(t, want, have)
	})
}
