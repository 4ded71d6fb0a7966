package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

// Write implements engine.Driver: one transaction on one connection,
// retried from the start after errors that are safe to retry. BEGIN and
// the row-level security scope go out with the transaction's first
// statements, and COMMIT with its last when the engine says so, to spare
// round trips.
func (s *db) Write(ctx context.Context, tenant string, fn func(engine.Tx) error) error {
	var instant int64
	err := s.retry(ctx, "write", func() error {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		t := &tx{s: s, ctx: ctx, c: c, tenant: tenant}
		if err := fn(t); err != nil {
			t.abort()
			return err
		}
		if err := t.commit(); err != nil {
			t.abort()
			return err
		}
		if t.fixed {
			instant = t.instant
		}
		return nil
	})
	if err == nil {
		raise(&s.txHigh, instant)
	}
	return err
}

// tx is a write transaction on one pooled connection.
type tx struct {
	s      *db
	ctx    context.Context
	c      *pgxpool.Conn
	tenant string // the scope: one tenant, or "" for all

	begun     bool // BEGIN and the scope were sent
	committed bool // COMMIT was sent with the last statements
	// instant is the transaction time once fixed; floor and dbNow are
	// read with it.
	instant int64
	fixed   bool
	// raiseFloor: the transaction deletes (forget, expiry), and writes
	// after it must happen after it, whatever a process's clock says.
	raiseFloor bool
}

var _ engine.Tx = (*tx)(nil)

// begin queues BEGIN and the scope on bt unless they were sent; the
// caller skips their results with skipBegin.
func (t *tx) begin(bt *pgx.Batch) (steps int) {
	if t.begun {
		return 0
	}
	t.begun = true
	bt.Queue("BEGIN")
	bt.Queue(scopeSQL, t.tenant)
	return 2
}

func skipBegin(br pgx.BatchResults, steps int) error {
	for range steps {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// ensure sends BEGIN and the scope when nothing was sent yet.
func (t *tx) ensure() error {
	if t.begun {
		return nil
	}
	bt := &pgx.Batch{}
	t.begin(bt)
	return t.c.SendBatch(t.ctx, bt).Close()
}

func (t *tx) exec(what, query string, args ...any) (pgconn.CommandTag, error) {
	if err := t.ensure(); err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := t.c.Exec(t.ctx, query, args...)
	if err != nil {
		return tag, fmt.Errorf("%s: %w", what, err)
	}
	return tag, nil
}

func (t *tx) query(query string, args ...any) (pgx.Rows, error) {
	if err := t.ensure(); err != nil {
		return nil, err
	}
	return t.c.Query(t.ctx, query, args...)
}

func (t *tx) queryRow(query string, args ...any) pgx.Row {
	if err := t.ensure(); err != nil {
		return errRow{err}
	}
	return t.c.QueryRow(t.ctx, query, args...)
}

// send sends a batch in the transaction.
func (t *tx) send(bt *pgx.Batch) error {
	if err := t.ensure(); err != nil {
		return err
	}
	return t.c.SendBatch(t.ctx, bt).Close()
}

// errRow is a row whose statement could not be sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// clockSQL reads the database's clock and the floor every transaction
// time stays above (the latest an import or a forget brought in).
const clockSQL = `SELECT clock_timestamp(), (SELECT value FROM sgam_meta WHERE key = 'tx_floor')`

// fix fixes the instant from the database's clock (or the store's) and the
// floor, at least atLeast.
func (t *tx) fix(dbNow time.Time, floor, atLeast int64) {
	if t.s.clock != nil {
		dbNow = t.s.clock.Now()
	}
	t.instant, t.fixed = max(sgam.Micros(dbNow), t.s.txHigh.Load(), floor, atLeast), true
}

// Instant implements engine.Tx.
func (t *tx) Instant(atLeast int64) (int64, error) {
	if !t.fixed {
		var dbNow time.Time
		var floor int64
		if err := t.queryRow(clockSQL).Scan(&dbNow, &floor); err != nil {
			return 0, fmt.Errorf("read the transaction clock: %w", err)
		}
		t.fix(dbNow, floor, atLeast)
	}
	if atLeast > t.instant {
		return 0, sgam.Errorf(sgam.Unavailable, "", "a row to retract was recorded after this transaction's instant (clocks disagree); try again")
	}
	return t.instant, nil
}

func (t *tx) commit() error {
	if t.committed || !t.begun {
		return nil
	}
	bt := &pgx.Batch{}
	if t.raiseFloor && t.fixed {
		bt.Queue(`UPDATE sgam_meta SET value = greatest(value, $1) WHERE key = 'tx_floor'`, t.instant)
	}
	bt.Queue("COMMIT")
	return t.c.SendBatch(t.ctx, bt).Close()
}

// abort rolls back what was sent. Harmless when the transaction already
// ended; a broken connection is dropped from the pool on release.
func (t *tx) abort() {
	if !t.begun {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.c.Exec(ctx, "ROLLBACK")
	cancel()
}
