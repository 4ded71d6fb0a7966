package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Forgetting deletes rows for real (DESIGN 5); the engine decides what
// goes, these statements delete it, taking the advisory locks of the keys
// they touch, as writes do, so that a concurrent write to those keys waits
// for it. Deleted tuples stay in their pages until VACUUM marks the space
// reusable and new rows overwrite it (or VACUUM FULL rewrites the table);
// see Compact and docs/lifecycle.md.
//
// Fact ids come from the fact_ids sequence and are never reused. The
// transaction's instant is at least the recorded_at of every row it
// retracts, and tx_floor is raised to it at commit, so later writes never
// happen before a forget.

// PrepareForget implements engine.Tx.
func (t *tx) PrepareForget() error {
	t.raiseFloor = true
	return nil
}

// Secret implements engine.Tx.
func (t *tx) Secret() ([]byte, error) {
	fresh := make([]byte, 32)
	rand.Read(fresh)
	// Two forgets creating it at once agree on the first one stored.
	if _, err := t.exec("create the store's secret", `INSERT INTO secrets (name, value) VALUES ('receipt', $1) ON CONFLICT DO NOTHING`, fresh); err != nil {
		return nil, err
	}
	var secret []byte
	if err := t.queryRow(`SELECT value FROM secrets WHERE name = 'receipt'`).Scan(&secret); err != nil {
		return nil, fmt.Errorf("read the store's secret: %w", err)
	}
	return secret, nil
}

