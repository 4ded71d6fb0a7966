package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// writeStmts are the write path's single-row statements, prepared on the
// writer connection.
type writeStmts struct {
	lastID, txClock, advanceClock *sql.Stmt
	factByID, head, start         *sql.Stmt
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
	w.head = prep(headQuery)
	// What a write needs first, in one statement: the transaction clock,
	// the last fact id, and the head of tenant ?1's schema.
	w.start = prep(`SELECT (SELECT max(value, coalesce((SELECT recorded_at FROM facts ORDER BY fact_id DESC LIMIT 1), 0)) FROM meta WHERE key = 'tx_clock'),
		max(coalesce((SELECT max(fact_id) FROM facts), 0), (SELECT value FROM meta WHERE key = 'fact_id_floor')),
		coalesce((SELECT max(version) FROM schemas WHERE tenant = ?1 AND ?1 <> ''), 0),
		coalesce((SELECT max(version) FROM schemas WHERE tenant = ''), 0)`)
	w.all = p.made
	if p.err != nil {
		return mapErr(fmt.Errorf("prepare: %w", p.err))
	}
	return nil
}

// headQuery is the schema in force for tenant ?1 (” for the default's
// head): its own latest version, else the default's.
const headQuery = `SELECT coalesce((SELECT max(version) FROM schemas WHERE tenant = ?1 AND ?1 <> ''), 0),
	coalesce((SELECT max(version) FROM schemas WHERE tenant = ''), 0)`

// scanHead reads what headQuery answers.
func scanHead(row scanner, tenant string) (ledger.Head, error) {
	var own, def int
	if err := row.Scan(&own, &def); err != nil {
		return ledger.Head{}, fmt.Errorf("read the schema of %s: %w", tenant, err)
	}
	return ledger.HeadOf(tenant, own, def), nil
}

// LoadBatch implements engine.Tx. Keys are looked up many to a statement.
func (t *tx) LoadBatch(b *ledger.Batch, nIDs int, confirm *sgam.Candidate) (func() int64, int64, error) {
	heads := b.Govs.Heads()
	first := b.Keys[0].Tenant
	var stored, lastID int64
	var own, def int
	if err := t.s.wst.start.QueryRowContext(t.ctx, first).Scan(&stored, &lastID, &own, &def); err != nil {
		return nil, 0, fmt.Errorf("start the write: %w", err)
	}
	if h := ledger.HeadOf(first, own, def); h != heads[first] {
		return nil, 0, &engine.SchemaChanged{Heads: map[string]ledger.Head{first: h}}
	}
	delete(heads, first)
	if err := t.CheckHeads(heads); err != nil {
		return nil, 0, err
	}
	if !t.clockKnown {
		t.fix(stored, 0)
	}
	now, err := t.Instant(0)
	if err != nil {
		return nil, 0, err
	}
	if lastID > sgam.MaxFactID-int64(nIDs) {
		return nil, 0, sgam.Errorf(sgam.Unavailable, "fact_id", "fact ids are exhausted (the largest is %d)", sgam.MaxFactID)
	}
	nextID := func() int64 { lastID++; return lastID }
	if confirm != nil {
		found, err := t.DeletePending(confirm.Tenant, confirm.ID)
		if err != nil {
			return nil, 0, err
		}
		if !found {
			return nil, 0, engine.NoCandidate(confirm.Tenant, confirm.ID)
		}
	}
	order := b.Keys
	loaded := make([][]temporal.Row, len(order))
	for from := 0; from < len(order); from += maxBulkRows {
		chunk := order[from:min(from+maxBulkRows, len(order))]
		args := make([]any, 0, len(chunk)*7)
		for i, k := range chunk {
			tmin, tmax := b.Window(k)
			args = append(args, from+i, k.Tenant, k.Subject, k.Attribute, k.Member, tmin, tmax)
		}
		if err := t.loadRows(len(chunk), args, loaded); err != nil {
			return nil, 0, err
		}
	}
	for i, k := range order {
		b.SetBelieved(k, loaded[i])
	}
	return nextID, now, nil
}

