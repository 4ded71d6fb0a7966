package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// CheckHeads implements engine.Tx.
func (t *tx) CheckHeads(heads map[string]ledger.Head) error {
	if len(heads) == 0 {
		return nil
	}
	rows, err := t.query(headsSQL, headTenants(heads))
	if err != nil {
		return fmt.Errorf("read schemas: %w", err)
	}
	changed, err := scanHeads(rows, heads)
	if err != nil {
		return fmt.Errorf("read schemas: %w", err)
	}
	if changed != nil {
		return &engine.SchemaChanged{Heads: changed}
	}
	return nil
}

// LockSchemas implements engine.Tx: applies are serialized by an advisory
// lock; writes in flight under the previous version commit under it.
func (t *tx) LockSchemas() error {
	_, err := t.exec("lock schemas", `SELECT pg_advisory_xact_lock($1, $2)`, lockClass, schemaLock)
	return err
}

// SchemaHead implements engine.Tx.
func (t *tx) SchemaHead(tenant string) (ledger.Head, error) {
	return schemaHead(t.queryRow(headSQL, tenant), tenant)
}

// headSQL is headsSQL for one tenant.
const headSQL = `SELECT coalesce((SELECT max(version) FROM schemas WHERE tenant_id = $1 AND $1 <> ''), 0),
	(SELECT coalesce(max(version), 0) FROM schemas WHERE tenant_id = '')`

func schemaHead(row pgx.Row, tenant string) (ledger.Head, error) {
	var own, def int
	if err := row.Scan(&own, &def); err != nil {
		return ledger.Head{}, fmt.Errorf("read the schema of %s: %w", tenant, err)
	}
	return ledger.HeadOf(tenant, own, def), nil
}

const schemaColumns = `tenant_id, version, hash, applied_at, body`

func scanSchema(row pgx.Row) (sgam.SchemaVersion, bool, error) {
	var v sgam.SchemaVersion
	err := row.Scan(&v.Tenant, &v.Version, &v.Hash, &v.AppliedAt, &v.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("read schema: %w", err)
	}
	v.AppliedAt, v.StoreDefault = v.AppliedAt.UTC(), v.Tenant == ""
	return v, true, nil
}

// SchemaVersion implements engine.Tx.
func (t *tx) SchemaVersion(h ledger.Head) (sgam.SchemaVersion, error) {
	v, found, err := scanSchema(t.queryRow(`SELECT `+schemaColumns+` FROM schemas WHERE tenant_id = $1 AND version = $2`, h.Owner, h.Version))
	if err == nil && !found {
		err = &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("schema version %d is not stored", h.Version)}
	}
	return v, err
}

// InsertSchema implements engine.Tx.
func (t *tx) InsertSchema(v sgam.SchemaVersion) error {
	_, err := t.exec("store schema", `INSERT INTO schemas (tenant_id, version, body, hash, applied_at) VALUES ($1, $2, $3, $4, $5)`,
		v.Tenant, v.Version, string(v.Body), v.Hash, v.AppliedAt)
	return err
}

// read runs fn in a read-only transaction scoped to tenant ("" all): for
// reads whose statements must see one snapshot. BEGIN, the scope and
// COMMIT are a round trip each; a read whose statements may each see
// their own snapshot spares them with readEach.
func (s *db) read(ctx context.Context, tenant, what string, fn func(pgx.Tx) error) error {
	return s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, what, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
			return err
		}
		return fn(tx)
	})
}

// querier runs statements of a read.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readEach runs fn scoped to tenant ("" all), each of its statements in
// one round trip: the scope and the statement go out as one batch, which
// the server runs as one implicit transaction. fn must be done with a
// statement's rows before it runs the next. On a recall, that is most of
// its round trips spared (on this project's machines a round trip costs
// more than most of recall's statements).
func (s *db) readEach(ctx context.Context, tenant, what string, fn func(querier) error) error {
	return s.retry(ctx, what, func() error {
		r := &eachReader{pool: s.pool, tenant: tenant}
		err := fn(r)
		if cerr := r.done(); err == nil {
			err = cerr
		}
		return err
	})
}

