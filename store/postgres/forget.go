package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Forgetting deletes rows for real (DESIGN 5), in one transaction that
// takes the advisory locks of the keys it touches, as writes do, so that a
// concurrent write to those keys waits for it. Deleted tuples stay in
// their pages until VACUUM marks the space reusable and new rows overwrite
// it (or VACUUM FULL rewrites the table); see Compact and docs/lifecycle.md.
//
// Fact ids come from the fact_ids sequence and are never reused. The
// transaction time is the clock's (or the server's), at least the latest
// this process wrote, the tx_floor, and the recorded_at of every row it
// retracts; tx_floor is raised to it, so later writes never happen before
// a forget.

// forgetter is the state of one forget or expiry transaction.
type forgetter struct {
	s   *Store
	ctx context.Context
	tx  pgx.Tx

	base  int64 // the clock, txHigh and tx_floor at the start
	now   int64 // the transaction instant, once fixed
	fixed bool
}

func (s *Store) startForget(ctx context.Context, tx pgx.Tx) (*forgetter, time.Time, error) {
	var dbNow time.Time
	var floor int64
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp(), (SELECT value FROM sgam_meta WHERE key = 'tx_floor')`).Scan(&dbNow, &floor); err != nil {
		return nil, dbNow, err
	}
	if s.clock != nil {
		dbNow = s.clock.Now()
	}
	return &forgetter{s: s, ctx: ctx, tx: tx, base: max(sgam.Micros(dbNow), s.txHigh.Load(), floor)}, dbNow, nil
}

// instant fixes the transaction instant, at least atLeast (the recorded_at
// of rows to retract), and returns it.
func (f *forgetter) instant(atLeast int64) (int64, error) {
	if !f.fixed {
		f.now, f.fixed = max(f.base, atLeast), true
		return f.now, nil
	}
	if atLeast > f.now {
		return 0, sgam.Errorf(sgam.Unavailable, "", "a row to mend was recorded after this transaction's instant (clocks disagree); try again")
	}
	return f.now, nil
}

// finish records the receipts, raises tx_floor to the transaction instant
// and returns it.
func (f *forgetter) finish(rcs []*sgam.Receipt) (int64, error) {
	now, err := f.instant(0)
	if err != nil {
		return 0, err
	}
	for _, rc := range rcs {
		rc.At = sgam.FromMicros(now)
		ledger.Finish(rc)
		body, err := json.Marshal(rc)
		if err != nil {
			return 0, err
		}
		if _, err := f.tx.Exec(f.ctx, `INSERT INTO audit (tenant_id, audit_id, actor, at, kind, target, receipt) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			rc.Tenant, rc.ID, rc.Actor, rc.At, rc.Kind, rc.Target, string(body)); err != nil {
			return 0, err
		}
	}
	_, err = f.tx.Exec(f.ctx, `UPDATE sgam_meta SET value = greatest(value, $1) WHERE key = 'tx_floor'`, now)
	return now, err
}

// lock takes the advisory locks of keys, as writes do.
func (f *forgetter) lock(keys []sgam.Key) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := f.tx.Exec(f.ctx, lockSQL, keyLocks(keys))
	return err
}

// Forget implements sgam.Store.
func (s *Store) Forget(ctx context.Context, r sgam.ForgetRequest) (sgam.Receipt, error) {
	r, kind, err := ledger.CheckForget(r)
	if err != nil {
		return sgam.Receipt{}, err
	}
	var rc sgam.Receipt
	var instant int64
	err = s.inTx(ctx, pgx.TxOptions{}, "forget", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, scopeSQL, r.Tenant); err != nil {
			return err
		}
		f, _, err := s.startForget(ctx, tx)
		if err != nil {
			return err
		}
		switch kind {
		case ledger.KindSubject:
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, ledger.SubjectTarget(r.Subject), 0)
			err = f.subject(r.Tenant, r.Subject, &rc)
		case ledger.KindEpisode:
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, r.Episode, 0)
			var one int
			err = tx.QueryRow(ctx, `SELECT 1 FROM episodes WHERE tenant_id = $1 AND episode_id = $2`, r.Tenant, r.Episode).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return sgam.Errorf(sgam.NotFound, "episode", "tenant %s has no episode %s", r.Tenant, r.Episode)
			}
			if err == nil {
				err = f.episodes(r.Tenant, []string{r.Episode}, nil, &rc)
			}
		case ledger.KindTenant:
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, "", 0)
			err = f.tenant(r.Tenant, &rc)
		}
		if err != nil {
			return err
		}
		instant, err = f.finish([]*sgam.Receipt{&rc})
		return err
	})
	if err != nil {
		return sgam.Receipt{}, err
	}
	raise(&s.txHigh, instant)
	return rc, nil
}

