package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Forgetting deletes rows for real (DESIGN 5); the engine decides what
// goes, these statements delete it. Every forget runs with secure_delete
// on, so that the pages the deleted rows lived on are overwritten with
// zeros; Compact then rewrites the file and truncates the WAL, which still
// holds the old page images until a checkpoint overwrites or truncates it.
//
// Fact ids are never reused: before deleting, the transaction raises meta's
// fact_id_floor to the largest id, so a receipt naming an id always means
// one row. The transaction clock is carried by the newest fact row, which
// may be deleted, so the transaction moves meta's tx_clock up to its own
// instant.

// PrepareForget implements engine.Tx.
func (t *tx) PrepareForget() error {
	if t.deleting {
		return nil
	}
	if _, err := t.exec("forget", `PRAGMA secure_delete = ON`); err != nil {
		return err
	}
	now, err := t.Instant(0)
	if err != nil {
		return err
	}
	t.observe(now)
	if _, err := t.exec("forget: keep fact ids unique", `UPDATE meta SET value = (SELECT max(fact_id) FROM facts)
		WHERE key = 'fact_id_floor' AND value < coalesce((SELECT max(fact_id) FROM facts), 0)`); err != nil {
		return err
	}
	t.deleting = true
	return nil
}

// Secret implements engine.Tx.
func (t *tx) Secret() ([]byte, error) {
	var secret []byte
	err := t.s.w.QueryRowContext(t.ctx, `SELECT value FROM secrets WHERE name = 'receipt'`).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		secret = make([]byte, 32)
		rand.Read(secret)
		_, err = t.exec("create the store's secret", `INSERT INTO secrets (name, value) VALUES ('receipt', ?)`, secret)
	}
	if err != nil {
		return nil, fmt.Errorf("read the store's secret: %w", err)
	}
	return secret, nil
}

// HasEpisode implements engine.Tx.
func (t *tx) HasEpisode(tenant, id string) (bool, error) {
	var one int
	err := t.queryRow(`SELECT 1 FROM episodes WHERE tenant = ? AND episode_id = ?`, tenant, id).Scan(&one)
	_, ok, err := found(one, err, "read episode")
	return ok, err
}