// loadRows runs bulkLoad for n keys, each row tagged with its key's
// index in loaded.
func (t *tx) loadRows(n int, args []any, loaded [][]temporal.Row) error {
	st, err := t.s.bulkStmt(t.ctx, bulkLoad, n)
	if err != nil {
		return fmt.Errorf("load keys: %w", err)
	}
	rows, err := st.QueryContext(t.ctx, args...)
	if err != nil {
		return fmt.Errorf("load keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var r temporal.Row
		var value []byte
		var validTo sql.NullInt64
		var source, actor sql.NullString
		if err := rows.Scan(&i, &r.ID, &value, &r.ValidFrom, &validTo, &r.RecordedAt, &source, &r.Version, &actor, &r.Corroborated); err != nil {
			return fmt.Errorf("load keys: %w", err)
		}
		r.Value, r.Source, r.Actor = value, source.String, actor.String
		r.ValidTo = openIfNull(validTo)
		r.RetractedAt = temporal.Open
		loaded[i] = append(loaded[i], r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load keys: %w", err)
	}
	return nil
}

// CheckHeads implements engine.Tx: inside the transaction, which holds the
// write lock, the heads read are the ones in force until commit.
func (t *tx) CheckHeads(heads map[string]ledger.Head) error {
	var changed map[string]ledger.Head
	for tenant, want := range heads {
		have, err := t.SchemaHead(tenant)
		if err != nil {
			return err
		}
		if have != want {
			if changed == nil {
				changed = map[string]ledger.Head{}
			}
			changed[tenant] = have
		}
	}
	if changed != nil {
		return &engine.SchemaChanged{Heads: changed}
	}
	return nil
}

// EpisodeKinds implements engine.Tx.
func (t *tx) EpisodeKinds(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]string, error) {
	out := make(map[ledger.EpisodeRef]string, len(refs))
	for _, r := range refs {
		var kind string
		err := t.s.w.QueryRowContext(t.ctx, `SELECT kind FROM episodes WHERE tenant = ? AND episode_id = ?`, r.Tenant, r.ID).Scan(&kind)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read episode kinds: %w", err)
		}
		out[r] = kind
	}
	return out, nil
}

// FlushBatch implements engine.Tx. Order matters: links to stored rows
// before they are copied; retractions before inserts, so the partial unique
// indexes never see the old and the new believed row at once.
func (t *tx) FlushBatch(b *ledger.Batch, now int64, _ bool) error {
	s := t.s
	ctx := t.ctx
	seen := map[ledger.EpisodeRef]bool{}
	var placeholders []any
	for _, o := range b.Ops {
		ref := ledger.EpisodeRef{Tenant: o.Key.Tenant, ID: o.Source}
		if o.Source != "" && !seen[ref] {
			seen[ref] = true
			placeholders = append(placeholders, ref.Tenant, ref.ID, now, now)
		}
	}
	if _, err := s.bulkExec(ctx, bulkPlaceholders, nil, placeholders); err != nil {
		return fmt.Errorf("create placeholder episodes: %w", err)
	}

	var storedLinks, retract, inserts, copies, links []any
	for _, k := range b.Keys {
		l := b.Ledger(k)
		for _, e := range l.EvidenceStored {
			storedLinks = append(storedLinks, e.RowID, k.Tenant, e.Source, now)
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
				links = append(links, ins.ID, k.Tenant, src, now)
			}
		}
	}
	if _, err := s.bulkExec(ctx, bulkEvidence, nil, storedLinks); err != nil {
		return fmt.Errorf("link evidence: %w", err)
	}
	n, err := s.bulkExec(ctx, bulkRetract, []any{now}, retract)
	if err != nil {
		return fmt.Errorf("retract facts: %w", err)
	}
	if n != int64(len(retract)) {
		return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("retract facts: %d of %d rows were still believed", n, len(retract))}
	}
	if _, err := s.bulkExec(ctx, bulkFacts, nil, inserts); err != nil {
		return fmt.Errorf("insert facts: %w", err)
	}
	if _, err := s.bulkExec(ctx, bulkEvidenceCopy, nil, copies); err != nil {
		return fmt.Errorf("copy evidence: %w", err)
	}
	if _, err := s.bulkExec(ctx, bulkEvidence, nil, links); err != nil {
		return fmt.Errorf("link evidence: %w", err)
	}
	for actor, ids := range b.Actors() {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		if _, err := s.bulkExec(ctx, bulkActor, []any{actor}, args); err != nil {
			return fmt.Errorf("set actors: %w", err)
		}
	}
	for _, c := range b.Hold {
		var conflicts any
		if c.ConflictsWith != nil {
			conflicts = *c.ConflictsWith
		}
		if _, err := t.exec(fmt.Sprintf("hold %s.%s pending", c.Subject, c.Attribute), `INSERT INTO pending (`+pendingColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			c.Tenant, c.ID, c.Subject, c.Attribute, string(c.Member), string(c.Value), sgam.Micros(c.ValidFrom), c.Source,
			c.Reason, conflicts, sgam.Micros(c.RecordedAt), c.SchemaVersion, c.Signals); err != nil {
			return err
		}
	}
	if b.Inserted() {
		t.carried = true
	}
	t.keys = append(t.keys, b.Keys...)
	return nil
}

