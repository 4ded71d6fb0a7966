package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
)

//go:embed migrations/*.sql
var migrations embed.FS

// applicationID marks a file as an sgam database ("sgam").
const applicationID = 0x7367616d

// Options configure a Store. The zero value is ready to use.
type Options struct {
	Clock  sgam.Clock  // transaction time; default the system clock
	Limits sgam.Limits // input bounds; zero fields take the defaults
	// CacheMiB is the page cache of the writer's connection; default 32.
	// Each read connection gets an eighth of it (at least 2 MiB): a read
	// touches a few pages of one key, while a write batch walks the
	// indexes, and every read connection keeps a cache of its own, so
	// large read caches mostly cost memory (up to 2 × GOMAXPROCS copies of
	// the hot pages, outside the Go heap).
	CacheMiB int
	// ReadConns bounds the read pool; default 2 × GOMAXPROCS, at least 4.
	ReadConns int
	// NoCache turns off the caches of current reads (currentCache) and
	// of the reads of subjects, attributes and schema heads (dataCache).
	NoCache bool
	// WALLimitMiB is the size the write-ahead log is cut back to when it
	// is started over (journal_size_limit); default 64. An idle store, and
	// one that closes, truncates it to nothing (see checkpointer).
	WALLimitMiB int
	// MustExist makes Open fail with NotFound instead of creating a new file.
	MustExist bool
	// Observer, when set, is told of every store operation.
	Observer sgam.Observer
	// Progress, when set, is told how a long step of opening goes (a
	// migration backfilling an index): what it is, and done of total.
	Progress func(what string, done, total int)
}

// Store is the embedded SQLite store: the engine (every sgam.Store
// method) over this package's driver. It is safe for concurrent use, and
// several processes may open one file at once.
type Store struct {
	*engine.Store
	d *db
}

// db is the driver: the connections and the SQL.
type db struct {
	path     string
	clock    sgam.Clock
	progress func(what string, done, total int) // of Options
	terms    termCountCache                     // search.go
	tenants  tenantNumbers                      // search.go

	wdb *sql.DB
	wmu sync.Mutex // serializes writers of this process; BEGIN IMMEDIATE serializes processes
	w   *sql.Conn
	wst writeStmts
	// wprep holds the writer's statements of fixed text, prepared on
	// first use; only a write transaction (under wmu) touches it.
	wprep map[string]*sql.Stmt
	bulk  map[bulkKey]*sql.Stmt

	rdb   *sql.DB
	rst   readStmts
	gets  *getPool
	reads sync.Map // query text -> *sql.Stmt on rdb: reads prepared once (see prepared)

	cache  *currentCache // nil when off
	data   *dataCache    // nil when off
	ckpt   *checkpointer
	closed atomic.Bool
}