// jsonList encodes ids for json_each.
func jsonList[T any](ids []T) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// queryColumn runs a query of one column in the transaction.
func queryColumn[T any](t *tx, what, query string, args ...any) ([]T, error) {
	rows, err := t.s.w.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ForgetSubject implements engine.Tx.
func (t *tx) ForgetSubject(tenant, subject string) (engine.Deleted, error) {
	var d engine.Deleted
	var err error
	if d.FactIDs, err = queryColumn[int64](t, "forget subject", `SELECT fact_id FROM facts WHERE tenant = ? AND subject = ?`, tenant, subject); err != nil {
		return d, err
	}
	// The episodes that supported the subject: sources, evidence and the
	// sources of its pending candidates.
	candidates, err := queryColumn[string](t, "forget subject", `SELECT source FROM facts WHERE tenant = ?1 AND subject = ?2 AND source IS NOT NULL
		UNION SELECT e.episode_id FROM facts f JOIN evidence e ON e.fact_id = f.fact_id WHERE f.tenant = ?1 AND f.subject = ?2
		UNION SELECT source FROM pending WHERE tenant = ?1 AND subject = ?2`, tenant, subject)
	if err != nil {
		return d, err
	}
	if _, err := t.exec("forget subject", `DELETE FROM evidence WHERE fact_id IN (SELECT fact_id FROM facts WHERE tenant = ? AND subject = ?)`, tenant, subject); err != nil {
		return d, err
	}
	if _, err := t.exec("forget subject", `DELETE FROM facts WHERE tenant = ? AND subject = ?`, tenant, subject); err != nil {
		return d, err
	}
	n, err := t.exec("forget subject", `DELETE FROM pending WHERE tenant = ? AND subject = ?`, tenant, subject)
	if err != nil {
		return d, err
	}
	d.Pending = int(n)
	if len(candidates) == 0 {
		return d, nil
	}
	// Those of them that no longer support any fact row or candidate go.
	d.EpisodeIDs, err = queryColumn[string](t, "forget episodes", `DELETE FROM episodes
		WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2))
		  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant = ?1 AND f.source = episodes.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant = ?1 AND e.episode_id = episodes.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.tenant = ?1 AND p.source = episodes.episode_id)
		RETURNING episode_id`, tenant, jsonList(candidates))
	return d, err
}

// ForgetTenant implements engine.Tx.
func (t *tx) ForgetTenant(tenant string) (engine.Deleted, error) {
	var d engine.Deleted
	var err error
	if d.FactIDs, err = queryColumn[int64](t, "forget tenant", `SELECT fact_id FROM facts WHERE tenant = ?`, tenant); err != nil {
		return d, err
	}
	if _, err := t.exec("forget tenant", `DELETE FROM evidence WHERE tenant = ?`, tenant); err != nil {
		return d, err
	}
	if _, err := t.exec("forget tenant", `DELETE FROM facts WHERE tenant = ?`, tenant); err != nil {
		return d, err
	}
	n, err := t.exec("forget tenant", `DELETE FROM pending WHERE tenant = ?`, tenant)
	if err != nil {
		return d, err
	}
	d.Pending = int(n)
	d.EpisodeIDs, err = queryColumn[string](t, "forget tenant", `DELETE FROM episodes WHERE tenant = ? RETURNING episode_id`, tenant)
	t.jobs = append(t.jobs, jobsGone{tenant: tenant, all: true})
	return d, err
}

// CitingFacts implements engine.Tx.
func (t *tx) CitingFacts(tenant string, episodes []string) ([]engine.Citing, error) {
	rows, err := t.s.w.QueryContext(t.ctx, `WITH g (id) AS (SELECT value FROM json_each(?2)),
		c (fact_id) AS (
			SELECT f.fact_id FROM g JOIN facts f ON f.tenant = ?1 AND f.source = g.id
			UNION SELECT e.fact_id FROM g JOIN evidence e ON e.tenant = ?1 AND e.episode_id = g.id)
		SELECT f.fact_id, f.subject, f.attribute, f.member, coalesce(f.source, ''), coalesce(f.actor, ''),
			f.retracted_at IS NULL, f.recorded_at,
			(SELECT group_concat(e.episode_id, char(31) ORDER BY e.recorded_at, e.episode_id) FROM evidence e WHERE e.fact_id = f.fact_id)
		FROM c JOIN facts f ON f.fact_id = c.fact_id ORDER BY f.fact_id`, tenant, jsonList(episodes))
	if err != nil {
		return nil, fmt.Errorf("forget episodes: %w", err)
	}
	defer rows.Close()
	var out []engine.Citing
	for rows.Next() {
		c := engine.Citing{Key: sgam.Key{Tenant: tenant}}
		var links sql.NullString
		if err := rows.Scan(&c.Support.ID, &c.Key.Subject, &c.Key.Attribute, &c.Key.Member, &c.Support.Source, &c.Support.Actor,
			&c.Believed, &c.RecordedAt, &links); err != nil {
			return nil, fmt.Errorf("forget episodes: %w", err)
		}
		if links.Valid && links.String != "" {
			c.Support.Evidence = strings.Split(links.String, "\x1f")
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("forget episodes: %w", err)
	}
	return out, nil
}

// SetSupport implements engine.Tx.
func (t *tx) SetSupport(_ string, changes []engine.SupportChange) error {
	for _, c := range changes {
		if _, err := t.exec("forget episodes", `UPDATE facts SET source = ?, actor = ? WHERE fact_id = ?`,
			nullString(c.Source), nullString(c.Actor), c.ID); err != nil {
			return err
		}
		if c.Promoted != "" {
			if _, err := t.exec("forget episodes", `DELETE FROM evidence WHERE fact_id = ? AND episode_id = ?`, c.ID, c.Promoted); err != nil {
				return err
			}
		}
	}
	return nil
}

// Unlink implements engine.Tx.
func (t *tx) Unlink(tenant string, episodes []string) error {
	_, err := t.exec("forget episodes", `DELETE FROM evidence WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2))`, tenant, jsonList(episodes))
	return err
}

// FactsByID implements engine.Tx.
func (t *tx) FactsByID(tenant string, ids []int64) ([]engine.Doomed, error) {
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT fact_id, subject, attribute, member, retracted_at IS NULL FROM facts
		WHERE fact_id IN (SELECT value FROM json_each(?)) AND tenant = ? ORDER BY fact_id`, jsonList(ids), tenant)
	if err != nil {
		return nil, fmt.Errorf("expire facts: %w", err)
	}
	defer rows.Close()
	var out []engine.Doomed
	for rows.Next() {
		d := engine.Doomed{Key: sgam.Key{Tenant: tenant}}
		if err := rows.Scan(&d.ID, &d.Key.Subject, &d.Key.Attribute, &d.Key.Member, &d.Believed); err != nil {
			return nil, fmt.Errorf("expire facts: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("expire facts: %w", err)
	}
	return out, nil
}

// Believed implements engine.Tx.
func (t *tx) Believed(_ string, keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	out := make(map[sgam.Key][]temporal.Row, len(keys))
	for _, k := range keys {
		rows, err := t.s.w.QueryContext(t.ctx, `SELECT fact_id, valid_from, valid_to, recorded_at FROM facts
			WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ? AND retracted_at IS NULL`, k.Tenant, k.Subject, k.Attribute, k.Member)
		if err != nil {
			return nil, fmt.Errorf("mend %s: %w", k, err)
		}
		for rows.Next() {
			var r temporal.Row
			var validTo sql.NullInt64
			if err := rows.Scan(&r.ID, &r.ValidFrom, &validTo, &r.RecordedAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("mend %s: %w", k, err)
			}
			r.ValidTo, r.RetractedAt = openIfNull(validTo), temporal.Open
			out[k] = append(out[k], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("mend %s: %w", k, err)
		}
	}
	return out, nil
}

// DeleteFacts implements engine.Tx.
func (t *tx) DeleteFacts(tenant string, ids []int64, keys []sgam.Key) error {
	list := jsonList(ids)
	if _, err := t.exec("delete facts", `DELETE FROM evidence WHERE fact_id IN (SELECT value FROM json_each(?))`, list); err != nil {
		return err
	}
	n, err := t.exec("delete facts", `DELETE FROM facts WHERE fact_id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return err
	}
	if n != int64(len(ids)) {
		return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("delete facts: %d of %d rows were there", n, len(ids))}
	}
	for _, k := range keys {
		if _, err := t.exec("delete facts", `UPDATE facts SET supersedes = NULL
			WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ? AND supersedes IN (SELECT value FROM json_each(?))`,
			k.Tenant, k.Subject, k.Attribute, k.Member, list); err != nil {
			return err
		}
	}
	_, err = t.exec("delete facts", `UPDATE pending SET conflicts_with = NULL WHERE tenant = ? AND conflicts_with IN (SELECT value FROM json_each(?))`,
		tenant, list)
	return err
}

