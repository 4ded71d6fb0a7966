package queue

import (
	"context"

	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/store"
)

// Open opens the queue of the ledger dsn names, as store.Open does the
// ledger: PostgreSQL for a postgres:// URL, else SQLite beside the file.
func Open(ctx context.Context, dsn string, st Store, x *extract.Extractor, cfg Config) (*Queue, error) {
	if store.IsPostgres(dsn) {
		return OpenPostgres(ctx, dsn, st, x, cfg)
	}
	return OpenSQLite(ctx, dsn, st, x, cfg)
}