var _ sgam.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and applies
// pending migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, sgam.Errorf(sgam.Invalid, "db", "is required: a file path")
	}
	if strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") {
		return nil, sgam.Errorf(sgam.Invalid, "db", "%q: a database path may not contain ? or # or start with file:", path)
	}
	if opts.MustExist {
		if _, err := os.Stat(path); err != nil {
			return nil, sgam.Errorf(sgam.NotFound, "db", "there is no database at %s", path)
		}
	}
	if opts.Clock == nil {
		opts.Clock = sgam.SystemClock{}
	}
	if opts.CacheMiB <= 0 {
		opts.CacheMiB = 32
	}
	if opts.WALLimitMiB <= 0 {
		opts.WALLimitMiB = defaultWALLimitMiB
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	s := &db{path: path, clock: opts.Clock, progress: opts.Progress, bulk: map[bulkKey]*sql.Stmt{}, wprep: map[string]*sql.Stmt{}}

	q := url.Values{}
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "1")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Add("_pragma", fmt.Sprintf("cache_size(%d)", -1024*opts.CacheMiB))
	q.Add("_pragma", "temp_store(MEMORY)")
	// The checkpointer (checkpoint.go) copies the WAL into the file in the
	// background; the writer checkpoints itself only if the WAL outgrows
	// it by far.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", 4*checkpointPages))
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", opts.WALLimitMiB<<20))
	var err error
	if s.wdb, err = sql.Open("sqlite", path+"?"+q.Encode()); err != nil {
		return nil, unavailable("open "+path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	s.wdb.SetConnMaxLifetime(0)
	if s.w, err = s.wdb.Conn(ctx); err != nil {
		s.wdb.Close()
		return nil, unavailable("open "+path, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.wst.prepare(ctx, s.w); err != nil {
		s.Close()
		return nil, err
	}
	if !opts.NoCache {
		wal := openWALIndex(path)
		s.cache, s.data = newCurrentCache(wal), newDataCache(wal)
	}
	cq := maps.Clone(q)
	cq.Set("_busy_timeout", "0")
	if s.ckpt, err = startCheckpointer(path + "?" + cq.Encode()); err != nil {
		s.Close()
		return nil, err
	}

	q.Set("_query_only", "1")
	q.Del("_pragma")
	q.Add("_pragma", fmt.Sprintf("cache_size(%d)", -1024*max(2, opts.CacheMiB/8)))
	q.Add("_pragma", "temp_store(MEMORY)")
	if s.rdb, err = sql.Open("sqlite", path+"?"+q.Encode()); err != nil {
		s.Close()
		return nil, unavailable("open "+path, err)
	}
	s.rdb.SetMaxOpenConns(opts.ReadConns)
	s.rdb.SetMaxIdleConns(opts.ReadConns)
	s.rdb.SetConnMaxIdleTime(0)
	if err := s.rst.prepare(ctx, s.rdb); err != nil {
		s.Close()
		return nil, err
	}
	s.gets = newGetPool(path+"?"+q.Encode(), opts.ReadConns)
	return &Store{Store: engine.New(s, engine.Options{Limits: opts.Limits, Observer: opts.Observer}), d: s}, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.d.path }

// Now returns the store clock's current instant.
func (s *Store) Now() time.Time { return s.d.clock.Now() }

// Clock implements engine.Driver.
func (s *db) Clock() sgam.Clock { return s.clock }

// Close truncates the WAL when no other process is in the way, and closes
// every connection; when it closes the file's last connection, SQLite
// checkpoints the WAL and removes it.
func (s *db) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	for _, st := range s.bulk {
		st.Close()
	}
	s.reads.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	for _, st := range s.wprep {
		st.Close()
	}
	s.wst.close()
	if s.gets != nil {
		s.gets.close()
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	// Last: the view of the -shm file is let go once SQLite may have
	// unlinked it (see walIndex).
	if s.cache != nil {
		s.cache.wal.close()
	}
	return errors.Join(errs...)
}

// migrationSteps are the parts of migrations written in Go, run after the
// migration's SQL in its transaction: backfills that tell their progress.
var migrationSteps = map[string]func(ctx context.Context, x execer, progress func(done, total int)) error{
	"0006_search.sql": backfillSearch,
}

// migrateOnlyTo, when set, stops migrations after that many: how a test
// makes the file of an older sgam.
var migrateOnlyTo int

// migrate applies the embedded migrations the file has not seen yet, in
// one IMMEDIATE transaction, so two processes opening a new file at once
// migrate it once.
func (s *db) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if migrateOnlyTo > 0 {
		names = names[:migrateOnlyTo]
	}
	if _, err := s.w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return unavailable("migrate "+s.path, err)
	}
	done := false
	defer func() {
		if !done {
			s.w.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var version, appID int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return unavailable("migrate "+s.path, err)
	}
	if err := s.w.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return unavailable("migrate "+s.path, err)
	}
	if appID != applicationID {
		var tables int
		if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return unavailable("migrate "+s.path, err)
		}
		if appID != 0 || tables > 0 {
			return sgam.Errorf(sgam.Invalid, "db", "%s is a SQLite database but not an sgam one", s.path)
		}
	}
	if version > len(names) {
		return sgam.Errorf(sgam.Unavailable, "db", "%s has schema version %d; this sgam knows up to %d: upgrade sgam", s.path, version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		if _, err := s.w.ExecContext(ctx, string(body)); err != nil {
			return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("migration %s: %v", names[i], err), Err: err}
		}
		if step := migrationSteps[path.Base(names[i])]; step != nil {
			progress := func(done, total int) {
				if s.progress != nil {
					s.progress("migration "+path.Base(names[i]), done, total)
				}
			}
			if err := step(ctx, s.w, progress); err != nil {
				return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("migration %s: %v", names[i], err), Err: err}
			}
		}
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", len(names), applicationID)); err != nil {
		return unavailable("migrate "+s.path, err)
	}
	if _, err := s.w.ExecContext(ctx, "COMMIT"); err != nil {
		return unavailable("migrate "+s.path, err)
	}
	done = true
	return nil
}

// Write implements engine.Driver: an IMMEDIATE transaction on the writer
// connection. Errors are mapped here, once.
func (s *db) Write(ctx context.Context, _ string, fn func(engine.Tx) error) error {
	return s.writeOnly(ctx, func(t *tx) error { return fn(t) })
}

// tx is an IMMEDIATE transaction on the writer connection.
type tx struct {
	s        *db
	ctx      context.Context
	finished bool

	instant    int64 // the transaction time, once read
	advanceTo  int64 // tx_clock to store at commit, when it moves forward
	clockKnown bool
	// carried: the transaction inserted fact rows above every earlier id,
	// recorded at instant, so the clock needs no write of its own.
	carried bool
	// keys are the keys written, for the current-read cache; deleting
	// (forget, expiry) drops the whole cache instead.
	keys     []sgam.Key
	deleting bool
	// jobs are the queue's job rows to delete once committed (jobs.go).
	jobs []jobsGone
}

var _ engine.Tx = (*tx)(nil)