// Mend implements engine.Tx.
func (t *tx) Mend(_ string, mends []ledger.Mend, now int64) error {
	nextID, err := t.nextIDs(len(mends))
	if err != nil {
		return err
	}
	for _, m := range mends {
		if n, err := t.exec("mend facts", `UPDATE facts SET retracted_at = ? WHERE fact_id = ? AND retracted_at IS NULL`, now, m.Of); err != nil {
			return err
		} else if n != 1 {
			return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("mend facts: fact %d is no longer believed", m.Of)}
		}
		id := nextID()
		if _, err := t.exec("mend facts", `INSERT INTO facts (fact_id, tenant, subject, attribute, member, value, valid_from, valid_to,
				recorded_at, retracted_at, supersedes, source, schema_version, actor)
			SELECT ?1, tenant, subject, attribute, member, value, valid_from, ?2, ?3, NULL, fact_id, source, schema_version, actor
			FROM facts WHERE fact_id = ?4`, id, nullIfOpen(m.ValidTo), now, m.Of); err != nil {
			return err
		}
		if _, err := t.exec("mend facts", `INSERT INTO evidence (fact_id, tenant, episode_id, recorded_at)
			SELECT ?1, tenant, episode_id, recorded_at FROM evidence WHERE fact_id = ?2`, id, m.Of); err != nil {
			return err
		}
	}
	return nil
}

// DeletePendingOf implements engine.Tx.
func (t *tx) DeletePendingOf(tenant string, episodes []string) (int, error) {
	n, err := t.exec("forget episodes", `DELETE FROM pending WHERE tenant = ?1 AND source IN (SELECT value FROM json_each(?2))`, tenant, jsonList(episodes))
	return int(n), err
}

// DeleteEpisodes implements engine.Tx.
func (t *tx) DeleteEpisodes(tenant string, ids []string) ([]string, error) {
	return queryColumn[string](t, "forget episodes", `DELETE FROM episodes WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2))
		RETURNING episode_id`, tenant, jsonList(ids))
}

// DeleteShowing implements engine.Tx. It reads every extraction record of
// the tenant: forgetting is rare, and no index knows what a prompt showed.
func (t *tx) DeleteShowing(tenant string, episodes, subjects []string, facts []int64) error {
	if len(episodes) == 0 && len(subjects) == 0 && len(facts) == 0 {
		return nil
	}
	_, err := t.exec("forget extraction records", `DELETE FROM extractions WHERE tenant = ?1 AND (
		EXISTS (SELECT 1 FROM json_each(record, '$.context_episodes') WHERE value IN (SELECT value FROM json_each(?2)))
		OR EXISTS (SELECT 1 FROM json_each(record, '$.subjects') WHERE value IN (SELECT value FROM json_each(?3)))
		OR EXISTS (SELECT 1 FROM json_each(record, '$.shown_facts') WHERE value IN (SELECT value FROM json_each(?4))))`,
		tenant, jsonList(episodes), jsonList(subjects), jsonList(facts))
	return err
}

