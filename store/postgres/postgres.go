package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
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
}

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	clock   sgam.Clock // nil: the database's clock
	limits  sgam.Limits
	retries int

	retried atomic.Int64
	// txHigh is the latest transaction instant this process wrote: with a
	// Clock set back, later writes still happen after it.
	txHigh atomic.Int64
	// gov is the schema writes were last validated under; every write
	// checks its version inside the transaction (see load).
	gov atomic.Pointer[ledger.Gov]
	// govChecked is when readGov last looked for a new schema version.
	govChecked atomic.Int64
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
	s := &Store{pool: pool, clock: opts.Clock, limits: opts.Limits.WithDefaults(), retries: opts.Retries}
	if err := s.checkRole(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if opts.MustExist {
		err = s.checkSchema(ctx)
	} else {
		err = s.migrate(ctx)
	}
	if err == nil {
		_, err = s.loadGov(ctx, s.pool, -1)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// checkRole refuses a role that row-level security does not apply to: a
// superuser or a BYPASSRLS role would see every tenant's rows through a
// query that forgot its tenant filter, silently.
func (s *Store) checkRole(ctx context.Context) error {
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
func (s *Store) checkSchema(ctx context.Context) error {
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

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Retries returns how many times an operation was retried after a
// serialization failure, a deadlock or a lost connection.
func (s *Store) Retries() int64 { return s.retried.Load() }

// Pool returns the connection pool, for tests and operations tooling.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Now returns the store's notion of now: the Clock, or the database's.
// wallNow is the store clock, or this machine's: for what needs no
// database round trip (resolving a dual-read window).
func (s *Store) wallNow() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

func (s *Store) Now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	var t time.Time
	if err := s.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Now()
	}
	return t
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

func (s *Store) migrate(ctx context.Context) error {
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

// inTx runs fn in a transaction, retrying it from the start after errors
// that are safe to retry.
func (s *Store) inTx(ctx context.Context, opts pgx.TxOptions, what string, fn func(pgx.Tx) error) error {
	return s.retry(ctx, what, func() error { return s.tryTx(ctx, opts, fn) })
}

// inConn runs fn on one connection with the same retries as inTx. fn sends
// BEGIN and COMMIT itself, inside its batches, to spare round trips; if it
// fails, the transaction is rolled back.
func (s *Store) inConn(ctx context.Context, what string, fn func(*pgxpool.Conn) error) error {
	return s.retry(ctx, what, func() error { return s.tryConn(ctx, fn) })
}

// retry runs attempt until it succeeds, fails with an error that is not
// safe to retry, or has been retried s.retries times, backing off 1, 2,
// 4 … ms between attempts.
func (s *Store) retry(ctx context.Context, what string, attempt func() error) error {
	for n := 0; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if !retryable(err) || n >= s.retries || ctx.Err() != nil {
			return mapErr(what, err)
		}
		s.retried.Add(1)
		select {
		case <-time.After(time.Duration(1<<n) * time.Millisecond):
		case <-ctx.Done():
			return mapErr(what, ctx.Err())
		}
	}
}

func (s *Store) tryConn(ctx context.Context, fn func(*pgxpool.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if err := fn(c); err != nil {
		// Harmless when the transaction already ended; a broken connection
		// is dropped from the pool on release.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Exec(rctx, "ROLLBACK")
		cancel()
		return err
	}
	return nil
}

func (s *Store) tryTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(context.Background())
		return err
	}
	return tx.Commit(ctx)
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
	if errors.Is(err, errSchemaChanged) {
		return true
	}
	return pgconn.SafeToRetry(err)
}

// mapErr turns a driver error into an *sgam.Error.
func mapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var se *sgam.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sgam.Error{Code: sgam.Unavailable, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code := sgam.Internal
		switch {
		case pe.Code == "40001" || pe.Code == "40P01":
			return &sgam.Error{Code: sgam.Unavailable, Message: fmt.Sprintf("%s: retries exhausted: %s", what, pe.Message), Err: err}
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
		msg := fmt.Sprintf("%s: %s", what, pe.Message)
		if pe.ConstraintName != "" {
			msg += " (" + pe.ConstraintName + ")"
		}
		return &sgam.Error{Code: code, Message: msg, Err: err}
	}
	if pgconn.Timeout(err) || isConnErr(err) {
		return &sgam.Error{Code: sgam.Unavailable, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// isConnErr reports a broken connection (the server went away mid-call):
// whether the operation took effect is unknown to the driver, so it is
// reported as Unavailable for the caller to retry, not retried here.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"conn closed", "unexpected EOF", "connection reset", "broken pipe", "closed pool"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
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
