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

// defaultWALLimitMiB is the size the WAL file is cut back to whenever
// SQLite starts it over (journal_size_limit).
const defaultWALLimitMiB = 64

// checkpointer runs PASSIVE checkpoints on a connection of its own, so
// that copying the WAL into the file, and the fsync that ends it, happen
// beside the writer instead of inside one of its commits: SQLite's
// automatic checkpoint runs in the commit that crosses the threshold, and
// on a large store it held that commit (and every write queued behind it)
// for hundreds of milliseconds. A PASSIVE checkpoint never blocks the writer
// or readers; the writer starts the WAL over once all of it is copied.
//
// The WAL file keeps its size when it is started over, so a write burst
// would leave it as large as the burst made it (hundreds of MiB for a
// database of a few). Three things bound it: the writer's
// journal_size_limit cuts it back at each new start; when a run finds the
// WAL fully copied and no commit since the run before (the store is idle),
// it merges the full-text index (merge: by level, and once the store has
// settled, a small index into one segment) and, once nothing is left to
// merge, truncates the WAL to nothing; and so does closing the store. A
// store opened on an index left unmerged (by a process that closed right
// after its captures) is merged the same way, before any commit. The
// truncating checkpoint takes the write lock, so the checkpointer's
// connection has no busy timeout: if a writer or a reader is in the way it
// gives up at once and tries again at the next idle run.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	wg   sync.WaitGroup
	// mu is held for each checkpoint; Compact holds it to keep the
	// checkpointer out of the way of its own truncating checkpoint.
	mu sync.Mutex
	// frames is the WAL's size in frames at the last run, quiet the runs
	// since it last changed, and settled whether the index was merged as
	// far as it will be since (all under mu).
	frames  int
	quiet   int
	settled bool
	// wholeBlocks is the largest index merged whole (wholeMergeBlocks).
	wholeBlocks int
}

// startCheckpointer opens the checkpointer's connection with dsn, which
// must set no busy timeout.
func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, unavailable("open checkpointer", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, stop: make(chan struct{}), wholeBlocks: wholeMergeBlocks}
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
		c.step()
	}
}

// step runs one checkpoint; when the store is idle, it merges the
// full-text index's segments, and once they are merged truncates the WAL.
// An error (busy, or a store closing) is left to the next run, and the
// writer's own automatic checkpoint is the backstop.
func (c *checkpointer) step() {
	c.mu.Lock()
	defer c.mu.Unlock()
	busy, frames, done, err := c.checkpoint("PASSIVE")
	if err != nil || busy != 0 {
		return
	}
	if frames != c.frames || done != frames { // a commit since the run before
		c.frames, c.quiet, c.settled = frames, 0, false
		return
	}
	if c.settled {
		return
	}
	c.quiet++
	small, err := c.small()
	if err != nil {
		return
	}
	whole := small && c.quiet > settleRuns
	merged, err := c.merge(whole)
	if err != nil {
		return // a failed merge (busy) waits for the next idle run
	}
	// The merge's own commits are no burst of the store's: the runs after
	// it go on counting the quiet.
	if _, frames, _, err := c.checkpoint("PASSIVE"); err == nil {
		c.frames = frames
	}
	if !merged {
		return // the next idle run merges on
	}
	// Merged by level, a small index is merged whole once the store has
	// settled; the WAL is truncated meanwhile. A truncate that a reader
	// kept from finishing is tried again at the next idle run.
	if c.frames > 0 {
		busy, _, _, err := c.checkpoint("TRUNCATE")
		if err != nil || busy != 0 {
			return
		}
		c.frames = 0
	}
	c.settled = whole || !small
}

// Each idle run merges the full-text index for at most mergeBudget, in
// steps that write about mergePages pages each: a writer that arrives
// meanwhile waits for one step at most (about 20 ms at 100,000
// episodes), and a search on a merged index seeks into fewer segments
// (migration 0008).
//
// FTS5 merges by level: what it leaves is a few segments of different
// sizes, each of which every term of a search seeks into. Once the store
// has been idle for settleRuns runs (no commit by any process), an index
// of at most wholeMergeBlocks blocks is merged on into one segment, which
// costs a rewrite of the index (about 0.1 ms a block) after each burst of
// captures. Beyond the cost of each seek, SQLite 3.54 (modernc v1.62)
// re-prepares a statement whose bound integer moves into or out of 0 and
// 1 (a plan estimate of whereLoopOutputAdjust), and FTS5's lookup of a
// term's page binds the segment's id: with segment 1 beside others, a
// search re-prepared it at nearly every seek (15 times a recall of `sgam
// bench http`, a tenth of the server's CPU), and the idle merge leaves
// segment 1 beside others as often as not. On that benchmark's index
// (10,000 episodes, 240 blocks, 3 segments, one of them 1) the server
// answered 970 and 864 recalls/s, and 1,120 and 946 with the index in one
// segment (alternating runs). A larger index keeps its levels: rewriting
// it whole after each burst would cost more than its searches gain.
const (
	mergeBudget      = 100 * time.Millisecond
	mergePages       = 200
	settleRuns       = 8 // 2 s of checkpointEvery
	wholeMergeBlocks = 4096
)

// small reports whether the full-text index has at most c.wholeBlocks
// blocks (rows of search_fts_data, about 4 KB each).
func (c *checkpointer) small() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int
	err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM search_fts_data LIMIT ?)`, c.wholeBlocks+1).Scan(&n)
	return n <= c.wholeBlocks, err
}

// merge runs merge steps of the full-text index, by level, or whole
// (FTS5's merge with a negative page count: every segment into one),
// until none is left to do (merged) or the run's budget is spent. FTS5
// tells that a step found nothing to merge by changing fewer than two
// rows.
func (c *checkpointer) merge(whole bool) (merged bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	pages := mergePages
	if whole {
		pages = -mergePages
	}
	for start := time.Now(); time.Since(start) < mergeBudget; {
		var before, after int64
		if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
			return false, err
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO search_fts (search_fts, rank) VALUES ('merge', ?)`, pages); err != nil {
			return false, err
		}
		if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
			return false, err
		}
		if after-before < 2 {
			return true, nil
		}
	}
	return false, nil
}

// checkpoint runs PRAGMA wal_checkpoint(mode): it answers whether it was
// kept from finishing, the WAL's frames and the frames copied.
func (c *checkpointer) checkpoint(mode string) (busy, frames, done int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &done)
	return
}

// close stops the checkpointer and truncates the WAL if nothing is in the
// way (another process may still be using it). Another user's
// checkpointer may hold the checkpoint for a moment (the truncate does not
// wait: busy_timeout 0), so it tries a few times; a reader that keeps an
// old snapshot open keeps the WAL, as it must.
func (c *checkpointer) close() error {
	close(c.stop)
	c.wg.Wait()
	c.mu.Lock()
	for try := 0; try < 5; try++ {
		busy, _, _, err := c.checkpoint("TRUNCATE")
		if err == nil && busy == 0 {
			break
		}
		time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
	}
	c.mu.Unlock()
	return c.db.Close()
}