// scopeSQL spells a scope as a condition on column tenant with its
// arguments, numbered from n.
func scopeSQL(sc ledger.Scope, n int) (string, []any) {
	if sc.Tenant != "" {
		return fmt.Sprintf("tenant = ?%d", n), []any{sc.Tenant}
	}
	return fmt.Sprintf("tenant NOT IN (SELECT value FROM json_each(?%d))", n), []any{jsonList(append([]string{}, sc.Except...))}
}

// ExpiredEpisodes implements engine.Tx.
func (t *tx) ExpiredEpisodes(sc ledger.Scope, cuts []ledger.Cutoff, def string, limit int) ([]ledger.EpisodeRef, error) {
	where, args := scopeSQL(sc, 3)
	args = append([]any{limit, def}, args...)
	var conds []string
	for _, c := range cuts {
		conds = append(conds, fmt.Sprintf("(coalesce(retention, ?2) = ?%d AND recorded_at <= ?%d)", len(args)+1, len(args)+2))
		args = append(args, c.Class, c.Before)
	}
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT tenant, episode_id FROM episodes WHERE `+where+` AND (`+strings.Join(conds, " OR ")+`)
		ORDER BY tenant, episode_id LIMIT ?1`, args...)
	if err != nil {
		return nil, fmt.Errorf("expire: %w", err)
	}
	defer rows.Close()
	var out []ledger.EpisodeRef
	for rows.Next() {
		var r ledger.EpisodeRef
		if err := rows.Scan(&r.Tenant, &r.ID); err != nil {
			return nil, fmt.Errorf("expire: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("expire: %w", err)
	}
	return out, nil
}

// ExpiredFacts implements engine.Tx.
func (t *tx) ExpiredFacts(sc ledger.Scope, cuts []ledger.Cutoff, limit int) ([]engine.FactRef, error) {
	where, args := scopeSQL(sc, 2)
	args = append([]any{limit}, args...)
	var conds []string
	for _, c := range cuts {
		conds = append(conds, fmt.Sprintf("(attribute = ?%d AND recorded_at <= ?%d)", len(args)+1, len(args)+2))
		args = append(args, c.Class, c.Before)
	}
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT tenant, fact_id FROM facts WHERE `+where+` AND (`+strings.Join(conds, " OR ")+`)
		ORDER BY tenant, fact_id LIMIT ?1`, args...)
	if err != nil {
		return nil, fmt.Errorf("expire: %w", err)
	}
	defer rows.Close()
	var out []engine.FactRef
	for rows.Next() {
		var r engine.FactRef
		if err := rows.Scan(&r.Tenant, &r.ID); err != nil {
			return nil, fmt.Errorf("expire: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("expire: %w", err)
	}
	return out, nil
}

// InsertReceipt implements engine.Tx.
func (t *tx) InsertReceipt(rc sgam.Receipt) error {
	body, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	_, err = t.exec("record the receipt", `INSERT INTO audit (tenant, audit_id, actor, at, kind, target, receipt) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		rc.Tenant, rc.ID, rc.Actor, sgam.Micros(rc.At), rc.Kind, rc.Target, string(body))
	return err
}

// Compact implements engine.Reader: checkpoint the WAL into the file,
// rebuild the file (VACUUM: freed pages and their old contents go), and
// truncate the WAL, which held the old page images, to nothing.
func (s *db) Compact(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// The background checkpointer holds the checkpoint lock while it runs,
	// which would make the truncating checkpoint busy: pause it.
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	checkpoint := func() error {
		var busy, log, done int
		if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil {
			return mapErr(fmt.Errorf("compact: checkpoint: %w", err))
		}
		if busy != 0 {
			return sgam.Errorf(sgam.Unavailable, "", "compact: a reader kept the write-ahead log from being truncated; run compact again when the store is idle")
		}
		return nil
	}
	// Merge the full-text index into one segment: what deletes left in
	// the index's pages (secure-delete removes the terms; merging drops
	// the rest) goes before VACUUM rewrites the file.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO search_fts (search_fts) VALUES ('optimize')`); err != nil {
		return mapErr(fmt.Errorf("compact: merge the search index: %w", err))
	}
	if err := checkpoint(); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
		return mapErr(fmt.Errorf("compact: vacuum: %w", err))
	}
	if err := checkpoint(); err != nil {
		return err
	}
	return s.compactQueue(ctx)
}
