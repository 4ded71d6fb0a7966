package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Migrate implements sgam.Store.
func (s *Store) Migrate(ctx context.Context, opts sgam.MigrateOptions) ([]sgam.MigrationReport, error) {
	g, err := s.loadGov(ctx, s.pool, -1)
	if err != nil {
		return nil, mapErr("migrate", err)
	}
	return ledger.RunMigrations(ctx, migrationStore{s}, g, opts)
}

type migrationStore struct{ s *Store }

func (m migrationStore) SchemaVersions(ctx context.Context) ([]sgam.SchemaVersion, error) {
	rows, err := m.s.pool.Query(ctx, `SELECT version, hash, applied_at, body FROM schemas ORDER BY version`)
	if err != nil {
		return nil, mapErr("read schemas", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.SchemaVersion, error) {
		var v sgam.SchemaVersion
		err := r.Scan(&v.Version, &v.Hash, &v.AppliedAt, &v.Body)
		return v, err
	})
	return out, mapErr("read schemas", err)
}

// migrationRows is the condition on the rows a migration still has to move
// ($1 attribute, $2 version bound or 0): believed, and for a retype written
// before the migration was declared and holding a value. "Believed" is
// spelled to keep the planner off the exclusion constraint's GiST index.
const migrationRows = `f.attribute = $1 AND coalesce(f.retracted_at, 'infinity') = 'infinity'
	AND ($2 = 0 OR (f.schema_version < $2 AND (f.value_text IS NOT NULL OR f.member <> '')))`

func (m migrationStore) CountSubjects(ctx context.Context, q ledger.MigrationQuery) (int, error) {
	var n int
	err := m.s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, "count subjects to migrate", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, allTenants); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT tenant_id, subject FROM facts f WHERE `+migrationRows+`) x`,
			q.Attribute, q.Below).Scan(&n)
	})
	return n, err
}

func (m migrationStore) MigrateBatch(ctx context.Context, q ledger.MigrationQuery, after ledger.Cursor, limit int,
	plan func(ledger.Gov, []ledger.MigrationRow) ([]ledger.Op, error)) (last ledger.Cursor, subjects, written int, done bool, err error) {
	s := m.s
	err = s.inTx(ctx, pgx.TxOptions{}, "migrate", func(tx pgx.Tx) error {
		last, subjects, written, done = after, 0, 0, false
		if _, err := tx.Exec(ctx, scopeSQL, allTenants); err != nil {
			return err
		}
		// The next subjects in key order, locked as writers lock them, then
		// their rows with evidence.
		rows, err := tx.Query(ctx, `SELECT DISTINCT tenant_id, subject FROM facts f
			WHERE (tenant_id, subject) > ($3, $4) AND `+migrationRows+`
			ORDER BY tenant_id, subject LIMIT $5`, q.Attribute, q.Below, after.Tenant, after.Subject, limit)
		if err != nil {
			return err
		}
		var tenants, subjectIDs []string
		var keys []sgam.Key
		for rows.Next() {
			var k sgam.Key
			if err := rows.Scan(&k.Tenant, &k.Subject); err != nil {
				rows.Close()
				return err
			}
			k.Attribute = q.Attribute
			keys = append(keys, k)
			tenants, subjectIDs = append(tenants, k.Tenant), append(subjectIDs, k.Subject)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(keys) == 0 {
			done = true
			return nil
		}
		if _, err := tx.Exec(ctx, lockSQL, keyLocks(keys)); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT f.tenant_id, f.subject, f.member, f.fact_id, f.value_text, f.valid_from, f.valid_to,
				f.recorded_at, f.source, f.schema_version, f.actor,
				(SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e
				  WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id)
			FROM unnest($3::text[], $4::text[]) AS k(t, s)
			JOIN LATERAL (SELECT * FROM facts f WHERE f.tenant_id = k.t AND f.subject = k.s AND `+migrationRows+` OFFSET 0) f ON true`,
			q.Attribute, q.Below, tenants, subjectIDs)
		if err != nil {
			return err
		}
		var found []ledger.MigrationRow
		for rows.Next() {
			r := ledger.MigrationRow{Key: sgam.Key{Attribute: q.Attribute}}
			var value, source, actor *string
			var from, recorded time.Time
			var to *time.Time
			if err := rows.Scan(&r.Key.Tenant, &r.Key.Subject, &r.Key.Member, &r.Row.ID, &value, &from, &to,
				&recorded, &source, &r.Row.Version, &actor, &r.Evidence); err != nil {
				rows.Close()
				return err
			}
			if value != nil {
				r.Row.Value = []byte(*value)
			}
			if source != nil {
				r.Row.Source = *source
			}
			if actor != nil {
				r.Row.Actor = *actor
			}
			r.Row.ValidFrom, r.Row.ValidTo, r.Row.RecordedAt, r.Row.RetractedAt = sgam.Micros(from), openOr(to), sgam.Micros(recorded), temporal.Open
			r.Row.Corroborated = len(r.Evidence) > 0
			found = append(found, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		gov := s.readGov()
		ops, err := plan(gov, found)
		last = ledger.Cursor{Tenant: keys[len(keys)-1].Tenant, Subject: keys[len(keys)-1].Subject}
		subjects = len(keys)
		if err != nil || len(ops) == 0 {
			return err
		}
		b := ledger.New(ops)
		b.Gov = gov
		ids, now, err := s.load(ctx, tx, b, 2*len(ops), nil, false)
		if err != nil {
			return err
		}
		if err := b.Apply(now, func() int64 { id := ids[0]; ids = ids[1:]; return id }, ""); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, flushBatch(b, now)).Close(); err != nil {
			return err
		}
		for _, k := range b.Keys {
			written += len(b.Ledger(k).Inserted)
		}
		raise(&s.txHigh, now)
		return nil
	})
	return last, subjects, written, done, err
}
