package ledger

import (
	"testing"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/workload"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/temporal"
)

// BenchmarkGovern measures what a schema adds to building the ops of
// AssertMany ×1,000, without a store: the validation and canonical form of
// every value. Compare with the store benchmarks' AssertMany1000 (tens of
// milliseconds a batch).
func BenchmarkGovern(b *testing.B) {
	s, err := schema.Parse([]byte("attributes:\n  a: {memory: task, type: string}\n"))
	if err != nil {
		b.Fatal(err)
	}
	batch := workload.Batch(0, 1000)
	for _, c := range []struct {
		name string
		gov  Gov
	}{{"none", Gov{}}, {"schema", Gov{Head: Head{Version: 1}, Schema: s}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				build := AssertAll(sgam.Limits{}, batch)
				if build.Err != nil {
					b.Fatal(build.Err)
				}
				if _, err := build.Ops(Govs{batch[0].Key.Tenant: c.gov}, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestPlanMigration(t *testing.T) {
	s, err := schema.Parse([]byte(`
attributes:
  price: {memory: account, type: string}
  prices: {memory: account, type: integer, cardinality: many}
migrations:
  - name: rename
    rename: {from: price_usd, to: price}
  - name: cents
    retype: {attribute: price, transform: "string(int(value) * 100)"}
  - name: scale
    retype: {attribute: prices, transform: "int(value) * 100"}
`))
	if err != nil {
		t.Fatal(err)
	}
	g := Gov{Head: Head{Version: 2}, Schema: s}
	k := sgam.Key{Tenant: "acme", Subject: "mira"}
	row := func(attr, member, value string, id int64) MigrationRow {
		kk := k
		kk.Attribute, kk.Member = attr, member
		return MigrationRow{Key: kk, Row: temporal.Row{ID: id, ValidFrom: 1, ValidTo: temporal.Open, Value: []byte(value), Source: "e1", Version: 1}}
	}
	// A rename followed by a retype of its target applies both.
	ops, err := PlanMigration(g, s.Migrations[0], s.Migrations[1:], []MigrationRow{row("price_usd", "", `"12"`, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Kind != RetractAll || string(ops[1].Op.Value) != `"1200"` || ops[1].Key.Attribute != "price" {
		t.Fatalf("rename then retype: %+v", ops)
	}
	// A set retype moving member 1 onto 100 while 100 moves on to 10000
	// retires both old keys before writing either new one.
	ops, err = PlanMigration(g, s.Migrations[2], nil, []MigrationRow{row("prices", "1", "1", 1), row("prices", "100", "100", 2)})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []OpKind
	for _, o := range ops {
		kinds = append(kinds, o.Kind)
	}
	if len(ops) != 4 || kinds[0] != RetractAll || kinds[1] != RetractAll || kinds[2] != Write || kinds[3] != Write {
		t.Fatalf("set retype: %+v", ops)
	}
}
