package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/temporal"
)

// Get is the read agents make most, so it bypasses database/sql: a small
// pool of driver connections, each with the statement prepared and its
// argument and result slices reused. This saves the pool lookups, context
// watchers and reflective Scan of database/sql, about a third of a Get.

// getQuery selects, among the rows of a key believed at K (?4), the one
// with the greatest valid_from <= V (?5): its window, value, provenance and
// the newest of its evidence links (for the current-read cache). Most rows
// have no corroborating evidence; the EXISTS probes spare them the cost of
// an ordered aggregate.
const getQuery = `SELECT f.fact_id, CAST(f.value AS BLOB), f.valid_from, f.valid_to, f.recorded_at, f.retracted_at,
		f.supersedes, f.schema_version, f.source,
		CASE WHEN EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id) THEN
		  (SELECT group_concat(e.episode_id, char(31) ORDER BY e.recorded_at, e.episode_id)
		     FROM evidence e WHERE e.fact_id = f.fact_id AND e.recorded_at <= ?4) END,
		CASE WHEN EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id) THEN
		  (SELECT max(e.recorded_at) FROM evidence e WHERE e.fact_id = f.fact_id) END
	FROM facts f
	WHERE tenant = ?1 AND subject = ?2 AND attribute = ?3 AND member = ?6 AND valid_from <= ?5
	  AND recorded_at <= ?4 AND (retracted_at IS NULL OR retracted_at > ?4)
	ORDER BY valid_from DESC LIMIT 1`

type getConn struct {
	conn driver.Conn
	stmt driver.StmtQueryContext
	args [6]driver.NamedValue
	dest [11]driver.Value
}

type getPool struct {
	dsn  string
	free chan *getConn
	slot chan struct{} // one token per connection that may be open
}

func newGetPool(dsn string, size int) *getPool {
	p := &getPool{dsn: dsn, free: make(chan *getConn, size), slot: make(chan struct{}, size)}
	for range size {
		p.slot <- struct{}{}
	}
	return p
}

func (p *getPool) acquire(ctx context.Context) (*getConn, error) {
	select {
	case c := <-p.free:
		return c, nil
	default:
	}
	select {
	case c := <-p.free:
		return c, nil
	case <-p.slot:
		c, err := p.open()
		if err != nil {
			p.slot <- struct{}{}
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *getPool) open() (*getConn, error) {
	conn, err := (&msqlite.Driver{}).Open(p.dsn)
	if err != nil {
		return nil, err
	}
	st, err := conn.(driver.ConnPrepareContext).PrepareContext(context.Background(), getQuery)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := &getConn{conn: conn, stmt: st.(driver.StmtQueryContext)}
	for i := range c.args {
		c.args[i].Ordinal = i + 1
	}
	return c, nil
}

// release returns c to the pool, or closes it after an error that may
// have left it unusable.
func (p *getPool) release(c *getConn, err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		c.close()
		p.slot <- struct{}{}
		return
	}
	p.free <- c
}

func (p *getPool) close() {
	for {
		select {
		case c := <-p.free:
			c.close()
		default:
			return
		}
	}
}

// close finalizes the statement before closing the connection (see
// writeStmts.close).
func (c *getConn) close() {
	c.stmt.(driver.Stmt).Close()
	c.conn.Close()
}

// gotRow is what the get query found.
type gotRow struct {
	fact     sgam.Fact
	validTo  int64 // temporal.Open when open
	lastLink int64 // newest evidence link's recorded_at, 0 when none
}

// getRow runs the get query; ok is false when no row matched.
func (p *getPool) getRow(ctx context.Context, k sgam.Key, v, kt int64) (r gotRow, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return r, false, err
	}
	c, err := p.acquire(ctx)
	if err != nil {
		return r, false, err
	}
	c.args[0].Value, c.args[1].Value, c.args[2].Value, c.args[3].Value, c.args[4].Value, c.args[5].Value = k.Tenant, k.Subject, k.Attribute, kt, v, k.Member
	// The query is short: it is not worth a context watcher goroutine.
	rows, err := c.stmt.QueryContext(context.Background(), c.args[:])
	if err != nil {
		p.release(c, err)
		return r, false, err
	}
	err = rows.Next(c.dest[:])
	if err == nil {
		r, err = decodeGot(k, c.dest[:])
		ok = err == nil
	}
	if cerr := rows.Close(); err == nil || errors.Is(err, io.EOF) {
		if cerr != nil {
			err = cerr
		}
	}
	if errors.Is(err, io.EOF) {
		p.release(c, nil)
		return r, false, nil
	}
	p.release(c, err)
	return r, ok, err
}

func decodeGot(k sgam.Key, d []driver.Value) (gotRow, error) {
	var r gotRow
	f := &r.fact
	f.Tenant, f.Subject, f.Attribute = k.Tenant, k.Subject, k.Attribute
	if k.Member != "" {
		f.Member = json.RawMessage(k.Member)
	}
	var ok bool
	if f.ID, ok = d[0].(int64); !ok {
		return r, fmt.Errorf("fact_id is %T", d[0])
	}
	switch v := d[1].(type) {
	case nil:
		f.Tombstone = true
	case []byte:
		f.Value = v
	default:
		return r, fmt.Errorf("value is %T", d[1])
	}
	f.ValidFrom = sgam.FromMicros(asInt(d[2]))
	r.validTo = temporal.Open
	if d[3] != nil {
		r.validTo = asInt(d[3])
		f.ValidTo = timePtr(r.validTo)
	}
	f.RecordedAt = sgam.FromMicros(asInt(d[4]))
	if d[5] != nil {
		f.RetractedAt = timePtr(asInt(d[5]))
	}
	if d[6] != nil {
		id := asInt(d[6])
		f.Supersedes = &id
	}
	f.SchemaVersion = int(asInt(d[7]))
	f.Sources = make([]string, 0, 1)
	if s, ok := d[8].(string); ok {
		f.Sources = append(f.Sources, s)
	}
	if s, ok := d[9].(string); ok && s != "" {
		f.Sources = append(f.Sources, strings.Split(s, "\x1f")...)
	}
	if d[10] != nil {
		r.lastLink = asInt(d[10])
	}
	return r, nil
}

func asInt(v driver.Value) int64 {
	i, _ := v.(int64)
	return i
}

func timePtr(us int64) *time.Time {
	t := sgam.FromMicros(us)
	return &t
}
