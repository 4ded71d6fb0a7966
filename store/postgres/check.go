package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Check implements engine.Reader: one repeatable-read snapshot of every
// tenant.
func (s *db) Check(ctx context.Context) ([]sgam.Violation, error) {
	var out []sgam.Violation
	err := s.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, "check", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, allTenants); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT tenant_id, subject, attribute, member, fact_id, valid_from, valid_to, recorded_at, retracted_at
			FROM facts ORDER BY tenant_id, subject, attribute, member, valid_from`)
		if err != nil {
			return err
		}
		var keys ledger.KeyChecker
		for rows.Next() {
			var k sgam.Key
			var r temporal.Row
			var validFrom, recordedAt time.Time
			var validTo, retractedAt *time.Time
			if err := rows.Scan(&k.Tenant, &k.Subject, &k.Attribute, &k.Member, &r.ID, &validFrom, &validTo, &recordedAt, &retractedAt); err != nil {
				rows.Close()
				return err
			}
			r.ValidFrom, r.ValidTo, r.RecordedAt, r.RetractedAt = sgam.Micros(validFrom), openOr(validTo), sgam.Micros(recordedAt), openOr(retractedAt)
			keys.Add(k, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		out = keys.Done()
		for _, c := range []struct{ rule, query, message string }{
			{"evidence", `SELECT f.fact_id, f.tenant_id, f.subject, f.attribute FROM facts f
				WHERE f.source IS NULL AND f.actor IS NULL
				  AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id)`,
				"fact %d has no evidence episode and no system actor"},
			{"member", `SELECT fact_id, tenant_id, subject, attribute FROM facts WHERE member <> '' AND value_text IS NOT NULL AND value_text <> member`,
				"fact %d of a set holds a value other than its member"},
			{"foreign_key", `SELECT f.fact_id, f.tenant_id, f.subject, f.attribute FROM facts f
				WHERE f.source IS NOT NULL AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.tenant_id = f.tenant_id AND e.episode_id = f.source)`,
				"fact %d cites a missing source episode"},
		} {
			rows, err := tx.Query(ctx, c.query)
			if err != nil {
				return err
			}
			for rows.Next() {
				var v sgam.Violation
				var id int64
				if err := rows.Scan(&id, &v.Tenant, &v.Subject, &v.Attribute); err != nil {
					rows.Close()
					return err
				}
				v.Rule, v.FactIDs, v.Message = c.rule, []int64{id}, fmt.Sprintf(c.message, id)
				out = append(out, v)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		// The search terms (migration 0008) are those of each episode's
		// tsvector, no more and no fewer.
		rows, err = tx.Query(ctx, `SELECT coalesce(e.tenant_id, t.tenant_id), coalesce(e.episode_id, t.episode_id), e.episode_id IS NULL
			FROM episodes e FULL JOIN (SELECT tenant_id, episode_id, array_agg(term ORDER BY term) AS terms
				FROM search_terms GROUP BY tenant_id, episode_id) t
			ON t.tenant_id = e.tenant_id AND t.episode_id = e.episode_id
			WHERE t.terms IS DISTINCT FROM (SELECT array_agg(x ORDER BY x) FROM unnest(tsvector_to_array(e.search)) x)
			ORDER BY 1, 2`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tenant, episode string
			var gone bool
			if err := rows.Scan(&tenant, &episode, &gone); err != nil {
				return err
			}
			msg := fmt.Sprintf("episode %s: its search terms are not those of its content (sgam reindex rebuilds them)", episode)
			if gone {
				msg = fmt.Sprintf("episode %s is gone, and its search terms are left (sgam reindex deletes them)", episode)
			}
			out = append(out, sgam.Violation{Rule: "search_index", Tenant: tenant, Message: msg})
		}
		return rows.Err()
	})
	return out, err
}
