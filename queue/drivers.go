package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// SQLitePath is the file of the queue of the SQLite ledger at ledger
// (the ledger's store deletes a forgotten episode's job rows in it, and
// compacts it: sqlite.QueuePath).
func SQLitePath(ledger string) string { return sqlite.QueuePath(ledger) }

// OpenSQLite opens (creating and migrating if needed) the queue of the
// SQLite ledger at ledgerPath: River's tables in SQLitePath(ledgerPath),
// so that River's polling never holds the ledger's write lock. Several
// processes may open it at once.
func OpenSQLite(ctx context.Context, ledgerPath string, store Store, x *extract.Extractor, cfg Config) (*Queue, error) {
	cfg, err := cfg.withDefaults(x.Model())
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	// Every transaction takes the write lock when it begins, so that two
	// processes wait for each other (busy_timeout) instead of failing
	// when a reader turns writer.
	q.Set("_txlock", "immediate")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	path := SQLitePath(ledgerPath)
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open the queue %s: %w", path, err)
	}
	// One connection: River runs several things at once, and SQLite has
	// one writer (River's advice for its SQLite driver).
	db.SetMaxOpenConns(1)
	driver := riversqlite.New(db)
	if err := migrateSQLite(ctx, db, driver, cfg); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate the queue %s: %w", path, err)
	}
	w := &worker{}
	rc, err := river.NewClient(driver, riverConfig(cfg, w))
	if err != nil {
		db.Close()
		return nil, err
	}
	qu := &Queue{store: store, x: x, cfg: cfg, river: rc, close: db.Close}
	w.q = qu
	return qu, nil
}

// OpenPostgres opens the queue of the PostgreSQL ledger at dsn: River's
// tables in the same database, migrated if needed, shared by every
// process on it.
func OpenPostgres(ctx context.Context, dsn string, store Store, x *extract.Extractor, cfg Config) (*Queue, error) {
	cfg, err := cfg.withDefaults(x.Model())
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open the queue: %w", err)
	}
	driver := riverpgxv5.New(pool)
	if err := migratePostgres(ctx, pool, driver, cfg); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate the queue: %w", err)
	}
	w := &worker{}
	rc, err := river.NewClient(driver, riverConfig(cfg, w))
	if err != nil {
		pool.Close()
		return nil, err
	}
	qu := &Queue{store: store, x: x, cfg: cfg, river: rc, close: func() error { pool.Close(); return nil }}
	w.q = qu
	return qu, nil
}

// migrateSQLite runs River's migrations in one transaction, which takes
// the write lock first: processes starting at once migrate in turn.
func migrateSQLite(ctx context.Context, db *sql.DB, driver *riversqlite.Driver, cfg Config) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	return tx.Commit()
}

// migratePostgres runs River's migrations (each in a transaction of its
// own: a migration adds an enum value that a later one uses) under a
// session advisory lock: processes starting at once migrate in turn.
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver, cfg Config) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock(7364, 1)`); err != nil {
		return err
	}
	defer c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7364, 1)`)
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