// subject deletes every row of a subject, its pending candidates, and the
// episodes that supported them and support nothing else.
func (f *forgetter) subject(tenant, subject string, rc *sgam.Receipt) error {
	rows, err := f.tx.Query(f.ctx, `SELECT DISTINCT attribute, member FROM facts WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return err
	}
	var keys []sgam.Key
	for rows.Next() {
		k := sgam.Key{Tenant: tenant, Subject: subject}
		if err := rows.Scan(&k.Attribute, &k.Member); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := f.lock(keys); err != nil {
		return err
	}
	rows, err = f.tx.Query(f.ctx, `SELECT source FROM facts WHERE tenant_id = $1 AND subject = $2 AND source IS NOT NULL
		UNION SELECT e.episode_id FROM facts f JOIN evidence e ON e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id
			WHERE f.tenant_id = $1 AND f.subject = $2
		UNION SELECT source FROM pending WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return err
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if _, err := f.tx.Exec(f.ctx, `DELETE FROM evidence e USING facts f
		WHERE f.tenant_id = $1 AND f.subject = $2 AND e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id`, tenant, subject); err != nil {
		return err
	}
	rows, err = f.tx.Query(f.ctx, `DELETE FROM facts WHERE tenant_id = $1 AND subject = $2 RETURNING fact_id`, tenant, subject)
	if err != nil {
		return err
	}
	if rc.FactIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return err
	}
	rc.FactsDeleted = len(rc.FactIDs)
	tag, err := f.tx.Exec(f.ctx, `DELETE FROM pending WHERE tenant_id = $1 AND subject = $2`, tenant, subject)
	if err != nil {
		return err
	}
	rc.PendingDeleted = int(tag.RowsAffected())
	if len(candidates) == 0 {
		return nil
	}
	rows, err = f.tx.Query(f.ctx, `DELETE FROM episodes ep
		WHERE ep.tenant_id = $1 AND ep.episode_id = ANY($2)
		  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = $1 AND f.source = ep.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant_id = $1 AND e.episode_id = ep.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.tenant_id = $1 AND p.source = ep.episode_id)
		RETURNING ep.episode_id`, tenant, candidates)
	if err != nil {
		return err
	}
	if rc.EpisodeIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	rc.EpisodesDeleted = len(rc.EpisodeIDs)
	return nil
}

// tenant deletes everything of a tenant but its audit.
func (f *forgetter) tenant(tenant string, rc *sgam.Receipt) error {
	if _, err := f.tx.Exec(f.ctx, `DELETE FROM evidence WHERE tenant_id = $1`, tenant); err != nil {
		return err
	}
	rows, err := f.tx.Query(f.ctx, `DELETE FROM facts WHERE tenant_id = $1 RETURNING fact_id`, tenant)
	if err != nil {
		return err
	}
	if rc.FactIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return err
	}
	rc.FactsDeleted = len(rc.FactIDs)
	tag, err := f.tx.Exec(f.ctx, `DELETE FROM pending WHERE tenant_id = $1`, tenant)
	if err != nil {
		return err
	}
	rc.PendingDeleted = int(tag.RowsAffected())
	rows, err = f.tx.Query(f.ctx, `DELETE FROM episodes WHERE tenant_id = $1 RETURNING episode_id`, tenant)
	if err != nil {
		return err
	}
	if rc.EpisodeIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	rc.EpisodesDeleted = len(rc.EpisodeIDs)
	return nil
}

// keepFunc says whether a fact row's attribute retention keeps it once no
// episode supports it (expiry); nil keeps nothing (Forget).
type keepFunc func(attribute string, recordedAt int64) bool

// doomed is a fact row to delete.
type doomed struct {
	id       int64
	key      sgam.Key
	believed bool
}

// episodesTouchSQL lists the rows that cite any of a tenant's episodes $2,
// as source or evidence.
const episodesTouchSQL = `WITH t AS (
		SELECT f.fact_id FROM facts f WHERE f.tenant_id = $1 AND f.source = ANY($2)
		UNION SELECT e.fact_id FROM evidence e WHERE e.tenant_id = $1 AND e.episode_id = ANY($2))
	SELECT %s FROM t JOIN facts f ON f.tenant_id = $1 AND f.fact_id = t.fact_id`

