package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Migrate implements sgam.Store.
func (s *Store) Migrate(ctx context.Context, opts sgam.MigrateOptions) ([]sgam.MigrationReport, error) {
	g, err := s.loadGov(ctx, s.rdb, s.latestSchemaVersion(ctx))
	if err != nil {
		return nil, err
	}
	return ledger.RunMigrations(ctx, migrationStore{s}, g, opts)
}

func (s *Store) latestSchemaVersion(ctx context.Context) int {
	var v int
	s.rdb.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schemas`).Scan(&v)
	return v
}

type migrationStore struct{ s *Store }

func (m migrationStore) SchemaVersions(ctx context.Context) ([]sgam.SchemaVersion, error) {
	rows, err := m.s.rdb.QueryContext(ctx, `SELECT version, hash, applied_at, body FROM schemas ORDER BY version`)
	if err != nil {
		return nil, mapErr("read schemas", err)
	}
	defer rows.Close()
	var out []sgam.SchemaVersion
	for rows.Next() {
		var v sgam.SchemaVersion
		var at int64
		var body []byte
		if err := rows.Scan(&v.Version, &v.Hash, &at, &body); err != nil {
			return nil, mapErr("read schemas", err)
		}
		v.Body = body
		v.AppliedAt = sgam.FromMicros(at)
		out = append(out, v)
	}
	return out, mapErr("read schemas", rows.Err())
}

// migrationRows is the condition on the rows a migration still has to move
// (?1 attribute, ?2 version bound or 0): believed, and for a retype written
// before the migration was declared and holding a value (a single value's
// tombstone has no representation to change).
const migrationRows = `f.attribute = ?1 AND f.retracted_at IS NULL
	AND (?2 = 0 OR (f.schema_version < ?2 AND (f.value IS NOT NULL OR f.member <> '')))`

func (m migrationStore) CountSubjects(ctx context.Context, q ledger.MigrationQuery) (int, error) {
	var n int
	err := m.s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT DISTINCT tenant, subject FROM facts f WHERE `+migrationRows+`)`,
		q.Attribute, q.Below).Scan(&n)
	return n, mapErr("count subjects to migrate", err)
}

func (m migrationStore) MigrateBatch(ctx context.Context, q ledger.MigrationQuery, after ledger.Cursor, limit int,
	plan func(ledger.Gov, []ledger.MigrationRow) ([]ledger.Op, error)) (ledger.Cursor, int, int, bool, error) {
	s := m.s
	tx, err := s.begin(ctx)
	if err != nil {
		return after, 0, 0, false, err
	}
	defer tx.rollback()
	gov, err := s.currentGov(ctx)
	if err != nil {
		return after, 0, 0, false, err
	}
	// The next subjects in key order, then their rows, with evidence.
	rows, err := s.w.QueryContext(ctx, `WITH subjects AS (
			SELECT DISTINCT tenant, subject FROM facts f
			WHERE (tenant, subject) > (?3, ?4) AND `+migrationRows+`
			ORDER BY tenant, subject LIMIT ?5)
		SELECT f.tenant, f.subject, f.member, f.fact_id, f.value, f.valid_from, f.valid_to, f.recorded_at,
			f.source, f.schema_version, f.actor,
			(SELECT group_concat(e.episode_id, char(31)) FROM evidence e WHERE e.fact_id = f.fact_id)
		FROM subjects JOIN facts f ON f.tenant = subjects.tenant AND f.subject = subjects.subject
		WHERE `+migrationRows+`
		ORDER BY f.tenant, f.subject`, q.Attribute, q.Below, after.Tenant, after.Subject, limit)
	if err != nil {
		return after, 0, 0, false, mapErr("read rows to migrate", err)
	}
	var found []ledger.MigrationRow
	last := after
	subjects := 0
	for rows.Next() {
		r := ledger.MigrationRow{Key: sgam.Key{Attribute: q.Attribute}}
		var value []byte
		var validTo sql.NullInt64
		var source, actor, evidence sql.NullString
		if err := rows.Scan(&r.Key.Tenant, &r.Key.Subject, &r.Key.Member, &r.Row.ID, &value, &r.Row.ValidFrom, &validTo,
			&r.Row.RecordedAt, &source, &r.Row.Version, &actor, &evidence); err != nil {
			rows.Close()
			return after, 0, 0, false, mapErr("read rows to migrate", err)
		}
		r.Row.Value, r.Row.Source, r.Row.Actor = value, source.String, actor.String
		r.Row.ValidTo, r.Row.RetractedAt = openIfNull(validTo), temporal.Open
		if evidence.Valid && evidence.String != "" {
			r.Evidence = strings.Split(evidence.String, "\x1f")
			r.Row.Corroborated = true
		}
		if c := (ledger.Cursor{Tenant: r.Key.Tenant, Subject: r.Key.Subject}); c != last {
			last = c
			subjects++
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return after, 0, 0, false, mapErr("read rows to migrate", err)
	}
	if len(found) == 0 {
		return after, 0, 0, true, nil
	}
	ops, err := plan(gov, found)
	if err != nil || len(ops) == 0 {
		return last, subjects, 0, false, err
	}
	b := ledger.New(ops)
	b.Gov = gov
	if err := s.apply(ctx, tx, b, ""); err != nil {
		return after, 0, 0, false, err
	}
	written := 0
	for _, k := range b.Keys {
		written += len(b.Ledger(k).Inserted)
	}
	if err := tx.commit(b.Keys); err != nil {
		return after, 0, 0, false, err
	}
	return last, subjects, written, false, nil
}
