package engine

import (
	"context"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// Migrate implements sgam.Admin: each schema's migrations over the tenants
// it serves.
func (s *Store) Migrate(ctx context.Context, opts sgam.MigrateOptions) (out []sgam.MigrationReport, err error) {
	defer s.track("Migrate", s.start(), &err)
	out = []sgam.MigrationReport{}
	err = s.bySchema(ctx, func(g schemaGroup) error {
		reps, err := ledger.RunMigrations(ctx, migrator{s, g.gov}, g.gov, g.history, g.scope, opts)
		out = append(out, reps...)
		return err
	})
	return out, err
}

// migrator runs a migration's batches through the write pipeline.
type migrator struct {
	s   *Store
	gov ledger.Gov
}

func (m migrator) CountSubjects(ctx context.Context, q ledger.MigrationQuery) (int, error) {
	return m.s.d.CountSubjects(ctx, q)
}

func (m migrator) MigrateBatch(ctx context.Context, q ledger.MigrationQuery, after ledger.Cursor, limit int,
	plan func([]ledger.MigrationRow) ([]ledger.Op, error)) (last ledger.Cursor, subjects, written int, done bool, err error) {
	err = m.s.d.Write(ctx, q.Scope.Tenant, func(tx Tx) error {
		last, subjects, written, done = after, 0, 0, false
		rows, err := tx.MigrationRows(q, after, limit)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			done = true
			return nil
		}
		govs := ledger.Govs{}
		for _, r := range rows {
			if c := (ledger.Cursor{Tenant: r.Key.Tenant, Subject: r.Key.Subject}); c != last {
				last = c
				subjects++
			}
			govs[r.Key.Tenant] = m.gov
		}
		// The rows' tenants must still be served by this schema (one may
		// have applied its own since the groups were read).
		if err := tx.CheckHeads(govs.Heads()); err != nil {
			return err
		}
		ops, err := plan(rows)
		if err != nil || len(ops) == 0 {
			return err
		}
		b := ledger.New(ops)
		b.Govs = govs
		if _, err := m.s.apply(tx, b, "", nil, false); err != nil {
			return err
		}
		for _, k := range b.Keys {
			written += len(b.Ledger(k).Inserted)
		}
		return nil
	})
	return last, subjects, written, done, err
}
