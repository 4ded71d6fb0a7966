package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/temporal"
)

// MigrationQuery selects the believed rows a migration still has to move:
// rows of Attribute of the tenants in Scope, and for a retype only values
// written under a schema version below Below (a retyped row carries the new
// version, so it is never selected again).
type MigrationQuery struct {
	Scope     Scope
	Attribute string
	Below     int // 0: any version
}

// Scope is the tenants one schema serves: Tenant alone (a tenant with a
// schema of its own), or every tenant but Except (the tenants the store
// default serves: all but those with their own).
type Scope struct {
	Tenant string
	Except []string
}

// Includes reports whether tenant is in the scope.
func (s Scope) Includes(tenant string) bool {
	if s.Tenant != "" {
		return tenant == s.Tenant
	}
	return !slices.Contains(s.Except, tenant)
}

// MigrationRow is a believed row a migration moves, with its key and the
// episodes that corroborate it.
type MigrationRow struct {
	Key      sgam.Key
	Row      temporal.Row
	Evidence []string
}

// Cursor is the last subject a migration batch reached, in key order.
type Cursor struct{ Tenant, Subject string }

// MigrationStore is what RunMigrations asks of a store.
type MigrationStore interface {
	// CountSubjects counts the subjects (tenant, subject) with rows q selects.
	CountSubjects(ctx context.Context, q MigrationQuery) (int, error)
	// MigrateBatch runs one write transaction: it takes up to limit
	// subjects after cursor with rows q selects, loads those rows, and
	// writes the ops plan returns for them. It returns the last subject
	// taken (done when there was none) and the fact rows written.
	MigrateBatch(ctx context.Context, q MigrationQuery, after Cursor, limit int,
		plan func([]MigrationRow) ([]Op, error)) (last Cursor, subjects, rows int, done bool, err error)
}

// RunMigrations runs every migration of g, the schema in force for the
// tenants of scope, in order. history is g's history, oldest first: the
// versions that served those tenants, with their bodies.
func RunMigrations(ctx context.Context, st MigrationStore, g Gov, history []sgam.SchemaVersion, scope Scope, opts sgam.MigrateOptions) ([]sgam.MigrationReport, error) {
	reports := []sgam.MigrationReport{}
	if g.Schema == nil || len(g.Schema.Migrations) == 0 {
		return reports, nil
	}
	if opts.BatchKeys <= 0 {
		opts.BatchKeys = 500
	}
	since, err := declaredSince(history, g)
	if err != nil {
		return nil, err
	}
	for i, m := range g.Schema.Migrations {
		later := g.Schema.Migrations[i+1:]
		start := time.Now()
		q := MigrationQuery{Scope: scope, Attribute: m.From}
		if m.Kind == "retype" {
			q.Below = since[m.Name]
		}
		total, err := st.CountSubjects(ctx, q)
		if err != nil {
			return reports, err
		}
		rep := sgam.MigrationReport{Tenant: scope.Tenant, Name: m.Name, Kind: m.Kind, Since: since[m.Name]}
		var cur Cursor
		for {
			last, subjects, rows, done, err := st.MigrateBatch(ctx, q, cur, opts.BatchKeys, func(rows []MigrationRow) ([]Op, error) {
				return PlanMigration(g, m, later, rows)
			})
			if err != nil {
				return append(reports, rep), err
			}
			if done {
				break
			}
			cur = last
			rep.Subjects += subjects
			rep.Rows += rows
			if opts.Progress != nil {
				opts.Progress(sgam.MigrationProgress{Tenant: scope.Tenant, Migration: m.Name, Done: rep.Subjects, Total: total})
			}
		}
		rep.Elapsed = time.Since(start)
		reports = append(reports, rep)
	}
	return reports, nil
}

// declaredSince finds, for every migration of g, the first version of its
// history that declared it: values written from then on already have the
// new representation.
func declaredSince(history []sgam.SchemaVersion, g Gov) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range history {
		s, err := schema.Parse(v.Body)
		if err != nil {
			return nil, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("stored schema version %d no longer parses: %v", v.Version, err), Err: err}
		}
		for _, m := range s.Migrations {
			if _, ok := out[m.Name]; !ok {
				out[m.Name] = v.Version
			}
		}
	}
	for _, m := range g.Schema.Migrations {
		if _, ok := out[m.Name]; !ok {
			out[m.Name] = g.Version
		}
	}
	return out, nil
}

