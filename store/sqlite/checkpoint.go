package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// checkpointEvery is how often the checkpointer copies the WAL into the
// file.
const checkpointEvery = 250 * time.Millisecond

// checkpointPages is the WAL size, in pages, of the checkpointer's work
// between two runs under a heavy write load; the writer's automatic
// checkpoint, the backstop, waits for four times that.
const checkpointPages = 20_000

// checkpointer runs PASSIVE checkpoints on a connection of its own, so
// that copying the WAL into the file, and the fsync that ends it, happen
// beside the writer instead of inside one of its commits: SQLite's
// automatic checkpoint runs in the commit that crosses the threshold, and
// on a large store it held that commit (and every write queued behind it)
// for hundreds of milliseconds. A PASSIVE checkpoint never blocks the writer
// or readers; the writer starts the WAL over once all of it is copied.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	wg   sync.WaitGroup
	// mu is held for each checkpoint; Compact holds it to keep the
	// checkpointer out of the way of its own truncating checkpoint.
	mu sync.Mutex
}

func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, unavailable("open checkpointer", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, stop: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer c.wg.Done()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		// It answers (busy, frames in the WAL, frames copied). An error
		// (busy, or a store closing) is left to the next run, and the
		// writer's own automatic checkpoint is the backstop.
		var busy, frames, done int
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c.mu.Lock()
		c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
		c.mu.Unlock()
		cancel()
	}
}

func (c *checkpointer) close() error {
	close(c.stop)
	c.wg.Wait()
	return c.db.Close()
}