// HasEpisode implements engine.Tx.
func (t *tx) HasEpisode(tenant, id string) (bool, error) {
	var one int
	err := t.queryRow(`SELECT 1 FROM episodes WHERE tenant_id = $1 AND episode_id = $2`, tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// lock takes the advisory locks of keys, as writes do.
func (t *tx) lock(keys []sgam.Key) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := t.exec("lock keys", lockSQL, keyLocks(keys))
	return err
}

// ForgetSubject implements engine.Tx.
func (t *tx) ForgetSubject(tenant, subject string) (engine.Deleted, error) {
	var d engine.Deleted
	rows, err := t.query(`SELECT DISTINCT attribute, member FROM facts WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return d, err
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.Key, error) {
		k := sgam.Key{Tenant: tenant, Subject: subject}
		return k, r.Scan(&k.Attribute, &k.Member)
	})
	if err != nil {
		return d, err
	}
	if err := t.lock(keys); err != nil {
		return d, err
	}
	// The episodes that supported the subject: sources, evidence and the
	// sources of its pending candidates.
	rows, err = t.query(`SELECT source FROM facts WHERE tenant_id = $1 AND subject = $2 AND source IS NOT NULL
		UNION SELECT e.episode_id FROM facts f JOIN evidence e ON e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id
			WHERE f.tenant_id = $1 AND f.subject = $2
		UNION SELECT source FROM pending WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return d, err
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return d, err
	}
	if _, err := t.exec("forget subject", `DELETE FROM evidence e USING facts f
		WHERE f.tenant_id = $1 AND f.subject = $2 AND e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id`, tenant, subject); err != nil {
		return d, err
	}
	if rows, err = t.query(`DELETE FROM facts WHERE tenant_id = $1 AND subject = $2 RETURNING fact_id`, tenant, subject); err != nil {
		return d, err
	}
	if d.FactIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return d, err
	}
	tag, err := t.exec("forget subject", `DELETE FROM pending WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return d, err
	}
	d.Pending = int(tag.RowsAffected())
	if len(candidates) == 0 {
		return d, nil
	}
	// Those of them that no longer support any fact row or candidate go.
	rows, err = t.query(`DELETE FROM episodes ep
		WHERE ep.tenant_id = $1 AND ep.episode_id = ANY($2)
		  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = $1 AND f.source = ep.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant_id = $1 AND e.episode_id = ep.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.tenant_id = $1 AND p.source = ep.episode_id)
		RETURNING ep.episode_id`, tenant, candidates)
	if err != nil {
		return d, err
	}
	d.EpisodeIDs, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return d, err
}

// ForgetTenant implements engine.Tx.
func (t *tx) ForgetTenant(tenant string) (engine.Deleted, error) {
	var d engine.Deleted
	if _, err := t.exec("forget tenant", `DELETE FROM evidence WHERE tenant_id = $1`, tenant); err != nil {
		return d, err
	}
	rows, err := t.query(`DELETE FROM facts WHERE tenant_id = $1 RETURNING fact_id`, tenant)
	if err != nil {
		return d, err
	}
	if d.FactIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return d, err
	}
	tag, err := t.exec("forget tenant", `DELETE FROM pending WHERE tenant_id = $1`, tenant)
	if err != nil {
		return d, err
	}
	d.Pending = int(tag.RowsAffected())
	if rows, err = t.query(`DELETE FROM episodes WHERE tenant_id = $1 RETURNING episode_id`, tenant); err != nil {
		return d, err
	}
	if d.EpisodeIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return d, err
	}
	return d, t.deleteJobs(tenant, nil, true)
}

// episodesCitingSQL lists the rows that cite any of a tenant's episodes
// $2, as source or evidence.
const episodesCitingSQL = `WITH c AS (
		SELECT f.fact_id FROM facts f WHERE f.tenant_id = $1 AND f.source = ANY($2)
		UNION SELECT e.fact_id FROM evidence e WHERE e.tenant_id = $1 AND e.episode_id = ANY($2))
	SELECT %s FROM c JOIN facts f ON f.tenant_id = $1 AND f.fact_id = c.fact_id`

// CitingFacts implements engine.Tx.
func (t *tx) CitingFacts(tenant string, episodes []string) ([]engine.Citing, error) {
	rows, err := t.query(fmt.Sprintf(episodesCitingSQL, `DISTINCT f.subject, f.attribute, f.member`), tenant, episodes)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.Key, error) {
		k := sgam.Key{Tenant: tenant}
		return k, r.Scan(&k.Subject, &k.Attribute, &k.Member)
	})
	if err != nil {
		return nil, err
	}
	if err := t.lock(keys); err != nil {
		return nil, err
	}
	// Then lock the episodes, in the order writes take their locks (keys,
	// then the episodes they cite): from here on no write can cite them.
	if _, err := t.exec("lock episodes", `SELECT 1 FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2) ORDER BY episode_id FOR UPDATE`, tenant, episodes); err != nil {
		return nil, err
	}
	rows, err = t.query(fmt.Sprintf(episodesCitingSQL, `f.fact_id, f.subject, f.attribute, f.member, coalesce(f.source, ''), coalesce(f.actor, ''),
		f.retracted_at IS NULL, f.recorded_at,
		coalesce((SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e
			WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id), '{}')`)+` ORDER BY f.fact_id`, tenant, episodes)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Citing, error) {
		c := engine.Citing{Key: sgam.Key{Tenant: tenant}}
		var recordedAt time.Time
		err := r.Scan(&c.Support.ID, &c.Key.Subject, &c.Key.Attribute, &c.Key.Member, &c.Support.Source, &c.Support.Actor,
			&c.Believed, &recordedAt, &c.Support.Evidence)
		c.RecordedAt = sgam.Micros(recordedAt)
		return c, err
	})
}

// SetSupport implements engine.Tx.
func (t *tx) SetSupport(tenant string, changes []engine.SupportChange) error {
	var ids, prIDs []int64
	var sources, actors []*string
	var prEpisodes []string
	for _, c := range changes {
		ids, sources, actors = append(ids, c.ID), append(sources, nullString(c.Source)), append(actors, nullString(c.Actor))
		if c.Promoted != "" {
			prIDs, prEpisodes = append(prIDs, c.ID), append(prEpisodes, c.Promoted)
		}
	}
	bt := &pgx.Batch{}
	bt.Queue(`UPDATE facts f SET source = u.s, actor = u.a FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u(id, s, a)
		WHERE f.tenant_id = $1 AND f.fact_id = u.id`, tenant, ids, sources, actors)
	if len(prIDs) > 0 {
		bt.Queue(`DELETE FROM evidence e USING unnest($2::bigint[], $3::text[]) AS p(id, ep)
			WHERE e.tenant_id = $1 AND e.fact_id = p.id AND e.episode_id = p.ep`, tenant, prIDs, prEpisodes)
	}
	return t.send(bt)
}

// Unlink implements engine.Tx.
func (t *tx) Unlink(tenant string, episodes []string) error {
	_, err := t.exec("forget episodes", `DELETE FROM evidence WHERE tenant_id = $1 AND episode_id = ANY($2)`, tenant, episodes)
	return err
}

// FactsByID implements engine.Tx: read, lock the keys, read again as they
// are once locked.
func (t *tx) FactsByID(tenant string, ids []int64) ([]engine.Doomed, error) {
	load := func() ([]engine.Doomed, error) {
		rows, err := t.query(`SELECT fact_id, subject, attribute, member, retracted_at IS NULL FROM facts
			WHERE tenant_id = $1 AND fact_id = ANY($2) ORDER BY fact_id`, tenant, ids)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Doomed, error) {
			d := engine.Doomed{Key: sgam.Key{Tenant: tenant}}
			return d, r.Scan(&d.ID, &d.Key.Subject, &d.Key.Attribute, &d.Key.Member, &d.Believed)
		})
	}
	dead, err := load()
	if err != nil {
		return nil, err
	}
	keys := make([]sgam.Key, len(dead))
	for i, d := range dead {
		keys[i] = d.Key
	}
	if err := t.lock(keys); err != nil {
		return nil, err
	}
	return load()
}

// keyArrays spells keys as column arrays for unnest.
func keyArrays(keys []sgam.Key) (subjects, attributes, members []string) {
	for _, k := range keys {
		subjects, attributes, members = append(subjects, k.Subject), append(attributes, k.Attribute), append(members, k.Member)
	}
	return
}

// Believed implements engine.Tx.
func (t *tx) Believed(tenant string, keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	subjects, attributes, members := keyArrays(keys)
	rows, err := t.query(`SELECT k.i, f.fact_id, f.valid_from, f.valid_to, f.recorded_at
		FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k(s, a, m, i)
		JOIN LATERAL (SELECT * FROM facts f WHERE f.tenant_id = $1 AND f.subject = k.s AND f.attribute = k.a AND f.member = k.m
			AND coalesce(f.retracted_at, 'infinity') = 'infinity' OFFSET 0) f ON true`,
		tenant, subjects, attributes, members)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[sgam.Key][]temporal.Row, len(keys))
	for rows.Next() {
		var i int64
		var r temporal.Row
		var validFrom, recordedAt time.Time
		var validTo *time.Time
		if err := rows.Scan(&i, &r.ID, &validFrom, &validTo, &recordedAt); err != nil {
			return nil, err
		}
		r.ValidFrom, r.ValidTo, r.RecordedAt, r.RetractedAt = sgam.Micros(validFrom), openOr(validTo), sgam.Micros(recordedAt), temporal.Open
		k := keys[i-1]
		out[k] = append(out[k], r)
	}
	return out, rows.Err()
}

// DeleteFacts implements engine.Tx.
func (t *tx) DeleteFacts(tenant string, ids []int64, keys []sgam.Key) error {
	subjects, attributes, members := keyArrays(keys)
	bt := &pgx.Batch{}
	bt.Queue(`DELETE FROM evidence WHERE tenant_id = $1 AND fact_id = ANY($2)`, tenant, ids)
	bt.Queue(`WITH d AS (DELETE FROM facts WHERE tenant_id = $1 AND fact_id = ANY($2) RETURNING 1)
		SELECT sgam_check(count(*) = $3, 'delete facts: a row was no longer there') FROM d`, tenant, ids, len(ids))
	bt.Queue(`UPDATE facts f SET supersedes = NULL FROM unnest($2::text[], $3::text[], $4::text[]) AS k(s, a, m)
		WHERE f.tenant_id = $1 AND f.subject = k.s AND f.attribute = k.a AND f.member = k.m AND f.supersedes = ANY($5)`,
		tenant, subjects, attributes, members, ids)
	bt.Queue(`UPDATE pending SET conflicts_with = NULL WHERE tenant_id = $1 AND conflicts_with = ANY($2)`, tenant, ids)
	return t.send(bt)
}

// Mend implements engine.Tx.
func (t *tx) Mend(tenant string, mends []ledger.Mend, now int64) error {
	rows, err := t.query(`SELECT nextval('fact_ids') FROM generate_series(1, $1) ORDER BY 1`, len(mends))
	if err != nil {
		return err
	}
	newIDs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	of := make([]int64, len(mends))
	validTo := make([]*time.Time, len(mends))
	for i, m := range mends {
		of[i], validTo[i] = m.Of, ledger.TimeOrNil(m.ValidTo)
	}
	at := sgam.FromMicros(now)
	bt := &pgx.Batch{}
	bt.Queue(`WITH r AS (
			UPDATE facts SET retracted_at = $2 WHERE tenant_id = $1 AND fact_id = ANY($3)
			AND coalesce(retracted_at, 'infinity') = 'infinity' RETURNING 1)
		SELECT sgam_check(count(*) = $4, 'mend facts: a row was no longer believed') FROM r`, tenant, at, of, len(of))
	bt.Queue(`INSERT INTO facts (tenant_id, fact_id, subject, attribute, member, value_text, valid_from, valid_to,
			recorded_at, retracted_at, supersedes, source, schema_version, actor)
		SELECT f.tenant_id, m.id, f.subject, f.attribute, f.member, f.value_text, f.valid_from, m.vt, $2, NULL, f.fact_id,
			f.source, f.schema_version, f.actor
		FROM unnest($3::bigint[], $4::bigint[], $5::timestamptz[]) AS m(id, old, vt)
		JOIN facts f ON f.tenant_id = $1 AND f.fact_id = m.old`, tenant, at, newIDs, of, validTo)
	bt.Queue(`INSERT INTO evidence (tenant_id, fact_id, episode_id, recorded_at)
		SELECT e.tenant_id, m.id, e.episode_id, e.recorded_at
		FROM unnest($2::bigint[], $3::bigint[]) AS m(id, old)
		JOIN evidence e ON e.tenant_id = $1 AND e.fact_id = m.old`, tenant, newIDs, of)
	return t.send(bt)
}

// DeletePendingOf implements engine.Tx.
func (t *tx) DeletePendingOf(tenant string, episodes []string) (int, error) {
	tag, err := t.exec("forget episodes", `DELETE FROM pending WHERE tenant_id = $1 AND source = ANY($2)`, tenant, episodes)
	return int(tag.RowsAffected()), err
}

// DeleteEpisodes implements engine.Tx.
func (t *tx) DeleteEpisodes(tenant string, ids []string) ([]string, error) {
	rows, err := t.query(`DELETE FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2) RETURNING episode_id`, tenant, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DeleteShowing implements engine.Tx. It reads every extraction record of
// the tenant: forgetting is rare, and no index knows what a prompt showed.
func (t *tx) DeleteShowing(tenant string, episodes, subjects []string, facts []int64) error {
	if len(episodes) == 0 && len(subjects) == 0 && len(facts) == 0 {
		return nil
	}
	// The fact ids are numbers, which ?| (text elements) does not match.
	_, err := t.exec("forget extraction records", `DELETE FROM extractions WHERE tenant_id = $1 AND (
		coalesce(record::jsonb -> 'context_episodes', '[]') ?| $2::text[]
		OR coalesce(record::jsonb -> 'subjects', '[]') ?| $3::text[]
		OR EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(record::jsonb -> 'shown_facts', '[]')) AS f(id)
			WHERE (f.id #>> '{}')::bigint = ANY($4::bigint[])))`,
		tenant, append([]string{}, episodes...), append([]string{}, subjects...), append([]int64{}, facts...))
	return err
}

