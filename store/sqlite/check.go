package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Check implements engine.Reader. It reads one snapshot of the whole file.
func (s *db) Check(ctx context.Context) ([]sgam.Violation, error) {
	out, err := s.check(ctx)
	return out, mapErr(err)
}

func (s *db) check(ctx context.Context) ([]sgam.Violation, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer tx.Rollback()

	// The temporal invariants, key by key, in index order.
	rows, err := tx.QueryContext(ctx, `SELECT tenant, subject, attribute, member, fact_id, valid_from, valid_to, recorded_at, retracted_at
		FROM facts ORDER BY tenant, subject, attribute, member, valid_from`)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	var keys ledger.KeyChecker
	for rows.Next() {
		var k sgam.Key
		var r temporal.Row
		var validTo, retractedAt sql.NullInt64
		if err := rows.Scan(&k.Tenant, &k.Subject, &k.Attribute, &k.Member, &r.ID, &r.ValidFrom, &validTo, &r.RecordedAt, &retractedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("check: %w", err)
		}
		r.ValidTo, r.RetractedAt = openIfNull(validTo), openIfNull(retractedAt)
		keys.Add(k, r)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	out := keys.Done()

	// Row-level rules, each a query that lists offenders.
	perFact := []struct{ rule, query, message string }{
		{"evidence", `SELECT f.fact_id, f.tenant, f.subject, f.attribute FROM facts f
			WHERE f.source IS NULL AND f.actor IS NULL AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id)`,
			"fact %d has no evidence episode and no system actor"},
		{"evidence_tenant", `SELECT DISTINCT f.fact_id, f.tenant, f.subject, f.attribute FROM evidence e JOIN facts f ON f.fact_id = e.fact_id
			WHERE e.tenant <> f.tenant`,
			"fact %d has evidence from another tenant"},
		{"value", `SELECT fact_id, tenant, subject, attribute FROM facts WHERE value IS NOT NULL AND NOT json_valid(value)`,
			"fact %d holds a value that is not valid JSON"},
		{"member", `SELECT fact_id, tenant, subject, attribute FROM facts WHERE member <> '' AND value IS NOT NULL AND value <> member`,
			"fact %d of a set holds a value other than its member"},
	}
	for _, c := range perFact {
		rows, err := tx.QueryContext(ctx, c.query)
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", c.rule, err)
		}
		for rows.Next() {
			var v sgam.Violation
			var id int64
			if err := rows.Scan(&id, &v.Tenant, &v.Subject, &v.Attribute); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check %s: %w", c.rule, err)
			}
			v.Rule, v.FactIDs, v.Message = c.rule, []int64{id}, fmt.Sprintf(c.message, id)
			out = append(out, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check %s: %w", c.rule, err)
		}
	}

	// Foreign keys (evidence -> episodes, evidence -> facts) and the file.
	fk, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return nil, fmt.Errorf("check foreign keys: %w", err)
	}
	for fk.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int
		if err := fk.Scan(&table, &rowid, &parent, &fkid); err != nil {
			fk.Close()
			return nil, fmt.Errorf("check foreign keys: %w", err)
		}
		out = append(out, sgam.Violation{Rule: "foreign_key", Message: fmt.Sprintf("a row of %s points at a missing row of %s", table, parent)})
	}
	fk.Close()
	// quick_check checks the full-text index through the structure FTS5
	// keeps cached on this connection, without first asking whether
	// another connection has rewritten the index since (a capture's merge,
	// the idle merge, another process): on a stale structure it reports
	// segments those merges removed as corrupt. A search revalidates it.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH 'sgam' LIMIT 1)`).Scan(&n); err != nil {
		return nil, fmt.Errorf("check integrity: %w", err)
	}
	var integrity string
	if err := tx.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&integrity); err != nil {
		return nil, fmt.Errorf("check integrity: %w", err)
	}
	if integrity != "ok" {
		out = append(out, sgam.Violation{Rule: "integrity", Message: "SQLite quick_check: " + integrity})
	}
	return out, nil
}
