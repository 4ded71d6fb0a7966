package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// writeStmts are the write path's single-row statements, prepared on the
// writer connection.
type writeStmts struct {
	lastID, txClock, advanceClock *sql.Stmt
	factByID, schemaVersion       *sql.Stmt
	all                           []*sql.Stmt
}

// close closes the statements. database/sql does not finalize statements
// prepared on a sql.Conn when the pool closes, and SQLite keeps a
// connection with a statement left open as a zombie that holds its locks:
// the last connection to close could then not remove the WAL.
func (w *writeStmts) close() {
	for _, st := range w.all {
		st.Close()
	}
}

func (w *writeStmts) prepare(ctx context.Context, c *sql.Conn) error {
	p := preparer{ctx: ctx, on: c}
	prep := p.prep
	w.lastID = prep(`SELECT max(coalesce((SELECT max(fact_id) FROM facts), 0), (SELECT value FROM meta WHERE key = 'fact_id_floor'))`)
	// The latest transaction time: meta's tx_clock, or the recorded_at of
	// the newest fact row, which writes that insert facts leave as their mark.
	// (Whatever deletes the newest fact must move tx_clock up first.)
	w.txClock = prep(`SELECT max(value, coalesce((SELECT recorded_at FROM facts ORDER BY fact_id DESC LIMIT 1), 0))
		FROM meta WHERE key = 'tx_clock'`)
	w.advanceClock = prep(`UPDATE meta SET value = ?1 WHERE key = 'tx_clock' AND value < ?1`)
	w.factByID = prep(`SELECT ` + factColumns("?2") + ` FROM facts f WHERE fact_id = ?1`)
	w.schemaVersion = prep(`SELECT coalesce(max(version), 0) FROM schemas`)
	w.all = p.made
	return mapErr("prepare", p.err)
}

// Assert implements sgam.Store.
func (s *Store) Assert(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	return s.writeOne(ctx, ledger.AssertOne(s.limits, a, false))
}

// Add implements sgam.Store.
func (s *Store) Add(ctx context.Context, a sgam.Assertion) (sgam.WriteResult, error) {
	return s.writeOne(ctx, ledger.AssertOne(s.limits, a, true))
}

// Retract implements sgam.Store.
func (s *Store) Retract(ctx context.Context, r sgam.Retraction) (sgam.WriteResult, error) {
	return s.writeOne(ctx, ledger.RetractOne(s.limits, r, false))
}

// Remove implements sgam.Store.
func (s *Store) Remove(ctx context.Context, r sgam.Retraction) (sgam.WriteResult, error) {
	return s.writeOne(ctx, ledger.RetractOne(s.limits, r, true))
}

// AssertMany implements sgam.Store.
func (s *Store) AssertMany(ctx context.Context, as []sgam.Assertion) ([]sgam.WriteResult, error) {
	if len(as) == 0 {
		return nil, nil
	}
	build, err := ledger.AssertAll(s.limits, as)
	if err != nil {
		return nil, err
	}
	return s.write(ctx, writeReq{build: build, batch: "assertions"})
}

func (s *Store) writeOne(ctx context.Context, build ledger.Build) (sgam.WriteResult, error) {
	res, err := s.write(ctx, writeReq{build: build})
	if err != nil {
		return sgam.WriteResult{}, err
	}
	return res[0], nil
}

// writeReq is one write transaction: build turns the input into ops under
// the schema in force; batch names the operations in errors
// ("assertions[i]"), empty for a single write; confirm is a pending
// candidate to delete in the same transaction.
type writeReq struct {
	build   ledger.Build
	batch   string
	confirm *sgam.Candidate
}

// write applies the ops of req in order in one transaction at one
// transaction instant.
func (s *Store) write(ctx context.Context, req writeReq) ([]sgam.WriteResult, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.rollback()

	gov, err := s.currentGov(ctx)
	if err != nil {
		return nil, err
	}
	ops, err := req.build(gov, s.clock.Now())
	if err != nil {
		return nil, err
	}
	b := ledger.New(ops)
	b.Gov = gov
	if err := s.apply(ctx, tx, b, req.batch); err != nil {
		return nil, err
	}
	if c := req.confirm; c != nil {
		if err := s.deletePending(ctx, c.Tenant, c.ID); err != nil {
			return nil, err
		}
	}
	results, err := b.Results(func(_ sgam.Key, id int64) (sgam.Fact, error) { return s.writerFact(ctx, id) })
	if err != nil {
		return nil, err
	}
	if err := tx.commit(b.Keys); err != nil {
		return nil, err
	}
	return results, nil
}

// apply loads what b's ops need, applies them at the transaction's instant
// and writes the outcome, inside tx.
func (s *Store) apply(ctx context.Context, tx *writeTx, b *ledger.Batch, batch string) error {
	now, err := tx.now()
	if err != nil {
		return err
	}
	if err := s.loadWindows(ctx, b); err != nil {
		return err
	}
	if refs := b.KindsNeeded(); len(refs) > 0 {
		kinds, err := s.episodeKinds(ctx, refs)
		if err != nil {
			return err
		}
		b.SetKinds(kinds)
	}
	nextID, err := tx.nextIDs(2 * len(b.Ops)) // an operation inserts at most two rows
	if err != nil {
		return err
	}
	if err := b.Apply(now, nextID, batch); err != nil {
		return err
	}
	if err := s.flush(ctx, b, now); err != nil {
		return err
	}
	if len(b.Pending) > 0 {
		if err := b.SettlePending(func(c sgam.Candidate) (string, error) { return s.findPending(ctx, c) }); err != nil {
			return err
		}
		if err := s.insertPending(ctx, b.Hold); err != nil {
			return err
		}
	}
	if b.Inserted() {
		tx.carriedByFacts()
	}
	return nil
}

