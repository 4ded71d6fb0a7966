// Package engine is what every store does the same way, above its driver:
// it checks every input, resolves each tenant's schema, runs the write
// pipeline of a batch (load, apply the temporal rules and the schema's
// policies, flush, read back), commits concurrent writes together, decides
// what forgetting and expiry delete, runs migrations and imports, and tells
// an observer of every operation. A driver (store/sqlite, store/postgres)
// holds the SQL and the transactions, and answers the engine's questions
// a batch at a time (Driver, Tx).
//
// A driver's Store embeds *Store, so that every sgam.Store method is
// written once, here.
package engine

import (
	"time"

	"github.com/sgam-dev/sgam"
)

// Options configure a Store.
type Options struct {
	Limits sgam.Limits
	// Observer, when set, is told of every operation.
	Observer sgam.Observer
}

// Store implements sgam.Store over a Driver.
type Store struct {
	d        Driver
	limits   sgam.Limits
	observer sgam.Observer
	schemas  *schemaCache
	writes   *groupCommit
}

var _ sgam.Store = (*Store)(nil)

// New returns the engine over d.
func New(d Driver, opts Options) *Store {
	s := &Store{d: d, limits: opts.Limits.WithDefaults(), observer: opts.Observer, schemas: newSchemaCache()}
	s.writes = &groupCommit{s: s}
	return s
}

// Close closes the driver.
func (s *Store) Close() error { return s.d.Close() }

// now is the store clock's now.
func (s *Store) now() time.Time { return s.d.Clock().Now() }

// track tells the observer of an operation that began at start when it
// ends: defer s.track("Assert", s.start(), &err).
func (s *Store) track(op string, start time.Time, err *error) {
	if s.observer != nil {
		s.observer.StoreOp(op, time.Since(start), *err)
	}
}

// start is the instant an operation starts, for track; without an
// observer nothing reads it, and the clock is not read.
func (s *Store) start() time.Time {
	if s.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// checkAt validates the instants of a read; zero instants stay zero (now,
// which the driver resolves).
func checkAt(at sgam.At) (sgam.At, error) {
	var err error
	if !at.AsOf.IsZero() {
		if at.AsOf, err = sgam.CheckTime("as_of", at.AsOf); err != nil {
			return at, err
		}
	}
	if !at.KnownAt.IsZero() {
		at.KnownAt, err = sgam.CheckTime("known_at", at.KnownAt)
	}
	return at, err
}

// scope is the row-level scope of a write of tenants: the one tenant, or
// all of them ("") for work that spans tenants.
func scope(tenants []string) string {
	if len(tenants) == 1 {
		return tenants[0]
	}
	return ""
}

// notFound is the error of a tenant's missing row.
func notFound(field, format string, args ...any) error {
	return sgam.Errorf(sgam.NotFound, field, format, args...)
}