// scopeCond spells a scope as a condition on column tenant_id of alias,
// its argument $n.
func scopeCond(sc ledger.Scope, alias string, n int) (string, any) {
	if sc.Tenant != "" {
		return fmt.Sprintf("%s.tenant_id = $%d", alias, n), sc.Tenant
	}
	return fmt.Sprintf("%s.tenant_id <> ALL($%d::text[])", alias, n), append([]string{}, sc.Except...)
}

// ExpiredEpisodes implements engine.Tx.
func (t *tx) ExpiredEpisodes(sc ledger.Scope, cuts []ledger.Cutoff, def string, limit int) ([]ledger.EpisodeRef, error) {
	classes, cutoffs := make([]string, len(cuts)), make([]time.Time, len(cuts))
	for i, c := range cuts {
		classes[i], cutoffs[i] = c.Class, sgam.FromMicros(c.Before)
	}
	cond, arg := scopeCond(sc, "e", 5)
	rows, err := t.query(`SELECT e.tenant_id, e.episode_id FROM episodes e
		JOIN unnest($1::text[], $2::timestamptz[]) AS c(class, cutoff) ON coalesce(e.retention, $3) = c.class AND e.recorded_at <= c.cutoff
		WHERE `+cond+`
		ORDER BY e.tenant_id, e.episode_id LIMIT $4`, classes, cutoffs, def, limit, arg)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.EpisodeRef, error) {
		var e ledger.EpisodeRef
		return e, r.Scan(&e.Tenant, &e.ID)
	})
}