// loadWindows loads, for every key, its believed rows from the one at or
// before tmin to the one after tmax: the neighbours of every operation in
// [tmin, tmax]. Keys are looked up many to a statement.
func (s *Store) loadWindows(ctx context.Context, b *ledger.Batch) error {
	order := b.Keys
	loaded := make([][]temporal.Row, len(order))
	for from := 0; from < len(order); from += maxBulkRows {
		chunk := order[from:min(from+maxBulkRows, len(order))]
		args := make([]any, 0, len(chunk)*7)
		for i, k := range chunk {
			tmin, tmax := b.Window(k)
			args = append(args, from+i, k.Tenant, k.Subject, k.Attribute, k.Member, tmin, tmax)
		}
		st, err := s.bulkStmt(ctx, bulkWindow, len(chunk))
		if err != nil {
			return mapErr("load keys", err)
		}
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return mapErr("load keys", err)
		}
		for rows.Next() {
			var i int
			var r temporal.Row
			var value []byte
			var validTo sql.NullInt64
			var source sql.NullString
			var actor sql.NullString
			if err := rows.Scan(&i, &r.ID, &value, &r.ValidFrom, &validTo, &r.RecordedAt, &source, &r.Version, &actor, &r.Corroborated); err != nil {
				rows.Close()
				return mapErr("load keys", err)
			}
			r.Value, r.Source, r.Actor = value, source.String, actor.String
			r.ValidTo = openIfNull(validTo)
			r.RetractedAt = temporal.Open
			loaded[i] = append(loaded[i], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr("load keys", err)
		}
	}
	for i, k := range order {
		b.SetBelieved(k, loaded[i])
	}
	return nil
}

// flush writes the ledgers' outcome. Order matters: links to stored rows
// before they are copied; retractions before inserts, so the partial unique
// indexes never see the old and the new believed row at once.
func (s *Store) flush(ctx context.Context, b *ledger.Batch, tx int64) error {
	type episodeRef struct{ tenant, id string }
	seen := map[episodeRef]bool{}
	var placeholders []any
	for _, o := range b.Ops {
		ref := episodeRef{o.Key.Tenant, o.Source}
		if o.Source != "" && !seen[ref] {
			seen[ref] = true
			placeholders = append(placeholders, ref.tenant, ref.id, tx, tx)
		}
	}
	if _, err := s.bulkExec(ctx, bulkPlaceholders, nil, placeholders); err != nil {
		return mapErr("create placeholder episodes", err)
	}

	var storedLinks, retract, inserts, copies, links []any
	for _, k := range b.Keys {
		l := b.Ledger(k)
		for _, e := range l.EvidenceStored {
			storedLinks = append(storedLinks, e.RowID, k.Tenant, e.Source, tx)
		}
		for _, id := range l.RetractStored {
			retract = append(retract, id)
		}
		for _, ins := range l.Inserted {
			var value any
			if ins.Value != nil {
				value = string(ins.Value)
			}
			inserts = append(inserts, ins.ID, k.Tenant, k.Subject, k.Attribute, k.Member, value, ins.ValidFrom,
				nullIfOpen(ins.ValidTo), ins.RecordedAt, nullIfOpen(ins.RetractedAt), nullIfZero(ins.Supersedes),
				nullString(ins.Source), ins.Version)
			if ins.EvidenceOf != 0 {
				copies = append(copies, ins.ID, ins.EvidenceOf)
			}
			for _, src := range ins.Corroborations {
				links = append(links, ins.ID, k.Tenant, src, tx)
			}
		}
	}
	if _, err := s.bulkExec(ctx, bulkEvidence, nil, storedLinks); err != nil {
		return mapErr("link evidence", err)
	}
	n, err := s.bulkExec(ctx, bulkRetract, []any{tx}, retract)
	if err != nil {
		return mapErr("retract facts", err)
	}
	if n != int64(len(retract)) {
		return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("retract facts: %d of %d rows were still believed", n, len(retract))}
	}
	if _, err := s.bulkExec(ctx, bulkFacts, nil, inserts); err != nil {
		return mapErr("insert facts", err)
	}
	if _, err := s.bulkExec(ctx, bulkEvidenceCopy, nil, copies); err != nil {
		return mapErr("copy evidence", err)
	}
	if _, err := s.bulkExec(ctx, bulkEvidence, nil, links); err != nil {
		return mapErr("link evidence", err)
	}
	for actor, ids := range b.Actors() {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		if _, err := s.bulkExec(ctx, bulkActor, []any{actor}, args); err != nil {
			return mapErr("set actors", err)
		}
	}
	return nil
}

// writerFact reads one fact inside the write transaction.
func (s *Store) writerFact(ctx context.Context, id int64) (sgam.Fact, error) {
	f, err := scanFact(s.wst.factByID.QueryRowContext(ctx, id, temporal.Open))
	return f, mapErr("read written fact", err)
}

func openIfNull(v sql.NullInt64) int64 {
	if !v.Valid {
		return temporal.Open
	}
	return v.Int64
}

func nullIfOpen(v int64) any {
	if v == temporal.Open {
		return nil
	}
	return v
}

func nullIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}
