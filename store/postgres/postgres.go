package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Clock supplies transaction time; nil uses the database server's clock.
	Clock  sgam.Clock
	Limits sgam.Limits
	// MaxConns bounds the pool; default 4 × GOMAXPROCS, at least 8.
	MaxConns int32
	// Retries bounds the transparent retries of one operation; default 5.
	Retries int
	// MustExist opens an existing sgam database without migrating it (read
	// access suffices, so a hot standby serves): NotFound if there is none,
	// Unavailable if its schema is not the one this sgam writes.
	MustExist bool
	// Observer, when set, is told of every store operation.
	Observer sgam.Observer
}

// Store is the PostgreSQL store: the engine (every sgam.Store method) over
// this package's driver. It is safe for concurrent use, by many processes
// on one database.
type Store struct {
	*engine.Store
	d *db
}

// db is the driver: the pool and the SQL.
type db struct {
	pool    *pgxpool.Pool
	clock   sgam.Clock // nil: the database's clock
	retries int

	retried atomic.Int64
	// txHigh is the latest transaction instant this process wrote: with a
	// Clock set back, later writes still happen after it.
	txHigh atomic.Int64
}

var _ sgam.Store = (*Store)(nil)

// Open connects to the database at url (postgres://...) and applies pending
// migrations, under an advisory lock, so that servers starting at once
// migrate once.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, sgam.Errorf(sgam.Invalid, "db", "not a PostgreSQL URL: %v", err)
	}
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = int32(max(8, 4*runtime.GOMAXPROCS(0)))
	}
	if opts.Retries <= 0 {
		opts.Retries = 5
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable("connect", err)
	}
	s := &db{pool: pool, clock: opts.Clock, retries: opts.Retries}
	if err := s.checkRole(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if opts.MustExist {
		err = s.checkSchema(ctx)
	} else {
		err = s.migrate(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{Store: engine.New(s, engine.Options{Limits: opts.Limits, Observer: opts.Observer}), d: s}, nil
}

// checkRole refuses a role that row-level security does not apply to: a
// superuser or a BYPASSRLS role would see every tenant's rows through a
// query that forgot its tenant filter, silently.
func (s *db) checkRole(ctx context.Context) error {
	var role string
	var bypasses bool
	err := s.pool.QueryRow(ctx, `SELECT rolname, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&role, &bypasses)
	if err != nil {
		return unavailable("connect", err)
	}
	if bypasses {
		return sgam.Errorf(sgam.Invalid, "db", "role %s is a superuser or bypasses row-level security, so tenant isolation would rest on query filters alone: connect as a role without SUPERUSER and BYPASSRLS (docs/scaling.md)", role)
	}
	return nil
}

// checkSchema verifies that the database holds this sgam's schema.
func (s *db) checkSchema(ctx context.Context) error {
	var version int
	err := s.pool.QueryRow(ctx, `SELECT version FROM sgam_schema`).Scan(&version)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" || errors.Is(err, pgx.ErrNoRows) {
			return sgam.Errorf(sgam.NotFound, "db", "there is no sgam database there (or not on this search_path)")
		}
		return unavailable("open", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	if version != len(names) {
		return sgam.Errorf(sgam.Unavailable, "db", "the database has schema version %d and this sgam writes %d: run a command that writes, or upgrade sgam", version, len(names))
	}
	return nil
}

// Close implements engine.Driver.
func (s *db) Close() error {
	s.pool.Close()
	return nil
}

// Retries returns how many times an operation was retried after a
// serialization failure, a deadlock or a lost connection.
func (s *Store) Retries() int64 { return s.d.retried.Load() }

// Pool returns the connection pool, for tests and operations tooling.
func (s *Store) Pool() *pgxpool.Pool { return s.d.pool }

// Now returns the store's notion of now: the Clock, or the database's.
func (s *Store) Now() time.Time {
	if s.d.clock != nil {
		return s.d.clock.Now()
	}
	var t time.Time
	if err := s.d.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Now()
	}
	return t
}

// Clock implements engine.Driver: the store clock, or this machine's for
// what needs no database round trip (a default occurred_at, dual-read
// windows); transaction time is the database's when no clock is set.
func (s *db) Clock() sgam.Clock {
	if s.clock != nil {
		return s.clock
	}
	return sgam.SystemClock{}
}

// Advisory locks of the store's own (migrating; moving the id sequence)
// use the two-int4 key space, which PostgreSQL keeps apart from the bigint
// space of the per-key locks.
const (
	lockClass     = 0x7367616d // "sgam"
	migrationLock = 1
	sequenceLock  = 2
	schemaLock    = 3
)

func (s *db) migrate(ctx context.Context) error {
	// An up-to-date database needs no DDL, so a role that may only read and
	// write the tables (not create them) can open it.
	if s.checkSchema(ctx) == nil {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable("migrate", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, lockClass, migrationLock); err != nil {
		return unavailable("migrate", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, lockClass, migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS sgam_schema (version integer NOT NULL)`); err != nil {
		return unavailable("migrate", err)
	}
	var version int
	err = conn.QueryRow(ctx, `SELECT version FROM sgam_schema`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = conn.Exec(ctx, `INSERT INTO sgam_schema (version) VALUES (0)`)
	}
	if err != nil {
		return unavailable("migrate", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if version > len(names) {
		return sgam.Errorf(sgam.Unavailable, "db", "the database has schema version %d; this sgam knows up to %d: upgrade sgam", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return unavailable("migrate", err)
		}
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			tx.Rollback(ctx)
			return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("migration %s: %v", names[i], err), Err: err}
		}
		if _, err := tx.Exec(ctx, `UPDATE sgam_schema SET version = $1`, i+1); err != nil {
			tx.Rollback(ctx)
			return unavailable("migrate", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return unavailable("migrate", err)
		}
	}
	return nil
}

// allTenants is the scope of transactions that span tenants by nature.
const allTenants = ""

// scopeSQL sets a transaction's row-level security scope: one tenant, or
// all of them.
const scopeSQL = `SELECT set_config('sgam.tenant', $1, true), set_config('sgam.scope', CASE WHEN $1 = '' THEN 'all' ELSE '' END, true)`

// newBatch returns a batch that first sets the scope; its first result
// must be consumed (see skipScope).
func newBatch(tenant string) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(scopeSQL, tenant)
	return b
}

func skipScope(br pgx.BatchResults) error {
	_, err := br.Exec()
	return err
}

// inTx runs fn in a read transaction (opts), retrying it from the start
// after errors that are safe to retry.
func (s *db) inTx(ctx context.Context, opts pgx.TxOptions, what string, fn func(pgx.Tx) error) error {
	return s.retry(ctx, what, func() error {
		tx, err := s.pool.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback(context.Background())
			return err
		}
		return tx.Commit(ctx)
	})
}

// retry runs attempt until it succeeds, fails with an error that is not
// safe to retry, or has been retried s.retries times, backing off 1, 2,
// 4 … ms between attempts. Its error is mapped: this is the boundary.
func (s *db) retry(ctx context.Context, what string, attempt func() error) error {
	for n := 0; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if !retryable(err) || n >= s.retries || ctx.Err() != nil {
			return mapErr(fmt.Errorf("%s: %w", what, err))
		}
		s.retried.Add(1)
		select {
		case <-time.After(time.Duration(1<<n) * time.Millisecond):
		case <-ctx.Done():
			return mapErr(fmt.Errorf("%s: %w", what, ctx.Err()))
		}
	}
}

