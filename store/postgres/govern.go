package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
)

// errSchemaChanged ends a write whose ops were validated under a schema
// version another process has since replaced; the write runs again under
// the new one (see retryable).
var errSchemaChanged = errors.New("the schema changed during the write")

type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// loadGov loads schema version (the newest when version < 0) and makes it
// the one writes are validated under.
func (s *Store) loadGov(ctx context.Context, q querier, version int) (ledger.Gov, error) {
	var body []byte
	err := q.QueryRow(ctx, `SELECT version, body FROM schemas WHERE version = $1 OR ($1 < 0 AND version = (SELECT max(version) FROM schemas))`,
		version).Scan(&version, &body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		version, body = 0, nil
	case err != nil:
		return ledger.Gov{}, err
	}
	g, err := ledger.LoadGov(version, body)
	if err != nil {
		return g, err
	}
	s.gov.Store(&g)
	return g, nil
}

// readGov is the schema reads resolve attribute names under, and writes
// start from (they check its version inside their transaction). Reads look
// for a version applied by another server at most once a second.
func (s *Store) readGov() ledger.Gov {
	if last := s.govChecked.Load(); time.Since(time.Unix(0, last)) > time.Second &&
		s.govChecked.CompareAndSwap(last, time.Now().UnixNano()) {
		s.loadGov(context.Background(), s.pool, -1)
	}
	if g := s.gov.Load(); g != nil {
		return *g
	}
	return ledger.Gov{}
}

// Schema implements sgam.Store.
func (s *Store) Schema(ctx context.Context) (sgam.SchemaVersion, error) {
	var v sgam.SchemaVersion
	err := s.pool.QueryRow(ctx, `SELECT version, hash, applied_at, body FROM schemas ORDER BY version DESC LIMIT 1`).
		Scan(&v.Version, &v.Hash, &v.AppliedAt, &v.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return sgam.SchemaVersion{}, nil
	}
	v.AppliedAt = v.AppliedAt.UTC()
	return v, mapErr("read schema", err)
}

// ApplySchema implements sgam.Store. Applies are serialized by an advisory
// lock; writes in flight under the previous version commit under it.
func (s *Store) ApplySchema(ctx context.Context, file []byte, dryRun bool) (sgam.SchemaVersion, error) {
	var next sgam.SchemaVersion
	err := s.inTx(ctx, pgx.TxOptions{}, "apply schema", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockClass, schemaLock); err != nil {
			return err
		}
		cur, err := s.loadGov(ctx, tx, -1)
		if err != nil {
			return err
		}
		var unchanged bool
		if next, unchanged, err = ledger.NextSchema(cur, file); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT statement_timestamp()`).Scan(&next.AppliedAt); err != nil {
			return err
		}
		if s.clock != nil {
			next.AppliedAt = s.clock.Now()
		}
		next.AppliedAt = next.AppliedAt.UTC()
		if unchanged {
			err := tx.QueryRow(ctx, `SELECT version, hash, applied_at, body FROM schemas WHERE version = $1`, cur.Version).
				Scan(&next.Version, &next.Hash, &next.AppliedAt, &next.Body)
			next.AppliedAt, next.Diff = next.AppliedAt.UTC(), []string{}
			return err
		}
		if dryRun {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO schemas (version, body, hash, applied_at) VALUES ($1, $2, $3, $4)`,
			next.Version, string(next.Body), next.Hash, next.AppliedAt)
		return err
	})
	if err != nil {
		return next, err
	}
	if !dryRun {
		_, err = s.loadGov(ctx, s.pool, -1)
	}
	return next, mapErr("apply schema", err)
}

// episodeKinds reads the kinds of episodes inside the write transaction.
func episodeKinds(ctx context.Context, c *pgxpool.Conn, refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]string, error) {
	tenants, ids := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], ids[i] = r.Tenant, r.ID
	}
	rows, err := c.Query(ctx, `SELECT e.tenant_id, e.episode_id, e.kind FROM unnest($1::text[], $2::text[]) AS r(t, id)
		JOIN episodes e ON e.tenant_id = r.t AND e.episode_id = r.id`, tenants, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[ledger.EpisodeRef]string, len(refs))
	for rows.Next() {
		var r ledger.EpisodeRef
		var kind string
		if err := rows.Scan(&r.Tenant, &r.ID, &kind); err != nil {
			return nil, err
		}
		out[r] = kind
	}
	return out, rows.Err()
}

