package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// factColumns is the select list of a fact row f: its source, then its
// corroborating links made at or before the transaction instant bound to
// param, oldest first. Episode ids never contain the unit separator.
func factColumns(param string) string {
	return `f.fact_id, f.tenant, f.subject, f.attribute, f.member, f.value, f.valid_from, f.valid_to,
		f.recorded_at, f.retracted_at, f.supersedes, f.schema_version, f.source,
		CASE WHEN EXISTS (SELECT 1 FROM evidence e WHERE e.fact_id = f.fact_id) THEN
		  (SELECT group_concat(e.episode_id, char(31) ORDER BY e.recorded_at, e.episode_id)
		     FROM evidence e WHERE e.fact_id = f.fact_id AND e.recorded_at <= ` + param + `) END`
}

type scanner interface{ Scan(dest ...any) error }

func scanFact(sc scanner) (sgam.Fact, error) { return newFactScan().scan(sc) }

// factScan scans fact rows into one set of destinations, kept for every
// row of a read (as episodeScan): Scan takes them as pointers, which
// escape, so that fresh ones for each row cost a dozen allocations a row.
type factScan struct {
	f                                sgam.Fact
	value                            []byte
	member                           string
	validFrom, recordedAt            int64
	validTo, retractedAt, supersedes sql.NullInt64
	source, corroborations           sql.NullString
	dest                             []any
}

func newFactScan() *factScan {
	s := &factScan{}
	s.dest = []any{&s.f.ID, &s.f.Tenant, &s.f.Subject, &s.f.Attribute, &s.member, &s.value, &s.validFrom, &s.validTo,
		&s.recordedAt, &s.retractedAt, &s.supersedes, &s.f.SchemaVersion, &s.source, &s.corroborations}
	return s
}

// scan scans one row: every destination is written by each (NULL as nil
// or not valid), and what the fact keeps of them is its own copy.
func (s *factScan) scan(sc scanner) (sgam.Fact, error) {
	if err := sc.Scan(s.dest...); err != nil {
		return sgam.Fact{}, err
	}
	f := s.f
	f.Value = s.value
	if s.member != "" {
		f.Member = json.RawMessage(s.member)
	}
	f.Tombstone = s.value == nil
	f.ValidFrom = sgam.FromMicros(s.validFrom)
	f.ValidTo = timeOrNil(s.validTo)
	f.RecordedAt = sgam.FromMicros(s.recordedAt)
	f.RetractedAt = timeOrNil(s.retractedAt)
	if s.supersedes.Valid {
		id := s.supersedes.Int64
		f.Supersedes = &id
	}
	f.Sources = []string{}
	if s.source.Valid {
		f.Sources = append(f.Sources, s.source.String)
	}
	if s.corroborations.Valid && s.corroborations.String != "" {
		f.Sources = append(f.Sources, strings.Split(s.corroborations.String, "\x1f")...)
	}
	return f, nil
}