// ExpiredFacts implements engine.Tx.
func (t *tx) ExpiredFacts(sc ledger.Scope, cuts []ledger.Cutoff, limit int) ([]engine.FactRef, error) {
	attrs, cutoffs := make([]string, len(cuts)), make([]time.Time, len(cuts))
	for i, c := range cuts {
		attrs[i], cutoffs[i] = c.Class, sgam.FromMicros(c.Before)
	}
	cond, arg := scopeCond(sc, "f", 4)
	rows, err := t.query(`SELECT f.tenant_id, f.fact_id FROM facts f
		JOIN unnest($1::text[], $2::timestamptz[]) AS c(attribute, cutoff) ON f.attribute = c.attribute AND f.recorded_at <= c.cutoff
		WHERE `+cond+`
		ORDER BY f.tenant_id, f.fact_id LIMIT $3`, attrs, cutoffs, limit, arg)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.FactRef, error) {
		var f engine.FactRef
		return f, r.Scan(&f.Tenant, &f.ID)
	})
}

// InsertReceipt implements engine.Tx.
func (t *tx) InsertReceipt(rc sgam.Receipt) error {
	body, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	_, err = t.exec("record the receipt", `INSERT INTO audit (tenant_id, audit_id, actor, at, kind, target, receipt) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		rc.Tenant, rc.ID, rc.Actor, rc.At, rc.Kind, rc.Target, string(body))
	return err
}

// Receipts implements engine.Reader.
func (s *db) Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error) {
	out := []sgam.Receipt{}
	err := s.read(ctx, tenant, "list receipts", func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT receipt FROM audit WHERE tenant_id = $1 ORDER BY at, audit_id`, tenant)
		if err != nil {
			return err
		}
		bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, b := range bodies {
			var rc sgam.Receipt
			if err := json.Unmarshal([]byte(b), &rc); err != nil {
				return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("list receipts: a stored receipt does not parse: %v", err), Err: err}
			}
			out = append(out, rc)
		}
		return nil
	})
	return out, err
}