// PlanMigration returns the ops that move rows (believed rows of m's old
// attribute, any order) to their new representation under g:
//
//   - retype, in place: each value is rewritten over the same window,
//     keeping its source and evidence (a set member whose value changes
//     moves to its new member key like a rename);
//   - rename and split: each row is asserted again on every target
//     attribute, in valid-time order, from the row's source with its
//     corroborating episodes, through the temporal rules (a value already
//     stored there at the same instant is kept), and the old key's rows
//     are retracted.
//
// later are the migrations declared after m: a retype among them of a
// target attribute is applied to the values m writes too, since those
// carry the new schema version and the retype will not select them.
func PlanMigration(g Gov, m *schema.Migration, later []*schema.Migration, rows []MigrationRow) ([]Op, error) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b MigrationRow) int {
		if c := compareKeys(a.Key, b.Key); c != 0 {
			return c
		}
		return cmpInt(a.Row.ValidFrom, b.Row.ValidFrom)
	})
	var ops []Op
	retire := map[sgam.Key]bool{}
	var retireOrder []sgam.Key
	for _, r := range rows {
		for _, target := range m.To {
			attr, ok := g.Schema.Attribute(target)
			if !ok {
				return nil, sgam.Errorf(sgam.Invalid, "schema", "migration %s: %s is not declared", m.Name, target)
			}
			value := r.Row.Value
			memberOld := r.Key.Member
			if value == nil && memberOld != "" {
				value = []byte(memberOld) // a set member's removal: move the member
			}
			var nv []byte
			if value != nil {
				var err error
				if nv, err = g.Schema.Transform(m, target, value); err != nil {
					return nil, sgam.PrefixField(fmt.Sprintf("%s/%s.%s (fact %d)", r.Key.Tenant, r.Key.Subject, r.Key.Attribute, r.Row.ID), err)
				}
				for _, lm := range later {
					if lm.Kind != schema.KindRetype || lm.From != attr.Name {
						continue
					}
					if nv, err = g.Schema.Transform(lm, attr.Name, nv); err != nil {
						return nil, sgam.PrefixField(fmt.Sprintf("%s/%s.%s (fact %d)", r.Key.Tenant, r.Key.Subject, r.Key.Attribute, r.Row.ID), err)
					}
				}
			}
			tk := sgam.Key{Tenant: r.Key.Tenant, Subject: r.Key.Subject, Attribute: attr.Name}
			if attr.Cardinality == schema.Many && nv != nil {
				tk.Member = string(nv)
			}
			if r.Row.Value == nil && tk.Member != "" {
				nv = nil // still a removal, of the moved member
			}
			if tk == r.Key {
				// In place; a set member's removal whose member keeps its
				// value is stamped with the new version all the same, so
				// that it is not selected again.
				ops = append(ops, Op{Key: tk, Kind: Rewrite, RowID: r.Row.ID,
					Op: temporal.Op{ValidFrom: r.Row.ValidFrom, Value: nv, Version: g.Version}})
				continue
			}
			op := temporal.Op{ValidFrom: r.Row.ValidFrom, Value: nv, Version: g.Version}
			ops = append(ops, Op{Key: tk, Op: op, Source: r.Row.Source, Migrated: true, Set: tk.Member != ""})
			for _, e := range r.Evidence {
				ops = append(ops, Op{Key: tk, Op: op, Source: e, Migrated: true, Set: tk.Member != ""})
			}
			if !retire[r.Key] {
				retire[r.Key] = true
				retireOrder = append(retireOrder, r.Key)
			}
		}
	}
	// The old keys are retired first: a set retype may move one member onto
	// the key another member leaves (1 -> 100 while 100 -> 10000).
	retireOps := make([]Op, 0, len(retireOrder)+len(ops))
	for _, k := range retireOrder {
		retireOps = append(retireOps, Op{Key: k, Kind: RetractAll})
	}
	return append(retireOps, ops...), nil
}

func compareKeys(a, b sgam.Key) int {
	for _, c := range [][2]string{{a.Tenant, b.Tenant}, {a.Subject, b.Subject}, {a.Attribute, b.Attribute}, {a.Member, b.Member}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