// eachReader is readEach's querier.
type eachReader struct {
	pool   *pgxpool.Pool
	tenant string
	open   pgx.BatchResults // the last statement's batch, holding its connection
}

func (r *eachReader) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if err := r.done(); err != nil {
		return nil, err
	}
	bt := newBatch(r.tenant)
	bt.Queue(sql, args...)
	r.open = r.pool.SendBatch(ctx, bt)
	return r.open, skipScope(r.open)
}

// done closes the last statement's batch, releasing its connection.
func (r *eachReader) done() error {
	if r.open == nil {
		return nil
	}
	err := r.open.Close()
	r.open = nil
	return err
}

func (r *eachReader) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := r.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return br.Query()
}

func (r *eachReader) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := r.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return br.QueryRow()
}

// SchemaHead implements engine.Reader.
func (s *db) SchemaHead(ctx context.Context, tenant string) (h ledger.Head, err error) {
	err = s.readEach(ctx, tenant, "read schema", func(tx querier) error {
		h, err = schemaHead(tx.QueryRow(ctx, headSQL, tenant), tenant)
		return err
	})
	return h, err
}

// SchemaVersion implements engine.Reader.
func (s *db) SchemaVersion(ctx context.Context, h ledger.Head) (v sgam.SchemaVersion, found bool, err error) {
	err = s.readEach(ctx, h.Owner, "read schema", func(tx querier) error {
		v, found, err = scanSchema(tx.QueryRow(ctx, `SELECT `+schemaColumns+` FROM schemas WHERE tenant_id = $1 AND version = $2`, h.Owner, h.Version))
		return err
	})
	return v, found, err
}

// SchemaVersions implements engine.Reader.
func (s *db) SchemaVersions(ctx context.Context, owner string) (out []sgam.SchemaVersion, err error) {
	err = s.read(ctx, owner, "read schemas", func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, `SELECT `+schemaColumns+` FROM schemas WHERE tenant_id = $1 ORDER BY version`, owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, _, err := scanSchema(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, err
}

// SchemaOwners implements engine.Reader.
func (s *db) SchemaOwners(ctx context.Context) (out []string, err error) {
	err = s.read(ctx, allTenants, "read schemas", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT DISTINCT tenant_id FROM schemas WHERE tenant_id <> '' ORDER BY tenant_id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if out == nil {
		out = []string{}
	}
	return out, err
}

const pendingColumns = `tenant_id, pending_id, subject, attribute, member, value_text, valid_from, source, reason, conflicts_with, recorded_at, schema_version, signals`

func scanCandidate(row pgx.Row) (sgam.Candidate, error) {
	var c sgam.Candidate
	var member, value string
	if err := row.Scan(&c.Tenant, &c.ID, &c.Subject, &c.Attribute, &member, &value, &c.ValidFrom, &c.Source, &c.Reason,
		&c.ConflictsWith, &c.RecordedAt, &c.SchemaVersion, &c.Signals); err != nil {
		return c, err
	}
	if member != "" {
		c.Member = []byte(member)
	}
	c.Value = []byte(value)
	c.ValidFrom, c.RecordedAt = c.ValidFrom.UTC(), c.RecordedAt.UTC()
	return c, nil
}

// Pending implements engine.Reader.
func (s *db) Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error) {
	out := []sgam.Candidate{}
	err := s.read(ctx, q.Tenant, "list pending", func(tx pgx.Tx) error {
		out = out[:0]
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

// Candidate implements engine.Reader.
func (s *db) Candidate(ctx context.Context, tenant, id string) (c sgam.Candidate, found bool, err error) {
	err = s.read(ctx, tenant, "read pending", func(tx pgx.Tx) error {
		c, err = scanCandidate(tx.QueryRow(ctx, `SELECT `+pendingColumns+` FROM pending WHERE tenant_id = $1 AND pending_id = $2`, tenant, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	return c, found, err
}
