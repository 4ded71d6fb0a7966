// Package store opens the store a data source name selects: a file path is
// the embedded SQLite store (package store/sqlite).
package store

import (
	"context"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// Options configure the store Open returns. The zero value is ready to use.
type Options struct {
	Clock  sgam.Clock
	Limits sgam.Limits
	// MustExist makes Open fail with NotFound rather than create a store.
	MustExist bool
}

// Open opens the store named by dsn: a file path (created if missing) for
// the embedded SQLite store.
func Open(ctx context.Context, dsn string, opts Options) (sgam.Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return nil, sgam.Errorf(sgam.Invalid, "db", "PostgreSQL is not supported by this build yet; use a file path")
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{Clock: opts.Clock, Limits: opts.Limits, MustExist: opts.MustExist})
}