// retryable reports errors after which running the transaction again may
// succeed and cannot do harm: serialization failures and deadlocks (the
// transaction was rolled back), unique violations between concurrent
// imports of the same rows (the retry finds them present), and lost
// connections before anything was sent.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "23505":
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

// mapErr turns an error into an *sgam.Error, once, at the boundary of a
// read or a write. Call sites wrap errors with what they were doing.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sgam.Error
	var changed *engine.SchemaChanged
	if errors.As(err, &se) || errors.As(err, &changed) {
		return err
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sgam.Error{Code: sgam.Unavailable, Message: msg, Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code := sgam.Internal
		msg = strings.Replace(msg, pe.Error(), pe.Message, 1)
		switch {
		case pe.Code == "40001" || pe.Code == "40P01":
			return &sgam.Error{Code: sgam.Unavailable, Message: "retries exhausted: " + msg, Err: err}
		case pe.Code == "2200H": // the fact id sequence is exhausted
			code = sgam.Unavailable
		case pe.Code == "23505" || pe.Code == "23503":
			code = sgam.Conflict // a row that exists, or one that does not: the state, not the input
		case pe.Code == "23P01" || pe.Code == "23514":
			code = sgam.Internal // an invariant the code should have kept
		case pe.Code[:2] == "22":
			code = sgam.Invalid // data PostgreSQL cannot hold
		case pe.Code[:2] == "08" || pe.Code[:2] == "57" || pe.Code[:2] == "53":
			code = sgam.Unavailable
		}
		if pe.ConstraintName != "" {
			msg += " (" + pe.ConstraintName + ")"
		}
		return &sgam.Error{Code: code, Message: msg, Err: err}
	}
	if pgconn.Timeout(err) || isConnErr(err) {
		return &sgam.Error{Code: sgam.Unavailable, Message: msg, Err: err}
	}
	return &sgam.Error{Code: sgam.Internal, Message: msg, Err: err}
}

// isConnErr reports a broken connection (the server went away mid-call):
// whether the operation took effect is unknown to the driver, so it is
// reported as Unavailable for the caller to retry, not retried here.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func unavailable(what string, err error) error {
	return &sgam.Error{Code: sgam.Unavailable, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// keyLocks returns the advisory lock ids of keys, sorted, so that every
// transaction takes its locks in one order.
func keyLocks(keys []sgam.Key) []int64 {
	out := make([]int64, 0, len(keys))
	for _, k := range keys {
		h := fnv.New64a()
		h.Write([]byte(k.Tenant))
		h.Write([]byte{0x1f})
		h.Write([]byte(k.Subject))
		h.Write([]byte{0x1f})
		h.Write([]byte(k.Attribute))
		out = append(out, int64(h.Sum64()))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

const lockSQL = `SELECT pg_advisory_xact_lock(h) FROM unnest($1::bigint[]) WITH ORDINALITY AS l(h, i) ORDER BY i`
