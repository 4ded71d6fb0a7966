package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
)

// gov returns the schema writes are validated under, reloading it when
// another connection or process applied a new version. It runs inside the
// write transaction, so the version it returns holds until commit.
func (s *Store) currentGov(ctx context.Context) (ledger.Gov, error) {
	var version int
	if err := s.wst.schemaVersion.QueryRowContext(ctx).Scan(&version); err != nil {
		return ledger.Gov{}, mapErr("read schema version", err)
	}
	if g := s.gov.Load(); g != nil && g.Version == version {
		return *g, nil
	}
	return s.loadGov(ctx, s.w, version)
}

func (s *Store) loadGov(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, version int) (ledger.Gov, error) {
	var body []byte
	if version > 0 {
		if err := q.QueryRowContext(ctx, `SELECT body FROM schemas WHERE version = ?`, version).Scan(&body); err != nil {
			return ledger.Gov{}, mapErr("read schema", err)
		}
	}
	g, err := ledger.LoadGov(version, body)
	if err != nil {
		return g, err
	}
	s.gov.Store(&g)
	return g, nil
}

// readGov is the schema reads resolve attribute names under. Writes keep
// it current; a process that only reads checks for a new version (applied
// by another process) at most once a second.
func (s *Store) readGov() ledger.Gov {
	if last := s.govChecked.Load(); time.Since(time.Unix(0, last)) > time.Second &&
		s.govChecked.CompareAndSwap(last, time.Now().UnixNano()) {
		if v := s.latestSchemaVersion(context.Background()); s.gov.Load() == nil || s.gov.Load().Version != v {
			s.loadGov(context.Background(), s.rdb, v)
		}
	}
	if g := s.gov.Load(); g != nil {
		return *g
	}
	return ledger.Gov{}
}

// Schema implements sgam.Store.
func (s *Store) Schema(ctx context.Context) (sgam.SchemaVersion, error) {
	var v sgam.SchemaVersion
	var at int64
	var body []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT version, hash, applied_at, body FROM schemas ORDER BY version DESC LIMIT 1`).
		Scan(&v.Version, &v.Hash, &at, &body)
	v.Body = body
	if err == sql.ErrNoRows {
		return sgam.SchemaVersion{}, nil
	}
	if err != nil {
		return v, mapErr("read schema", err)
	}
	v.AppliedAt = sgam.FromMicros(at)
	return v, nil
}

// ApplySchema implements sgam.Store.
func (s *Store) ApplySchema(ctx context.Context, file []byte, dryRun bool) (sgam.SchemaVersion, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return sgam.SchemaVersion{}, err
	}
	defer tx.rollback()
	cur, err := s.currentGov(ctx)
	if err != nil {
		return sgam.SchemaVersion{}, err
	}
	next, unchanged, err := ledger.NextSchema(cur, file)
	if err != nil {
		return next, err
	}
	now, err := tx.now()
	if err != nil {
		return next, err
	}
	next.AppliedAt = sgam.FromMicros(now)
	if unchanged {
		have, err := s.Schema(ctx)
		have.Diff = []string{}
		return have, err
	}
	if dryRun {
		return next, nil
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schemas (version, body, hash, applied_at) VALUES (?, ?, ?, ?)`,
		next.Version, string(next.Body), next.Hash, now); err != nil {
		return next, mapErr("store schema", err)
	}
	tx.observe(now)
	if err := tx.commit(nil); err != nil {
		return next, err
	}
	_, err = s.loadGov(ctx, s.rdb, next.Version)
	return next, err
}

// episodeKinds reads the kinds of episodes inside the write transaction.
func (s *Store) episodeKinds(ctx context.Context, refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]string, error) {
	out := make(map[ledger.EpisodeRef]string, len(refs))
	for _, r := range refs {
		var kind string
		err := s.w.QueryRowContext(ctx, `SELECT kind FROM episodes WHERE tenant = ? AND episode_id = ?`, r.Tenant, r.ID).Scan(&kind)
		if err != nil && err != sql.ErrNoRows {
			return nil, mapErr("read episode kinds", err)
		}
		out[r] = kind
	}
	return out, nil
}

const pendingColumns = `tenant, pending_id, subject, attribute, member, value, valid_from, source, reason, conflicts_with, recorded_at, schema_version`