// readStmts are the read path's statements, prepared on the read pool.
type readStmts struct {
	state, members, history, trace, episode *sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	p := preparer{ctx: ctx, on: db}
	prep := p.prep
	// A subject's state, key by key: k walks its keys (attribute, member)
	// by index seeks (the next member of the attribute, else the next
	// attribute), and each key's row at the instants is the newest believed
	// one starting by ?3, if it still holds then. Reading every row of the
	// subject instead costs its whole history.
	r.state = prep(`WITH RECURSIVE k(id, attribute, member) AS (
			SELECT * FROM (SELECT fact_id, attribute, member FROM facts WHERE tenant = ?1 AND subject = ?2 ORDER BY attribute, member LIMIT 1)
			UNION ALL
			SELECT n.fact_id, n.attribute, n.member FROM k JOIN facts n ON n.fact_id = coalesce(
			    (SELECT fact_id FROM facts WHERE tenant = ?1 AND subject = ?2 AND attribute = k.attribute AND member > k.member ORDER BY member LIMIT 1),
			    (SELECT fact_id FROM facts WHERE tenant = ?1 AND subject = ?2 AND attribute > k.attribute ORDER BY attribute, member LIMIT 1)))
		SELECT ` + factColumns("?4") + ` FROM k
		JOIN facts f ON f.fact_id = (SELECT g.fact_id FROM facts g WHERE g.tenant = ?1 AND g.subject = ?2 AND g.attribute = k.attribute
		    AND g.member = k.member AND g.valid_from <= ?3 AND g.recorded_at <= ?4 AND (g.retracted_at IS NULL OR g.retracted_at > ?4)
		    ORDER BY g.valid_from DESC LIMIT 1)
		WHERE (f.valid_to IS NULL OR f.valid_to > ?3) AND f.value IS NOT NULL
		ORDER BY f.attribute, f.member`)
	r.members = prep(`SELECT ` + factColumns("?5") + ` FROM facts f
		WHERE tenant = ?1 AND subject = ?2 AND attribute = ?3 AND valid_from <= ?4 AND (valid_to IS NULL OR valid_to > ?4)
		  AND recorded_at <= ?5 AND (retracted_at IS NULL OR retracted_at > ?5) AND value IS NOT NULL
		ORDER BY member`)
	// A key's rows; with no member, the rows of every member of the attribute.
	r.history = prep(`SELECT ` + factColumns("?4") + ` FROM facts f
		WHERE tenant = ?1 AND subject = ?2 AND attribute = ?3 AND (?5 = '' OR member = ?5) ORDER BY fact_id`)
	// The supersedes chain, newest first, bounded against a corrupt cycle.
	r.trace = prep(`WITH RECURSIVE chain (id, depth) AS (
			SELECT ?1, 0
			UNION ALL
			SELECT f.supersedes, c.depth + 1 FROM facts f JOIN chain c ON f.fact_id = c.id
			WHERE f.supersedes IS NOT NULL AND f.tenant = ?2 AND c.depth < 10000)
		SELECT ` + factColumns("?3") + ` FROM chain c JOIN facts f ON f.fact_id = c.id
		WHERE f.tenant = ?2 ORDER BY c.depth`)
	r.episode = prep(`SELECT ` + episodeColumns + ` FROM episodes WHERE tenant = ?1 AND episode_id = ?2`)
	if p.err != nil {
		return mapErr(fmt.Errorf("prepare: %w", p.err))
	}
	return nil
}

// prepared returns the read pool's statement of query, prepared on first
// use: a read's queries are few and fixed, and preparing one costs more
// than running it.
func (s *db) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.reads.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.reads.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// A read's statement runs without a watcher of its context, unless the
// read is marked long: for a context that can end, database/sql and the
// driver each start a goroutine per statement to interrupt it then, about
// 3 µs a statement (most of a one-row read), and a recall runs a dozen
// (BenchmarkServeRecall/recall: 1.57-1.65 ms with them, 1.39-1.45
// without). The context is checked before the statement and before each
// of its rows (each, collectFacts), so a caller whose context ends is
// told at the next; the statement under way, bounded by a key or a
// LIMIT, finishes. A long read (long: counts over all of a tenant's rows,
// a scan of its vectors) stays watched, so that the end of its context
// interrupts it.

type longRead struct{}

// long marks ctx for reads whose one statement may run long.
func long(ctx context.Context) context.Context { return context.WithValue(ctx, longRead{}, true) }

