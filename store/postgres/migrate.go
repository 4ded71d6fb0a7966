package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// migrationRows is the condition on the rows a migration still has to move
// ($1 attribute, $2 version bound or 0, $3 the scope): believed, and for a
// retype written before the migration was declared and holding a value.
// "Believed" is spelled to keep the planner off the exclusion constraint's
// GiST index.
func migrationRows(q ledger.MigrationQuery) (string, []any) {
	cond, arg := scopeCond(q.Scope, "f", 3)
	return `f.attribute = $1 AND coalesce(f.retracted_at, 'infinity') = 'infinity'
		AND ($2 = 0 OR (f.schema_version < $2 AND (f.value_text IS NOT NULL OR f.member <> ''))) AND ` + cond,
		[]any{q.Attribute, q.Below, arg}
}

// CountSubjects implements engine.Reader.
func (s *db) CountSubjects(ctx context.Context, q ledger.MigrationQuery) (n int, err error) {
	where, args := migrationRows(q)
	err = s.read(ctx, q.Scope.Tenant, "count subjects to migrate", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT tenant_id, subject FROM facts f WHERE `+where+`) x`, args...).Scan(&n)
	})
	return n, err
}

// MigrationRows implements engine.Tx: the next subjects in key order,
// locked as writers lock them, then their rows with evidence.
func (t *tx) MigrationRows(q ledger.MigrationQuery, after ledger.Cursor, limit int) ([]ledger.MigrationRow, error) {
	where, args := migrationRows(q)
	rows, err := t.query(`SELECT DISTINCT tenant_id, subject FROM facts f
		WHERE (tenant_id, subject) > ($4, $5) AND `+where+`
		ORDER BY tenant_id, subject LIMIT $6`, append(args, after.Tenant, after.Subject, limit)...)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.Key, error) {
		k := sgam.Key{Attribute: q.Attribute}
		return k, r.Scan(&k.Tenant, &k.Subject)
	})
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	if err := t.lock(keys); err != nil {
		return nil, err
	}
	tenants, subjects := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tenants[i], subjects[i] = k.Tenant, k.Subject
	}
	rows, err = t.query(`SELECT f.tenant_id, f.subject, f.member, f.fact_id, f.value_text, f.valid_from, f.valid_to,
			f.recorded_at, f.source, f.schema_version, f.actor,
			(SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e
			  WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id)
		FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS k(t, s, i)
		JOIN LATERAL (SELECT * FROM facts f WHERE f.tenant_id = k.t AND f.subject = k.s AND `+where+` OFFSET 0) f ON true
		ORDER BY k.i`, append(args, tenants, subjects)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []ledger.MigrationRow
	for rows.Next() {
		r := ledger.MigrationRow{Key: sgam.Key{Attribute: q.Attribute}}
		var value, source, actor *string
		var from, recorded time.Time
		var to *time.Time
		if err := rows.Scan(&r.Key.Tenant, &r.Key.Subject, &r.Key.Member, &r.Row.ID, &value, &from, &to,
			&recorded, &source, &r.Row.Version, &actor, &r.Evidence); err != nil {
			return nil, err
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
	return found, rows.Err()
}