// episodes forgets a set of episodes of one tenant: rows they alone
// support go (their neighbours mended), rows with other evidence lose them,
// rows that keep (expiry) lose them and are kept by the retention actor;
// then the episodes' pending candidates and the episodes themselves go.
func (f *forgetter) episodes(tenant string, ids []string, keep keepFunc, rc *sgam.Receipt) error {
	rows, err := f.tx.Query(f.ctx, fmt.Sprintf(episodesTouchSQL, `DISTINCT f.subject, f.attribute, f.member`), tenant, ids)
	if err != nil {
		return err
	}
	var keys []sgam.Key
	for rows.Next() {
		k := sgam.Key{Tenant: tenant}
		if err := rows.Scan(&k.Subject, &k.Attribute, &k.Member); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := f.lock(keys); err != nil {
		return err
	}
	// Then lock the episodes, in the order writes take their locks (keys,
	// then the episodes they cite): from here on no write can cite them.
	if _, err := f.tx.Exec(f.ctx, `SELECT 1 FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2) ORDER BY episode_id FOR UPDATE`, tenant, ids); err != nil {
		return err
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	rows, err = f.tx.Query(f.ctx, fmt.Sprintf(episodesTouchSQL, `f.fact_id, f.subject, f.attribute, f.member, coalesce(f.source, ''), coalesce(f.actor, ''),
		f.retracted_at IS NULL, f.recorded_at,
		coalesce((SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e
			WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id), '{}')`)+` ORDER BY f.fact_id`, tenant, ids)
	if err != nil {
		return err
	}
	var chIDs []int64
	var chSources, chActors []*string
	var prIDs []int64
	var prEpisodes []string
	var dead []doomed
	for rows.Next() {
		var sp ledger.Support
		k := sgam.Key{Tenant: tenant}
		var believed bool
		var recordedAt time.Time
		if err := rows.Scan(&sp.ID, &k.Subject, &k.Attribute, &k.Member, &sp.Source, &sp.Actor, &believed, &recordedAt, &sp.Evidence); err != nil {
			rows.Close()
			return err
		}
		out := ledger.Unsupport(sp, func(e string) bool { return gone[e] }, keep != nil && keep(k.Attribute, sgam.Micros(recordedAt)))
		switch out.Fate {
		case ledger.Untouched:
			continue
		case ledger.Deleted:
			dead = append(dead, doomed{sp.ID, k, believed})
			rc.FactIDs = append(rc.FactIDs, sp.ID)
			rc.FactsDeleted++
			continue
		case ledger.Retained:
			rc.FactsRetained++
		default:
			rc.LinksRemoved++
		}
		if out.Source != sp.Source || out.Actor != sp.Actor {
			chIDs, chSources, chActors = append(chIDs, sp.ID), append(chSources, nullString(out.Source)), append(chActors, nullString(out.Actor))
		}
		if out.Fate == ledger.Promoted {
			prIDs, prEpisodes = append(prIDs, sp.ID), append(prEpisodes, out.Source)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	bt := &pgx.Batch{}
	if len(chIDs) > 0 {
		bt.Queue(`UPDATE facts f SET source = u.s, actor = u.a FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u(id, s, a)
			WHERE f.tenant_id = $1 AND f.fact_id = u.id`, tenant, chIDs, chSources, chActors)
	}
	if len(prIDs) > 0 {
		bt.Queue(`DELETE FROM evidence e USING unnest($2::bigint[], $3::text[]) AS p(id, ep)
			WHERE e.tenant_id = $1 AND e.fact_id = p.id AND e.episode_id = p.ep`, tenant, prIDs, prEpisodes)
	}
	bt.Queue(`DELETE FROM evidence WHERE tenant_id = $1 AND episode_id = ANY($2)`, tenant, ids)
	if err := f.tx.SendBatch(f.ctx, bt).Close(); err != nil {
		return err
	}
	if err := f.remove(tenant, dead, rc); err != nil {
		return err
	}
	tag, err := f.tx.Exec(f.ctx, `DELETE FROM pending WHERE tenant_id = $1 AND source = ANY($2)`, tenant, ids)
	if err != nil {
		return err
	}
	rc.PendingDeleted += int(tag.RowsAffected())
	rows, err = f.tx.Query(f.ctx, `DELETE FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2) RETURNING episode_id`, tenant, ids)
	if err != nil {
		return err
	}
	deleted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	rc.EpisodeIDs = append(rc.EpisodeIDs, deleted...)
	rc.EpisodesDeleted += len(deleted)
	return nil
}

// remove deletes fact rows of one tenant and mends the believed rows of
// their keys: the believed predecessor of a deleted believed row is
// retracted and re-inserted over the deleted row's window
// (ledger.PlanMend). Pointers at the deleted rows (supersedes, a
// candidate's conflicts_with) are cleared. The caller holds the keys' locks.
func (f *forgetter) remove(tenant string, dead []doomed, rc *sgam.Receipt) error {
	if len(dead) == 0 {
		return nil
	}
	isDead := make(map[int64]bool, len(dead))
	var ids []int64
	var subjects, attributes, members []string
	var mendSubjects, mendAttributes, mendMembers []string
	seen, mendSeen := map[sgam.Key]bool{}, map[sgam.Key]bool{}
	for _, d := range dead {
		isDead[d.id] = true
		ids = append(ids, d.id)
		if !seen[d.key] {
			seen[d.key] = true
			subjects, attributes, members = append(subjects, d.key.Subject), append(attributes, d.key.Attribute), append(members, d.key.Member)
		}
		if d.believed && !mendSeen[d.key] {
			mendSeen[d.key] = true
			mendSubjects, mendAttributes, mendMembers = append(mendSubjects, d.key.Subject), append(mendAttributes, d.key.Attribute), append(mendMembers, d.key.Member)
		}
	}
	var mends []ledger.Mend
	var latest int64 // the newest recorded_at among the rows to retract
	if len(mendSubjects) > 0 {
		rows, err := f.tx.Query(f.ctx, `SELECT k.i, f.fact_id, f.valid_from, f.valid_to, f.recorded_at
			FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k(s, a, m, i)
			JOIN LATERAL (SELECT * FROM facts f WHERE f.tenant_id = $1 AND f.subject = k.s AND f.attribute = k.a AND f.member = k.m
				AND coalesce(f.retracted_at, 'infinity') = 'infinity' OFFSET 0) f ON true`,
			tenant, mendSubjects, mendAttributes, mendMembers)
		if err != nil {
			return err
		}
		believed := make([][]temporal.Row, len(mendSubjects))
		recorded := map[int64]int64{}
		for rows.Next() {
			var i int64
			var r temporal.Row
			var validFrom, recordedAt time.Time
			var validTo *time.Time
			if err := rows.Scan(&i, &r.ID, &validFrom, &validTo, &recordedAt); err != nil {
				rows.Close()
				return err
			}
			r.ValidFrom, r.ValidTo, r.RecordedAt, r.RetractedAt = sgam.Micros(validFrom), openOr(validTo), sgam.Micros(recordedAt), temporal.Open
			recorded[r.ID] = r.RecordedAt
			believed[i-1] = append(believed[i-1], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, rs := range believed {
			for _, m := range ledger.PlanMend(rs, func(id int64) bool { return isDead[id] }) {
				mends = append(mends, m)
				latest = max(latest, recorded[m.Of])
			}
		}
	}
	bt := &pgx.Batch{}
	bt.Queue(`DELETE FROM evidence WHERE tenant_id = $1 AND fact_id = ANY($2)`, tenant, ids)
	bt.Queue(`WITH d AS (DELETE FROM facts WHERE tenant_id = $1 AND fact_id = ANY($2) RETURNING 1)
		SELECT sgam_check(count(*) = $3, 'delete facts: a row was no longer there') FROM d`, tenant, ids, len(ids))
	bt.Queue(`UPDATE facts f SET supersedes = NULL FROM unnest($2::text[], $3::text[], $4::text[]) AS k(s, a, m)
		WHERE f.tenant_id = $1 AND f.subject = k.s AND f.attribute = k.a AND f.member = k.m AND f.supersedes = ANY($5)`,
		tenant, subjects, attributes, members, ids)
	bt.Queue(`UPDATE pending SET conflicts_with = NULL WHERE tenant_id = $1 AND conflicts_with = ANY($2)`, tenant, ids)
	if len(mends) > 0 {
		now, err := f.instant(latest)
		if err != nil {
			return err
		}
		var newIDs []int64
		rows, err := f.tx.Query(f.ctx, `SELECT nextval('fact_ids') FROM generate_series(1, $1) ORDER BY 1`, len(mends))
		if err != nil {
			return err
		}
		if newIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		of := make([]int64, len(mends))
		validTo := make([]*time.Time, len(mends))
		for i, m := range mends {
			of[i], validTo[i] = m.Of, ledger.TimeOrNil(m.ValidTo)
		}
		at := sgam.FromMicros(now)
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
		rc.FactsMended += len(mends)
	}
	return f.tx.SendBatch(f.ctx, bt).Close()
}

// Receipts implements sgam.Store.
func (s *Store) Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	out := []sgam.Receipt{}
	err := s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, "list receipts", func(tx pgx.Tx) error {
		out = out[:0]
		if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
			return err
		}
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

// Expire implements sgam.Store: transaction after transaction, each of at
// most ledger.ExpireBatch episodes and as many expired fact rows, until
// nothing more has expired. Each transaction records one receipt per
// tenant it touched.
func (s *Store) Expire(ctx context.Context) ([]sgam.Receipt, error) {
	out := []sgam.Receipt{}
	for {
		var rcs []sgam.Receipt
		var more bool
		var instant int64
		err := s.inTx(ctx, pgx.TxOptions{}, "expire", func(tx pgx.Tx) error {
			var err error
			rcs, more, instant, err = s.expireBatch(ctx, tx)
			return err
		})
		if err != nil {
			return out, err
		}
		raise(&s.txHigh, instant)
		out = append(out, rcs...)
		if !more {
			return out, nil
		}
	}
}

func (s *Store) expireBatch(ctx context.Context, tx pgx.Tx) ([]sgam.Receipt, bool, int64, error) {
	if _, err := tx.Exec(ctx, scopeSQL, allTenants); err != nil {
		return nil, false, 0, err
	}
	gov, err := s.loadGov(ctx, tx, -1)
	if err != nil {
		return nil, false, 0, err
	}
	f, now, err := s.startForget(ctx, tx)
	if err != nil {
		return nil, false, 0, err
	}
	episodeCuts, attributeCuts := gov.EpisodeCutoffs(now), gov.AttributeCutoffs(now)
	if len(episodeCuts) == 0 && len(attributeCuts) == 0 {
		return nil, false, 0, nil
	}

	// The expired episodes: their class (their own, else the schema's
	// episode_retention) is finite and has run out.
	type ref struct{ tenant, id string }
	var expired []ref
	if len(episodeCuts) > 0 {
		def := ""
		classes, cutoffs := make([]string, len(episodeCuts)), make([]time.Time, len(episodeCuts))
		for i, c := range episodeCuts {
			if c.Default {
				def = c.Class
			}
			classes[i], cutoffs[i] = c.Class, sgam.FromMicros(c.Before)
		}
		rows, err := tx.Query(ctx, `SELECT e.tenant_id, e.episode_id FROM episodes e
			JOIN unnest($1::text[], $2::timestamptz[]) AS c(class, cutoff) ON coalesce(e.retention, $3) = c.class AND e.recorded_at <= c.cutoff
			ORDER BY e.tenant_id, e.episode_id LIMIT $4`, classes, cutoffs, def, ledger.ExpireBatch)
		if err != nil {
			return nil, false, 0, err
		}
		for rows.Next() {
			var r ref
			if err := rows.Scan(&r.tenant, &r.id); err != nil {
				rows.Close()
				return nil, false, 0, err
			}
			expired = append(expired, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, false, 0, err
		}
	}
	// The expired fact rows: their attribute's class is finite and has run
	// out.
	type factRef struct {
		tenant string
		id     int64
	}
	findFacts := func() ([]factRef, error) {
		if len(attributeCuts) == 0 {
			return nil, nil
		}
		attrs, cutoffs := make([]string, len(attributeCuts)), make([]time.Time, len(attributeCuts))
		for i, c := range attributeCuts {
			attrs[i], cutoffs[i] = c.Class, sgam.FromMicros(c.Before)
		}
		rows, err := tx.Query(ctx, `SELECT f.tenant_id, f.fact_id FROM facts f
			JOIN unnest($1::text[], $2::timestamptz[]) AS c(attribute, cutoff) ON f.attribute = c.attribute AND f.recorded_at <= c.cutoff
			ORDER BY f.tenant_id, f.fact_id LIMIT $3`, attrs, cutoffs, ledger.ExpireBatch)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []factRef
		for rows.Next() {
			var r factRef
			if err := rows.Scan(&r.tenant, &r.id); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
	}
	facts, err := findFacts()
	if err != nil {
		return nil, false, 0, err
	}
	if len(expired) == 0 && len(facts) == 0 {
		return nil, false, 0, nil
	}

	receipts := map[string]*sgam.Receipt{}
	var order []*sgam.Receipt
	receipt := func(tenant string) *sgam.Receipt {
		rc := receipts[tenant]
		if rc == nil {
			r := ledger.NewReceipt(tenant, ledger.ActorRetention, ledger.KindExpire, "", 0)
			rc = &r
			receipts[tenant] = rc
			order = append(order, rc)
		}
		return rc
	}
	keep := func(attribute string, recordedAt int64) bool { return gov.RetentionKeeps(attribute, recordedAt, now) }
	for i := 0; i < len(expired); {
		tenant := expired[i].tenant
		var ids []string
		for ; i < len(expired) && expired[i].tenant == tenant; i++ {
			ids = append(ids, expired[i].id)
		}
		if err := f.episodes(tenant, ids, keep, receipt(tenant)); err != nil {
			return nil, false, 0, err
		}
	}
	// Rows deleted with the episodes are gone from the list; mended copies
	// are recorded now and have not expired.
	if len(expired) > 0 {
		if facts, err = findFacts(); err != nil {
			return nil, false, 0, err
		}
	}
	for i := 0; i < len(facts); {
		tenant := facts[i].tenant
		var ids []int64
		for ; i < len(facts) && facts[i].tenant == tenant; i++ {
			ids = append(ids, facts[i].id)
		}
		if err := f.expireFacts(tenant, ids, receipt(tenant)); err != nil {
			return nil, false, 0, err
		}
	}
	instant, err := f.finish(order)
	if err != nil {
		return nil, false, 0, err
	}
	out := make([]sgam.Receipt, len(order))
	for i, rc := range order {
		out[i] = *rc
	}
	return out, len(expired) == ledger.ExpireBatch || len(facts) == ledger.ExpireBatch, instant, nil
}

// expireFacts deletes expired fact rows of one tenant, mending their keys.
func (f *forgetter) expireFacts(tenant string, ids []int64, rc *sgam.Receipt) error {
	load := func() ([]doomed, error) {
		rows, err := f.tx.Query(f.ctx, `SELECT fact_id, subject, attribute, member, retracted_at IS NULL FROM facts
			WHERE tenant_id = $1 AND fact_id = ANY($2) ORDER BY fact_id`, tenant, ids)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []doomed
		for rows.Next() {
			d := doomed{key: sgam.Key{Tenant: tenant}}
			if err := rows.Scan(&d.id, &d.key.Subject, &d.key.Attribute, &d.key.Member, &d.believed); err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, rows.Err()
	}
	dead, err := load()
	if err != nil {
		return err
	}
	keys := make([]sgam.Key, len(dead))
	for i, d := range dead {
		keys[i] = d.key
	}
	if err := f.lock(keys); err != nil {
		return err
	}
	if dead, err = load(); err != nil { // as they are now that the keys are locked
		return err
	}
	for _, d := range dead {
		rc.FactIDs = append(rc.FactIDs, d.id)
		rc.FactsDeleted++
	}
	return f.remove(tenant, dead, rc)
}

// Compact implements sgam.Store: VACUUM every table of sgam, so that the
// space of deleted tuples is marked reusable (and the pages at the end of a
// table are returned to the file system). The bytes of deleted rows stay in
// their pages until new rows overwrite them; only VACUUM FULL, which locks
// each table while it rewrites it, removes them at once (docs/lifecycle.md).
// A table the connecting role does not own is skipped by PostgreSQL with a
// warning.
func (s *Store) Compact(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return mapErr("compact", err)
	}
	defer c.Release()
	for _, table := range []string{"pending", "evidence", "facts", "episodes", "audit"} {
		// VACUUM runs outside a transaction: the simple protocol sends it alone.
		if _, err := c.Conn().PgConn().Exec(ctx, "VACUUM "+table).ReadAll(); err != nil {
			return mapErr("compact: vacuum "+table, err)
		}
	}
	return nil
}