// statementContext is the context a read's statement runs with.
func statementContext(ctx context.Context) (context.Context, error) {
	if ctx.Value(longRead{}) != nil {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// query runs a read through its prepared statement.
func (s *db) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	if ctx, err = statementContext(ctx); err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a one-row read through its prepared statement.
func (s *db) queryRow(ctx context.Context, query string, args ...any) scanner {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return failedRow{err}
	}
	if ctx, err = statementContext(ctx); err != nil {
		return failedRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// failedRow is a row whose query could not be prepared or run.
type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// preparer prepares statements one after the other and keeps the first
// error, so a list of statements reads as a list. made lists them, for
// closing.
type preparer struct {
	ctx context.Context
	on  interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	}
	err  error
	made []*sql.Stmt
}

func (p *preparer) prep(query string) *sql.Stmt {
	if p.err != nil {
		return nil
	}
	st, err := p.on.PrepareContext(p.ctx, query)
	p.err = err
	if err == nil {
		p.made = append(p.made, st)
	}
	return st
}

// resolve returns the two instants of a read, zero ones being now.
func (s *db) resolve(at sgam.At) (int64, int64) {
	now := s.clock.Now()
	if at.AsOf.IsZero() {
		at.AsOf = now
	}
	if at.KnownAt.IsZero() {
		at.KnownAt = now
	}
	return sgam.Micros(at.AsOf), sgam.Micros(at.KnownAt)
}

// Get implements engine.Reader. Current reads (no AsOf, no KnownAt) are
// answered from the current-read cache when it has the key.
func (s *db) Get(ctx context.Context, key sgam.Key, at sgam.At) (*sgam.Fact, error) {
	v, k := s.resolve(at)
	current := s.cache != nil && at.AsOf.IsZero() && at.KnownAt.IsZero()
	var gen uint64
	if current {
		if f, hit := s.cache.lookup(key, v); hit {
			return f, nil
		}
		gen = s.cache.generation()
	}
	got, found, err := s.gets.getRow(ctx, key, v, k)
	if err != nil {
		return nil, mapRead("get "+key.String(), err)
	}
	if !found || got.validTo <= v {
		return nil, nil // no row, or a gap: nothing holds at v
	}
	f, validTo, lastLink := got.fact, got.validTo, got.lastLink
	if current {
		// The answer holds until its row is retracted or gains evidence at a
		// transaction time still in the future of this read.
		e := cachedRow{from: sgam.Micros(f.ValidFrom), validTo: validTo, knownAt: k, expireAt: temporal.Open}
		if f.RetractedAt != nil {
			e.expireAt = sgam.Micros(*f.RetractedAt)
		}
		if lastLink > k {
			e.expireAt = min(e.expireAt, lastLink)
		}
		if !f.Tombstone {
			e.fact = &f
		}
		s.cache.store(key, gen, e)
	}
	if f.Tombstone {
		return nil, nil
	}
	return &f, nil
}

// Subjects implements engine.Reader.
func (s *db) Subjects(ctx context.Context, tenant string, ids []string) ([]string, error) {
	gen := s.data.begin()
	known := make(map[string]bool, len(ids))
	var missing []string
	for _, id := range ids {
		if v, ok := s.data.lookup(gen, dataKey{subjectKnown, tenant, id}); ok {
			known[id] = v.(bool)
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		list, _ := json.Marshal(missing)
		// A subject with any believed row has a believed row open in
		// valid time (the last of some key's timeline): the open-row
		// index answers.
		found, err := s.strings(ctx, "find subjects", `SELECT e.value FROM json_each(?2) e WHERE EXISTS (SELECT 1 FROM facts INDEXED BY facts_open
			WHERE tenant = ?1 AND subject = e.value AND retracted_at IS NULL AND valid_to IS NULL)`, tenant, string(list))
		if err != nil {
			return nil, err
		}
		for _, id := range found {
			known[id] = true
		}
		for _, id := range missing {
			s.data.store(gen, dataKey{subjectKnown, tenant, id}, known[id])
		}
	}
	var out []string
	for _, id := range ids {
		if known[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// SubjectsNamed implements engine.Reader.
func (s *db) SubjectsNamed(ctx context.Context, tenant string, members []string, at sgam.At) ([][2]string, error) {
	v, k := s.resolve(at)
	list, _ := json.Marshal(members)
	var out [][2]string
	err := s.each(ctx, "find subjects by name", `SELECT DISTINCT f.member, f.subject FROM json_each(?2) e CROSS JOIN facts f INDEXED BY facts_alias_name
		WHERE f.tenant = ?1 AND f.alias_name IS NOT NULL AND f.alias_name = e.value AND f.value IS NOT NULL
		  AND f.recorded_at <= ?4 AND (f.retracted_at IS NULL OR f.retracted_at > ?4)
		  AND (f.valid_to IS NULL OR (f.valid_from <= ?3 AND f.valid_to > ?3))`, []any{tenant, string(list), v, k}, func(sc scanner) error {
		var p [2]string
		err := sc.Scan(&p[0], &p[1])
		out = append(out, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SubjectsFrom implements engine.Reader.
func (s *db) SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt int64) ([]string, error) {
	list, _ := json.Marshal(episodes)
	// Each episode by the source index (CROSS JOIN keeps json_each the
	// outer loop): the planner would rather walk every row of the tenant.
	out, err := s.strings(ctx, "find subjects", `SELECT DISTINCT f.subject FROM json_each(?2) e CROSS JOIN facts f INDEXED BY facts_source
		WHERE f.tenant = ?1 AND f.source = e.value AND f.recorded_at <= ?3 AND (f.retracted_at IS NULL OR f.retracted_at > ?3)`, tenant, string(list), knownAt)
	slices.Sort(out)
	return out, err
}

// FactsFrom implements engine.Reader.
func (s *db) FactsFrom(ctx context.Context, tenant string, episodes, subjects []string, knownAt int64, limit int) ([]sgam.Fact, error) {
	eps, _ := json.Marshal(episodes)
	subs, _ := json.Marshal(subjects)
	// The sourced rows by the source and evidence indexes (json_each the
	// outer loop, as SubjectsFrom), each closing row by the key index.
	rows, err := s.query(ctx, `WITH src(id) AS (
			SELECT f.fact_id FROM json_each(?2) e CROSS JOIN facts f INDEXED BY facts_source
			 WHERE f.tenant = ?1 AND f.source = e.value AND f.recorded_at <= ?4
			UNION
			SELECT v.fact_id FROM json_each(?2) e CROSS JOIN evidence v INDEXED BY evidence_episode
			 WHERE v.tenant = ?1 AND v.episode_id = e.value AND v.recorded_at <= ?4),
		mine(id) AS (
			SELECT f.fact_id FROM src CROSS JOIN facts f WHERE f.fact_id = src.id AND f.subject IN (SELECT value FROM json_each(?3))),
		closing(id) AS (
			SELECT n.fact_id FROM mine CROSS JOIN facts r CROSS JOIN facts n INDEXED BY facts_key
			 WHERE r.fact_id = mine.id AND r.valid_to IS NOT NULL
			   AND n.tenant = ?1 AND n.subject = r.subject AND n.attribute = r.attribute AND n.member = r.member AND n.valid_from = r.valid_to
			   AND n.recorded_at <= ?4 AND (n.retracted_at IS NULL OR n.retracted_at > ?4))
		SELECT `+factColumns("?4")+` FROM facts f WHERE f.fact_id IN (SELECT id FROM mine UNION SELECT id FROM closing)
		ORDER BY f.fact_id LIMIT ?5`, tenant, string(eps), string(subs), knownAt, limit)
	out, err := collectFacts(ctx, rows, err)
	return out, mapRead("facts from episodes", err)
}

// State implements engine.Reader.
func (s *db) State(ctx context.Context, tenant, subject string, at sgam.At) ([]sgam.Fact, error) {
	v, k := s.resolve(at)
	sctx, err := statementContext(ctx)
	if err != nil {
		return nil, mapRead("state of "+subject, err)
	}
	rows, err := s.rst.state.QueryContext(sctx, tenant, subject, v, k)
	out, err := collectFacts(ctx, rows, err)
	return out, mapRead("state of "+subject, err)
}

// Members implements engine.Reader.
func (s *db) Members(ctx context.Context, key sgam.Key, at sgam.At) ([]sgam.Fact, error) {
	v, k := s.resolve(at)
	rows, err := s.rst.members.QueryContext(ctx, key.Tenant, key.Subject, key.Attribute, v, k)
	out, err := collectFacts(ctx, rows, err)
	return out, mapRead("members of "+key.String(), err)
}

// History implements engine.Reader.
func (s *db) History(ctx context.Context, key sgam.Key) ([]sgam.Fact, error) {
	rows, err := s.rst.history.QueryContext(ctx, key.Tenant, key.Subject, key.Attribute, temporal.Open, key.Member)
	out, err := collectFacts(ctx, rows, err)
	return out, mapRead("history of "+key.String(), err)
}

// Trace implements engine.Reader.
func (s *db) Trace(ctx context.Context, tenant string, factID int64) (sgam.Trace, error) {
	tr, err := s.trace(ctx, tenant, factID)
	return tr, mapRead("trace", err)
}

func (s *db) trace(ctx context.Context, tenant string, factID int64) (sgam.Trace, error) {
	// One read transaction: the chain and its episodes from one snapshot.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return sgam.Trace{}, err
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.rst.trace).QueryContext(ctx, factID, tenant, temporal.Open)
	chain, err := collectFacts(ctx, rows, err)
	if err != nil || len(chain) == 0 {
		return sgam.Trace{Chain: chain}, err
	}
	tr := sgam.Trace{Chain: chain, Episodes: []sgam.Episode{}}
	seen := map[string]bool{}
	epStmt := tx.StmtContext(ctx, s.rst.episode)
	for _, f := range chain {
		for _, id := range f.Sources {
			if seen[id] {
				continue
			}
			seen[id] = true
			e, err := scanEpisode(epStmt.QueryRowContext(ctx, tenant, id))
			if err != nil {
				return sgam.Trace{}, fmt.Errorf("episode %s: %w", id, err)
			}
			tr.Episodes = append(tr.Episodes, e)
		}
	}
	return tr, nil
}

// Receipts implements engine.Reader.
func (s *db) Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error) {
	out := []sgam.Receipt{}
	err := s.each(ctx, "list receipts", `SELECT receipt FROM audit WHERE tenant = ? ORDER BY at, rowid`, []any{tenant}, func(sc scanner) error {
		var body []byte
		if err := sc.Scan(&body); err != nil {
			return err
		}
		var rc sgam.Receipt
		if err := json.Unmarshal(body, &rc); err != nil {
			return fmt.Errorf("a stored receipt does not parse: %w", err)
		}
		out = append(out, rc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stats implements engine.Reader.
func (s *db) Stats(ctx context.Context, tenant string) (sgam.TenantStats, error) {
	ctx = long(ctx) // its counts read all of the tenant's rows
	st := sgam.TenantStats{Extractions: map[string]int{}, RecentSubjects: []string{}}
	for _, c := range []struct {
		query string
		into  *int
	}{
		{`SELECT COUNT(DISTINCT subject) FROM facts WHERE tenant = ? AND retracted_at IS NULL`, &st.Subjects},
		{`SELECT COUNT(*) FROM facts WHERE tenant = ? AND retracted_at IS NULL`, &st.Facts},
		{`SELECT COUNT(*) FROM episodes WHERE tenant = ? AND kind <> 'unknown'`, &st.Episodes},
		{`SELECT COUNT(*) FROM pending WHERE tenant = ? AND reason <> 'recurrence'`, &st.Pending},
		{`SELECT COUNT(*) FROM pending WHERE tenant = ? AND reason = 'recurrence'`, &st.Signals},
		{`SELECT COUNT(*) FROM extract_queue WHERE tenant = ?`, &st.Queued},
	} {
		if err := s.queryRow(ctx, c.query, tenant).Scan(c.into); err != nil {
			return st, mapRead("count", err)
		}
	}
	if err := s.each(ctx, "count", `SELECT status, COUNT(*) FROM extractions WHERE tenant = ? GROUP BY status`, []any{tenant}, func(sc scanner) error {
		var status string
		var n int
		err := sc.Scan(&status, &n)
		st.Extractions[status] = n
		return err
	}); err != nil {
		return st, err
	}
	err := s.each(ctx, "count", `SELECT subject FROM facts WHERE tenant = ? AND retracted_at IS NULL GROUP BY subject ORDER BY MAX(recorded_at) DESC, subject LIMIT ?`,
		[]any{tenant, sgam.MaxRecentSubjects}, func(sc scanner) error {
			var subject string
			err := sc.Scan(&subject)
			st.RecentSubjects = append(st.RecentSubjects, subject)
			return err
		})
	return st, err
}

// A read of the pool maps its error at its end, once, as a write does at
// its transaction's end (writeOnly): each for the reads of many rows,
// mapRead for the rest.

// each runs a read through its prepared statement and hands every row to
// row, in order; its error, wrapped with what it was doing, is mapped.
func (s *db) each(ctx context.Context, what, query string, args []any, row func(scanner) error) error {
	rows, err := s.query(ctx, query, args...)
	return mapRead(what, scanRows(ctx, rows, err, row))
}

// strings reads a column of text.
func (s *db) strings(ctx context.Context, what, query string, args ...any) ([]string, error) {
	var out []string
	var v string // one destination for every row (as factScan)
	err := s.each(ctx, what, query, args, func(sc scanner) error {
		err := sc.Scan(&v)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanRows hands every row of rows (or the error of their query) to row,
// in order, and closes them; it stops when ctx ends. Its error is not
// mapped: the read's end does that.
func scanRows(ctx context.Context, rows *sql.Rows, err error, row func(scanner) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// mapRead maps the error of a read of what (nil stays nil).
func mapRead(what string, err error) error {
	if err == nil {
		return nil
	}
	return mapErr(fmt.Errorf("%s: %w", what, err))
}

// SchemaHead implements engine.Reader.
func (s *db) SchemaHead(ctx context.Context, tenant string) (ledger.Head, error) {
	gen := s.data.begin()
	key := dataKey{schemaHeadOf, tenant, ""}
	if v, ok := s.data.lookup(gen, key); ok {
		return v.(ledger.Head), nil
	}
	h, err := scanHead(s.queryRow(ctx, headQuery, tenant), tenant)
	if err == nil {
		s.data.store(gen, key, h)
	}
	return h, mapRead("read schema", err)
}

const schemaColumns = `tenant, version, hash, applied_at, body`

func schemaVersion(sc scanner) (sgam.SchemaVersion, bool, error) {
	var v sgam.SchemaVersion
	var at int64
	var body []byte
	err := sc.Scan(&v.Tenant, &v.Version, &v.Hash, &at, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, err
	}
	v.Body, v.AppliedAt, v.StoreDefault = body, sgam.FromMicros(at), v.Tenant == ""
	return v, true, nil
}

// SchemaVersion implements engine.Reader.
func (s *db) SchemaVersion(ctx context.Context, h ledger.Head) (sgam.SchemaVersion, bool, error) {
	v, found, err := schemaVersion(s.queryRow(ctx, `SELECT `+schemaColumns+` FROM schemas WHERE tenant = ? AND version = ?`, h.Owner, h.Version))
	return v, found, mapRead("read schema", err)
}

// SchemaVersions implements engine.Reader.
func (s *db) SchemaVersions(ctx context.Context, owner string) ([]sgam.SchemaVersion, error) {
	var out []sgam.SchemaVersion
	err := s.each(ctx, "read schemas", `SELECT `+schemaColumns+` FROM schemas WHERE tenant = ? ORDER BY version`, []any{owner}, func(sc scanner) error {
		v, _, err := schemaVersion(sc)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SchemaOwners implements engine.Reader.
func (s *db) SchemaOwners(ctx context.Context) ([]string, error) {
	out, err := s.strings(ctx, "read schemas", `SELECT DISTINCT tenant FROM schemas WHERE tenant <> '' ORDER BY tenant`)
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}

// collectFacts scans fact rows (its error is not mapped).
func collectFacts(ctx context.Context, rows *sql.Rows, err error) ([]sgam.Fact, error) {
	out := []sgam.Fact{}
	facts := newFactScan()
	err = scanRows(ctx, rows, err, func(sc scanner) error {
		f, err := facts.scan(sc)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// attributesSQL walks the distinct attributes of a subject down the
// facts_key index, one seek each, however long their histories.
const attributesSQL = `WITH RECURSIVE a(attr) AS (
	SELECT min(attribute) FROM facts WHERE tenant = ?1 AND subject = ?2
	UNION ALL
	SELECT (SELECT min(attribute) FROM facts WHERE tenant = ?1 AND subject = ?2 AND attribute > a.attr) FROM a WHERE a.attr IS NOT NULL)
SELECT attr FROM a WHERE attr IS NOT NULL LIMIT ?3`

// Attributes implements engine.Reader.
func (s *db) Attributes(ctx context.Context, tenant, subject string, limit int) ([]string, error) {
	gen := s.data.begin()
	key := dataKey{subjectAttrs, tenant, subject + "\x00" + strconv.Itoa(limit)}
	if v, ok := s.data.lookup(gen, key); ok {
		return cachedStrings(v), nil
	}
	out, err := s.strings(ctx, "attributes of "+subject, attributesSQL, tenant, subject, limit)
	if err == nil {
		s.data.store(gen, key, slices.Clone(out))
	}
	return out, err
}
