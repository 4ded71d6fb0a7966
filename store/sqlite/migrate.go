package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// migrationRows is the condition on the rows a migration still has to move
// (?1 attribute, ?2 version bound or 0, then the scope's argument):
// believed, and for a retype written before the migration was declared and
// holding a value (a single value's tombstone has no representation to
// change).
func migrationRows(q ledger.MigrationQuery, n int) (string, []any) {
	where, args := scopeSQL(q.Scope, n)
	return `f.attribute = ?1 AND f.retracted_at IS NULL
		AND (?2 = 0 OR (f.schema_version < ?2 AND (f.value IS NOT NULL OR f.member <> ''))) AND f.` + where,
		append([]any{q.Attribute, q.Below}, args...)
}

// CountSubjects implements engine.Reader.
func (s *db) CountSubjects(ctx context.Context, q ledger.MigrationQuery) (int, error) {
	var n int
	where, args := migrationRows(q, 3)
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT DISTINCT tenant, subject FROM facts f WHERE `+where+`)`, args...).Scan(&n)
	if err != nil {
		return 0, mapRead("count subjects to migrate", err)
	}
	return n, nil
}

// MigrationRows implements engine.Tx: the next subjects in key order, then
// their rows, with evidence.
func (t *tx) MigrationRows(q ledger.MigrationQuery, after ledger.Cursor, limit int) ([]ledger.MigrationRow, error) {
	where, args := migrationRows(q, 6)
	rows, err := t.s.w.QueryContext(t.ctx, `WITH subjects AS (
			SELECT DISTINCT tenant, subject FROM facts f
			WHERE (tenant, subject) > (?3, ?4) AND `+where+`
			ORDER BY tenant, subject LIMIT ?5)
		SELECT f.tenant, f.subject, f.member, f.fact_id, f.value, f.valid_from, f.valid_to, f.recorded_at,
			f.source, f.schema_version, f.actor,
			(SELECT group_concat(e.episode_id, char(31)) FROM evidence e WHERE e.fact_id = f.fact_id)
		FROM subjects JOIN facts f ON f.tenant = subjects.tenant AND f.subject = subjects.subject
		WHERE `+where+`
		ORDER BY f.tenant, f.subject`, append(append(args[:2:2], after.Tenant, after.Subject, limit), args[2:]...)...)
	if err != nil {
		return nil, fmt.Errorf("read rows to migrate: %w", err)
	}
	defer rows.Close()
	var out []ledger.MigrationRow
	for rows.Next() {
		r := ledger.MigrationRow{Key: sgam.Key{Attribute: q.Attribute}}
		var value []byte
		var validTo sql.NullInt64
		var source, actor, evidence sql.NullString
		if err := rows.Scan(&r.Key.Tenant, &r.Key.Subject, &r.Key.Member, &r.Row.ID, &value, &r.Row.ValidFrom, &validTo,
			&r.Row.RecordedAt, &source, &r.Row.Version, &actor, &evidence); err != nil {
			return nil, fmt.Errorf("read rows to migrate: %w", err)
		}
		r.Row.Value, r.Row.Source, r.Row.Actor = value, source.String, actor.String
		r.Row.ValidTo, r.Row.RetractedAt = openIfNull(validTo), temporal.Open
		if evidence.Valid && evidence.String != "" {
			r.Evidence = strings.Split(evidence.String, "\x1f")
			r.Row.Corroborated = true
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows to migrate: %w", err)
	}
	return out, nil
}