func scanCandidate(sc scanner) (sgam.Candidate, error) {
	var c sgam.Candidate
	var member, value string
	var validFrom, recordedAt int64
	var conflicts sql.NullInt64
	if err := sc.Scan(&c.Tenant, &c.ID, &c.Subject, &c.Attribute, &member, &value, &validFrom, &c.Source, &c.Reason,
		&conflicts, &recordedAt, &c.SchemaVersion); err != nil {
		return c, err
	}
	if member != "" {
		c.Member = []byte(member)
	}
	c.Value = []byte(value)
	c.ValidFrom, c.RecordedAt = sgam.FromMicros(validFrom), sgam.FromMicros(recordedAt)
	if conflicts.Valid {
		id := conflicts.Int64
		c.ConflictsWith = &id
	}
	return c, nil
}

// Pending implements sgam.Store.
func (s *Store) Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error) {
	q, err := q.Check()
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+pendingColumns+` FROM pending
		WHERE tenant = ?1 AND (?2 = '' OR subject = ?2) ORDER BY recorded_at, pending_id LIMIT ?3`, q.Tenant, q.Subject, q.Limit)
	if err != nil {
		return nil, mapErr("list pending", err)
	}
	defer rows.Close()
	out := []sgam.Candidate{}
	for rows.Next() {
		c, err := scanCandidate(rows)
		if err != nil {
			return nil, mapErr("list pending", err)
		}
		out = append(out, c)
	}
	return out, mapErr("list pending", rows.Err())
}

func (s *Store) candidate(ctx context.Context, tenant, id string) (sgam.Candidate, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return sgam.Candidate{}, err
	}
	c, err := scanCandidate(s.rdb.QueryRowContext(ctx, `SELECT `+pendingColumns+` FROM pending WHERE tenant = ? AND pending_id = ?`, tenant, id))
	if err == sql.ErrNoRows {
		return c, sgam.Errorf(sgam.NotFound, "pending_id", "tenant %s has no pending candidate %q", tenant, id)
	}
	return c, mapErr("read pending", err)
}

// Confirm implements sgam.Store.
func (s *Store) Confirm(ctx context.Context, tenant, pendingID, episodeID string) (sgam.WriteResult, error) {
	if err := sgam.CheckEpisodeID("episode_id", episodeID); err != nil {
		return sgam.WriteResult{}, err
	}
	c, err := s.candidate(ctx, tenant, pendingID)
	if err != nil {
		return sgam.WriteResult{}, err
	}
	res, err := s.write(ctx, writeReq{confirm: &c, build: func(g ledger.Gov, now time.Time) ([]ledger.Op, error) {
		return g.Candidate(c, episodeID, now)
	}})
	if err != nil {
		return sgam.WriteResult{}, err
	}
	return res[len(res)-1], nil
}

// Dismiss implements sgam.Store.
func (s *Store) Dismiss(ctx context.Context, tenant, pendingID string) error {
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback()
	if err := s.deletePending(ctx, tenant, pendingID); err != nil {
		return err
	}
	return tx.commit(nil)
}

func (s *Store) deletePending(ctx context.Context, tenant, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM pending WHERE tenant = ? AND pending_id = ?`, tenant, id)
	if err != nil {
		return mapErr("delete pending", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return sgam.Errorf(sgam.NotFound, "pending_id", "tenant %s has no pending candidate %q", tenant, id)
	}
	return nil
}

// findPending returns the id of a stored candidate identical to c, or "".
func (s *Store) findPending(ctx context.Context, c sgam.Candidate) (string, error) {
	var id string
	err := s.w.QueryRowContext(ctx, `SELECT pending_id FROM pending WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ?
		AND valid_from = ? AND source = ? AND value = ? LIMIT 1`, c.Tenant, c.Subject, c.Attribute, string(c.Member),
		sgam.Micros(c.ValidFrom), c.Source, string(c.Value)).Scan(&id)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return id, mapErr("read pending", err)
}

// insertPending stores the candidates a batch held back.
func (s *Store) insertPending(ctx context.Context, cs []sgam.Candidate) error {
	for _, c := range cs {
		var conflicts any
		if c.ConflictsWith != nil {
			conflicts = *c.ConflictsWith
		}
		if _, err := s.w.ExecContext(ctx, `INSERT INTO pending (`+pendingColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
			c.Tenant, c.ID, c.Subject, c.Attribute, string(c.Member), string(c.Value), sgam.Micros(c.ValidFrom), c.Source,
			c.Reason, conflicts, sgam.Micros(c.RecordedAt), c.SchemaVersion); err != nil {
			return mapErr(fmt.Sprintf("hold %s.%s pending", c.Subject, c.Attribute), err)
		}
	}
	return nil
}

// Relation reports whether the schema in force declares attribute a ref
// (see sgam.Traverse).
func (s *Store) Relation(attribute string) (ref, governed bool) {
	return s.readGov().Relation(attribute)
}
