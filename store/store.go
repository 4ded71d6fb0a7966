// Package store opens the store a data source name selects: a
// postgres:// (or postgresql://) URL is the PostgreSQL store (package
// store/postgres), anything else a file path for the embedded SQLite store
// (package store/sqlite).
package store

import (
	"context"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Options configure the store Open returns. The zero value is ready to use.
type Options struct {
	Clock  sgam.Clock
	Limits sgam.Limits
	// MustExist makes Open fail with NotFound rather than create a store.
	MustExist bool
	// Observer, when set, is told of every store operation.
	Observer sgam.Observer
	// Progress, when set, is told how a long step of opening goes (an
	// upgrade backfilling an index): what, and done of total. SQLite only:
	// PostgreSQL's upgrades run as single statements.
	Progress func(what string, done, total int)
}

// Store is a store Open returns: every role, and the optional vector
// capability, which both stores have.
type Store interface {
	sgam.Store
	sgam.VectorSearch
	sgam.Embeddings
}

// Open opens the store named by dsn: a postgres:// URL, or a file path
// (created if missing, unless MustExist) for the embedded SQLite store.
func Open(ctx context.Context, dsn string, opts Options) (Store, error) {
	if IsPostgres(dsn) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: opts.Clock, Limits: opts.Limits, MustExist: opts.MustExist, Observer: opts.Observer})
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{Clock: opts.Clock, Limits: opts.Limits, MustExist: opts.MustExist, Observer: opts.Observer, Progress: opts.Progress})
}