// Compact implements engine.Reader: delete the extraction queue's job rows
// whose episode is gone (jobs.go), then VACUUM every table of sgam and the
// queue's job table, so that
// the space of deleted tuples is marked reusable (and the pages at the end
// of a table are returned to the file system). The bytes of deleted rows
// stay in their pages until new rows overwrite them; only VACUUM FULL,
// which locks each table while it rewrites it, removes them at once
// (docs/lifecycle.md). A table the connecting role does not own is skipped
// by PostgreSQL with a warning.
func (s *db) Compact(ctx context.Context) error {
	tables := []string{"pending", "evidence", "facts", "extractions", "episodes", "audit"}
	queue, err := s.sweepJobs(ctx)
	if err != nil {
		return mapErr(fmt.Errorf("compact: %w", err))
	}
	if queue {
		tables = append(tables, "river_job")
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return mapErr(fmt.Errorf("compact: %w", err))
	}
	defer c.Release()
	for _, table := range tables {
		// VACUUM runs outside a transaction: the simple protocol sends it alone.
		if _, err := c.Conn().PgConn().Exec(ctx, "VACUUM "+table).ReadAll(); err != nil {
			return mapErr(fmt.Errorf("compact: vacuum %s: %w", table, err))
		}
	}
	return nil
}

// Stats implements engine.Reader.
func (s *db) Stats(ctx context.Context, tenant string) (sgam.TenantStats, error) {
	var st sgam.TenantStats
	err := s.read(ctx, tenant, "count", func(tx pgx.Tx) error {
		st = sgam.TenantStats{Extractions: map[string]int{}, RecentSubjects: []string{}}
		err := tx.QueryRow(ctx, `SELECT
			(SELECT COUNT(DISTINCT subject) FROM facts WHERE tenant_id = $1 AND retracted_at IS NULL),
			(SELECT COUNT(*) FROM facts WHERE tenant_id = $1 AND retracted_at IS NULL),
			(SELECT COUNT(*) FROM episodes WHERE tenant_id = $1 AND kind <> 'unknown'),
			(SELECT COUNT(*) FROM pending WHERE tenant_id = $1 AND reason <> 'recurrence'),
			(SELECT COUNT(*) FROM pending WHERE tenant_id = $1 AND reason = 'recurrence'),
			(SELECT COUNT(*) FROM extract_queue WHERE tenant_id = $1)`, tenant).
			Scan(&st.Subjects, &st.Facts, &st.Episodes, &st.Pending, &st.Signals, &st.Queued)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT status, COUNT(*) FROM extractions WHERE tenant_id = $1 GROUP BY status`, tenant)
		if err != nil {
			return err
		}
		var status string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { st.Extractions[status] = n; return nil }); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT subject FROM facts WHERE tenant_id = $1 AND retracted_at IS NULL
			GROUP BY subject ORDER BY MAX(recorded_at) DESC, subject LIMIT $2`, tenant, sgam.MaxRecentSubjects)
		if err != nil {
			return err
		}
		st.RecentSubjects, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return st, err
}