const pendingColumns = `tenant_id, pending_id, subject, attribute, member, value_text, valid_from, source, reason, conflicts_with, recorded_at, schema_version`

func scanCandidate(row pgx.Row) (sgam.Candidate, error) {
	var c sgam.Candidate
	var member, value string
	if err := row.Scan(&c.Tenant, &c.ID, &c.Subject, &c.Attribute, &member, &value, &c.ValidFrom, &c.Source, &c.Reason,
		&c.ConflictsWith, &c.RecordedAt, &c.SchemaVersion); err != nil {
		return c, err
	}
	if member != "" {
		c.Member = []byte(member)
	}
	c.Value = []byte(value)
	c.ValidFrom, c.RecordedAt = c.ValidFrom.UTC(), c.RecordedAt.UTC()
	return c, nil
}

// findPending returns the id of a stored candidate identical to c, or "".
func findPending(ctx context.Context, q querier, c sgam.Candidate) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT pending_id FROM pending WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND member = $4
		AND valid_from = $5 AND source = $6 AND value_text = $7 LIMIT 1`, c.Tenant, c.Subject, c.Attribute, string(c.Member),
		c.ValidFrom, c.Source, string(c.Value)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// Pending implements sgam.Store.
func (s *Store) Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error) {
	q, err := q.Check()
	if err != nil {
		return nil, err
	}
	out := []sgam.Candidate{}
	err = s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, "list pending", func(tx pgx.Tx) error {
		out = out[:0]
		if _, err := tx.Exec(ctx, scopeSQL, q.Tenant); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+pendingColumns+` FROM pending
			WHERE tenant_id = $1 AND ($2 = '' OR subject = $2) ORDER BY recorded_at, pending_id LIMIT $3`, q.Tenant, q.Subject, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCandidate(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// Confirm implements sgam.Store.
func (s *Store) Confirm(ctx context.Context, tenant, pendingID, episodeID string) (sgam.WriteResult, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return sgam.WriteResult{}, err
	}
	if err := sgam.CheckEpisodeID("episode_id", episodeID); err != nil {
		return sgam.WriteResult{}, err
	}
	var c sgam.Candidate
	err := s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, "read pending", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
			return err
		}
		var err error
		c, err = scanCandidate(tx.QueryRow(ctx, `SELECT `+pendingColumns+` FROM pending WHERE tenant_id = $1 AND pending_id = $2`, tenant, pendingID))
		if errors.Is(err, pgx.ErrNoRows) {
			return sgam.Errorf(sgam.NotFound, "pending_id", "tenant %s has no pending candidate %q", tenant, pendingID)
		}
		return err
	})
	if err != nil {
		return sgam.WriteResult{}, err
	}
	res, err := s.write(ctx, writeReq{confirm: &c, build: func(g ledger.Gov, now time.Time) ([]ledger.Op, error) {
		return g.Candidate(c, episodeID, now)
	}})
	if err != nil {
		return sgam.WriteResult{}, err
	}
	return res[len(res)-1], nil
}

// Dismiss implements sgam.Store.
func (s *Store) Dismiss(ctx context.Context, tenant, pendingID string) error {
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	return s.inTx(ctx, pgx.TxOptions{}, "dismiss pending", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM pending WHERE tenant_id = $1 AND pending_id = $2`, tenant, pendingID)
		if err == nil && tag.RowsAffected() != 1 {
			return sgam.Errorf(sgam.NotFound, "pending_id", "tenant %s has no pending candidate %q", tenant, pendingID)
		}
		return err
	})
}

// Relation reports whether the schema in force declares attribute a ref
// (see sgam.Traverse).
func (s *Store) Relation(attribute string) (ref, governed bool) {
	return s.readGov().Relation(attribute)
}