// begin starts an IMMEDIATE write transaction on the writer connection.
// The caller must end it with commit or rollback (rollback after commit is
// a no-op, for defer).
func (s *db) begin(ctx context.Context) (*tx, error) {
	s.wmu.Lock()
	if _, err := s.w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		s.wmu.Unlock()
		return nil, fmt.Errorf("begin write: %w", err)
	}
	return &tx{s: s, ctx: ctx}, nil
}

// Instant implements engine.Tx: the store clock, or the latest transaction
// time already written if the clock is behind it (set back, or another
// process's clock runs ahead). Every row the transaction writes is
// recorded at this instant.
func (t *tx) Instant(atLeast int64) (int64, error) {
	if !t.clockKnown {
		var stored int64
		if err := t.s.wst.txClock.QueryRowContext(t.ctx).Scan(&stored); err != nil {
			return 0, fmt.Errorf("read the transaction clock: %w", err)
		}
		t.fix(stored, atLeast)
	}
	if atLeast > t.instant {
		return 0, sgam.Errorf(sgam.Unavailable, "", "a row to retract was recorded after this transaction's instant (clocks disagree); try again")
	}
	return t.instant, nil
}

// fix fixes the transaction's instant given the latest one stored.
func (t *tx) fix(stored, atLeast int64) {
	t.instant = max(sgam.Micros(t.s.clock.Now()), stored, atLeast)
	t.clockKnown = true
	if t.instant > stored {
		t.advanceTo = t.instant
	}
}

// observe moves the transaction clock up to at least t at commit.
func (t *tx) observe(at int64) { t.advanceTo = max(t.advanceTo, at) }

// nextIDs returns an allocator of at most n fact ids above every id ever
// used.
func (t *tx) nextIDs(n int) (func() int64, error) {
	var last int64
	if err := t.s.wst.lastID.QueryRowContext(t.ctx).Scan(&last); err != nil {
		return nil, fmt.Errorf("allocate fact ids: %w", err)
	}
	if last > sgam.MaxFactID-int64(n) {
		return nil, sgam.Errorf(sgam.Unavailable, "fact_id", "fact ids are exhausted (the largest is %d)", sgam.MaxFactID)
	}
	return func() int64 { last++; return last }, nil
}

// commit commits, and tells the current-read cache which keys changed.
func (t *tx) commit() error {
	c := t.s.cache
	var before uint32
	if c != nil {
		before = c.committing()
	}
	if t.advanceTo > 0 && !(t.carried && t.advanceTo == t.instant) {
		if _, err := t.s.wst.advanceClock.ExecContext(t.ctx, t.advanceTo); err != nil {
			return fmt.Errorf("advance the transaction clock: %w", err)
		}
	}
	if _, err := t.s.w.ExecContext(t.ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if c != nil {
		if t.deleting {
			c.dropAll()
		} else {
			c.committed(t.keys, before)
		}
	}
	if t.deleting {
		t.s.data.dropAll()
	}
	t.finished = true
	t.s.wmu.Unlock()
	return nil
}

func (t *tx) rollback() {
	if t.finished {
		return
	}
	t.finished = true
	// A failed statement may have rolled the transaction back already;
	// then ROLLBACK fails harmlessly.
	t.s.w.ExecContext(context.Background(), "ROLLBACK")
	t.s.wmu.Unlock()
}

// exec runs a statement in the transaction and returns the rows affected.
func (t *tx) exec(what, query string, args ...any) (int64, error) {
	st, err := t.stmt(query)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	res, err := st.ExecContext(t.ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// stmt returns the writer's statement of a fixed query text, prepared on
// first use.
func (t *tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.s.wprep[query]; ok {
		return st, nil
	}
	st, err := t.s.w.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	t.s.wprep[query] = st
	return st, nil
}

// queryRow runs a one-row query of fixed text in the transaction.
func (t *tx) queryRow(query string, args ...any) scanner {
	st, err := t.stmt(query)
	if err != nil {
		return failedRow{err}
	}
	return st.QueryRowContext(t.ctx, args...)
}

func unavailable(what string, err error) error {
	return &sgam.Error{Code: sgam.Unavailable, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// mapErr turns an error into an *sgam.Error, once, at the boundary of a
// read or a write: busy and locked databases are Unavailable (retrying may
// succeed), constraint failures a Conflict, anything else Internal. Call
// sites wrap errors with what they were doing.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sgam.Error
	var changed *engine.SchemaChanged
	if errors.As(err, &se) || errors.As(err, &changed) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sgam.Error{Code: sgam.Unavailable, Message: err.Error(), Err: err}
	}
	var le *msqlite.Error
	if errors.As(err, &le) {
		switch le.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &sgam.Error{Code: sgam.Unavailable, Message: "the database is busy: " + err.Error(), Err: err}
		case sqlite3.SQLITE_CONSTRAINT:
			return &sgam.Error{Code: sgam.Conflict, Message: err.Error(), Err: err}
		}
	}
	return &sgam.Error{Code: sgam.Internal, Message: err.Error(), Err: err}
}

func timeOrNil(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := sgam.FromMicros(us.Int64)
	return &t
}