// ReadFact implements engine.Tx.
func (t *tx) ReadFact(_ sgam.Key, id int64) (sgam.Fact, error) {
	f, err := scanFact(t.s.wst.factByID.QueryRowContext(t.ctx, id, temporal.Open))
	if err != nil {
		return f, fmt.Errorf("read written fact: %w", err)
	}
	return f, nil
}

// FindPending implements engine.Tx.
func (t *tx) FindPending(c sgam.Candidate) (string, error) {
	var id string
	err := t.s.w.QueryRowContext(t.ctx, `SELECT pending_id FROM pending WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ?
		AND valid_from = ? AND source = ? AND value = ? LIMIT 1`, c.Tenant, c.Subject, c.Attribute, string(c.Member),
		sgam.Micros(c.ValidFrom), c.Source, string(c.Value)).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read pending: %w", err)
	}
	return id, nil
}

// Signals implements engine.Tx.
func (t *tx) Signals(k sgam.Key) ([]sgam.Candidate, error) {
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT `+pendingColumns+` FROM pending WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ?
		AND reason = ? ORDER BY valid_from, pending_id`, k.Tenant, k.Subject, k.Attribute, k.Member, sgam.ReasonRecurrence)
	if err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	defer rows.Close()
	var out []sgam.Candidate
	for rows.Next() {
		c, err := scanCandidate(rows)
		if err != nil {
			return nil, fmt.Errorf("read signals: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeletePending implements engine.Tx.
func (t *tx) DeletePending(tenant, id string) (bool, error) {
	n, err := t.exec("delete pending", `DELETE FROM pending WHERE tenant = ? AND pending_id = ?`, tenant, id)
	return n == 1, err
}

// LockSchemas implements engine.Tx: the write lock serializes every write.
func (t *tx) LockSchemas() error { return nil }

// SchemaHead implements engine.Tx.
func (t *tx) SchemaHead(tenant string) (ledger.Head, error) {
	return scanHead(t.s.wst.head.QueryRowContext(t.ctx, tenant), tenant)
}

// SchemaVersion implements engine.Tx.
func (t *tx) SchemaVersion(h ledger.Head) (sgam.SchemaVersion, error) {
	v, found, err := schemaVersion(t.s.w.QueryRowContext(t.ctx, `SELECT `+schemaColumns+` FROM schemas WHERE tenant = ? AND version = ?`, h.Owner, h.Version))
	if err == nil && !found {
		err = &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("schema version %d is not stored", h.Version)}
	}
	return v, err
}

// InsertSchema implements engine.Tx.
func (t *tx) InsertSchema(v sgam.SchemaVersion) error {
	_, err := t.exec("store schema", `INSERT INTO schemas (tenant, version, body, hash, applied_at) VALUES (?, ?, ?, ?, ?)`,
		v.Tenant, v.Version, string(v.Body), v.Hash, sgam.Micros(v.AppliedAt))
	if err == nil {
		t.observe(sgam.Micros(v.AppliedAt))
	}
	return err
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
