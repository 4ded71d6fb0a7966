package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The extraction queue of a PostgreSQL ledger is River's tables (package
// queue) in the same database. Its job rows name an episode by tenant and
// id (kind sgam_extract, args {"tenant", "episode_id"}), and River keeps
// ended ones for a day or a week: past a forget. So forgetting episodes
// (or a tenant) deletes their job rows in the forget's transaction, and
// Compact deletes any whose episode is gone (a queue migrated after a
// forget, say) before it vacuums.

// extractJobKind is River's kind of an extraction job (queue.ExtractArgs).
const extractJobKind = "sgam_extract"

// ForgetJobs implements engine.Tx.
func (t *tx) ForgetJobs(tenant string, episodes []string) error {
	if len(episodes) == 0 {
		return nil
	}
	return t.deleteJobs(tenant, episodes, false)
}

// deleteJobs deletes a tenant's extraction jobs: all, or those of
// episodes. A database no queue was opened on has no job table.
func (t *tx) deleteJobs(tenant string, episodes []string, all bool) error {
	var queue bool
	if err := t.queryRow(`SELECT to_regclass('river_job') IS NOT NULL`).Scan(&queue); err != nil {
		return fmt.Errorf("forget jobs: %w", err)
	}
	if !queue {
		return nil
	}
	_, err := t.exec("forget jobs", `DELETE FROM river_job WHERE kind = $1 AND args ->> 'tenant' = $2 AND ($3 OR args ->> 'episode_id' = ANY($4::text[]))`,
		extractJobKind, tenant, all, append([]string{}, episodes...))
	return err
}

// sweepJobs deletes the extraction jobs whose episode is gone, and
// reports whether the database has a job table.
func (s *db) sweepJobs(ctx context.Context) (bool, error) {
	var queue bool
	err := s.inTx(ctx, pgx.TxOptions{}, "compact the queue", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, ""); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&queue); err != nil || !queue {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM river_job j WHERE j.kind = $1 AND NOT EXISTS (
			SELECT 1 FROM episodes e WHERE e.tenant_id = j.args ->> 'tenant' AND e.episode_id = j.args ->> 'episode_id')`, extractJobKind)
		return err
	})
	return queue, err
}
