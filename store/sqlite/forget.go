package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Forgetting deletes rows for real (DESIGN 5). Every forget runs in one
// write transaction with secure_delete on, so that the pages the deleted
// rows lived on are overwritten with zeros; Compact then rewrites the file
// and truncates the WAL, which still holds the old page images until a
// checkpoint overwrites or truncates it.
//
// Fact ids are never reused: before deleting, the transaction raises meta's
// fact_id_floor to the largest id, so a receipt naming an id always means
// one row. The transaction clock is carried by the newest fact row, which
// may be deleted, so the transaction moves meta's tx_clock up to its own
// instant.

// forgetter is the state of one forget or expiry transaction.
type forgetter struct {
	s   *Store
	ctx context.Context
	tx  *writeTx
	now int64

	keys map[sgam.Key]bool
	list []sgam.Key // keys touched, for the current-read cache
}

// startForget prepares a write transaction for deleting.
func (s *Store) startForget(ctx context.Context, tx *writeTx) (*forgetter, error) {
	if _, err := s.w.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return nil, mapErr("forget", err)
	}
	now, err := tx.now()
	if err != nil {
		return nil, err
	}
	tx.observe(now)
	if _, err := s.w.ExecContext(ctx, `UPDATE meta SET value = (SELECT max(fact_id) FROM facts)
		WHERE key = 'fact_id_floor' AND value < coalesce((SELECT max(fact_id) FROM facts), 0)`); err != nil {
		return nil, mapErr("forget: keep fact ids unique", err)
	}
	return &forgetter{s: s, ctx: ctx, tx: tx, now: now, keys: map[sgam.Key]bool{}}, nil
}

func (f *forgetter) touch(k sgam.Key) {
	if !f.keys[k] {
		f.keys[k] = true
		f.list = append(f.list, k)
	}
}

func (f *forgetter) exec(what, query string, args ...any) (int64, error) {
	res, err := f.s.w.ExecContext(f.ctx, query, args...)
	if err != nil {
		return 0, mapErr(what, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// jsonList encodes ids for json_each.
func jsonList[T any](ids []T) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// Forget implements sgam.Store.
func (s *Store) Forget(ctx context.Context, r sgam.ForgetRequest) (sgam.Receipt, error) {
	r, kind, err := ledger.CheckForget(r)
	if err != nil {
		return sgam.Receipt{}, err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return sgam.Receipt{}, err
	}
	defer tx.rollback()
	f, err := s.startForget(ctx, tx)
	if err != nil {
		return sgam.Receipt{}, err
	}
	var rc sgam.Receipt
	switch kind {
	case ledger.KindSubject:
		rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, ledger.SubjectTarget(r.Subject), f.now)
		err = f.subject(r.Tenant, r.Subject, &rc)
	case ledger.KindEpisode:
		rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, r.Episode, f.now)
		var one int
		switch err = s.w.QueryRowContext(ctx, `SELECT 1 FROM episodes WHERE tenant = ? AND episode_id = ?`, r.Tenant, r.Episode).Scan(&one); {
		case err == sql.ErrNoRows:
			return rc, sgam.Errorf(sgam.NotFound, "episode", "tenant %s has no episode %s", r.Tenant, r.Episode)
		case err != nil:
			return rc, mapErr("forget", err)
		}
		err = f.episodes(r.Tenant, []string{r.Episode}, nil, &rc)
	case ledger.KindTenant:
		rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, "", f.now)
		err = f.tenant(r.Tenant, &rc)
	}
	if err != nil {
		return rc, err
	}
	if err := f.audit(&rc); err != nil {
		return rc, err
	}
	if err := tx.commit(f.list); err != nil {
		return rc, err
	}
	return rc, nil
}

// audit records a receipt in the same transaction as what it reports.
func (f *forgetter) audit(rc *sgam.Receipt) error {
	ledger.Finish(rc)
	body, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	_, err = f.exec("record the receipt", `INSERT INTO audit (tenant, audit_id, actor, at, kind, target, receipt) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		rc.Tenant, rc.ID, rc.Actor, sgam.Micros(rc.At), rc.Kind, rc.Target, string(body))
	return err
}

// subject deletes every row of a subject, its pending candidates, and the
// episodes that supported them and support nothing else.
func (f *forgetter) subject(tenant, subject string, rc *sgam.Receipt) error {
	rows, err := f.s.w.QueryContext(f.ctx, `SELECT fact_id, attribute, member FROM facts WHERE tenant = ? AND subject = ?`, tenant, subject)
	if err != nil {
		return mapErr("forget subject", err)
	}
	for rows.Next() {
		k := sgam.Key{Tenant: tenant, Subject: subject}
		var id int64
		if err := rows.Scan(&id, &k.Attribute, &k.Member); err != nil {
			rows.Close()
			return mapErr("forget subject", err)
		}
		rc.FactIDs = append(rc.FactIDs, id)
		f.touch(k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("forget subject", err)
	}
	// The episodes that supported the subject: sources, evidence and the
	// sources of its pending candidates.
	var candidates []string
	rows, err = f.s.w.QueryContext(f.ctx, `SELECT source FROM facts WHERE tenant = ?1 AND subject = ?2 AND source IS NOT NULL
		UNION SELECT e.episode_id FROM facts f JOIN evidence e ON e.fact_id = f.fact_id WHERE f.tenant = ?1 AND f.subject = ?2
		UNION SELECT source FROM pending WHERE tenant = ?1 AND subject = ?2`, tenant, subject)
	if err != nil {
		return mapErr("forget subject", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return mapErr("forget subject", err)
		}
		candidates = append(candidates, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("forget subject", err)
	}
	if _, err := f.exec("forget subject", `DELETE FROM evidence WHERE fact_id IN (SELECT fact_id FROM facts WHERE tenant = ? AND subject = ?)`, tenant, subject); err != nil {
		return err
	}
	n, err := f.exec("forget subject", `DELETE FROM facts WHERE tenant = ? AND subject = ?`, tenant, subject)
	if err != nil {
		return err
	}
	rc.FactsDeleted = int(n)
	if n, err = f.exec("forget subject", `DELETE FROM pending WHERE tenant = ? AND subject = ?`, tenant, subject); err != nil {
		return err
	}
	rc.PendingDeleted = int(n)
	return f.orphans(tenant, candidates, rc)
}

// orphans deletes those of the candidate episodes that no longer support
// any fact row or pending candidate.
func (f *forgetter) orphans(tenant string, candidates []string, rc *sgam.Receipt) error {
	if len(candidates) == 0 {
		return nil
	}
	rows, err := f.s.w.QueryContext(f.ctx, `DELETE FROM episodes
		WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2))
		  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant = ?1 AND f.source = episodes.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant = ?1 AND e.episode_id = episodes.episode_id)
		  AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.tenant = ?1 AND p.source = episodes.episode_id)
		RETURNING episode_id`, tenant, jsonList(candidates))
	if err != nil {
		return mapErr("forget episodes", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return mapErr("forget episodes", err)
		}
		rc.EpisodeIDs = append(rc.EpisodeIDs, id)
		rc.EpisodesDeleted++
	}
	return mapErr("forget episodes", rows.Err())
}

// tenant deletes everything of a tenant but its audit.
func (f *forgetter) tenant(tenant string, rc *sgam.Receipt) error {
	rows, err := f.s.w.QueryContext(f.ctx, `SELECT fact_id, subject, attribute, member FROM facts WHERE tenant = ?`, tenant)
	if err != nil {
		return mapErr("forget tenant", err)
	}
	for rows.Next() {
		k := sgam.Key{Tenant: tenant}
		var id int64
		if err := rows.Scan(&id, &k.Subject, &k.Attribute, &k.Member); err != nil {
			rows.Close()
			return mapErr("forget tenant", err)
		}
		rc.FactIDs = append(rc.FactIDs, id)
		f.touch(k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("forget tenant", err)
	}
	if _, err := f.exec("forget tenant", `DELETE FROM evidence WHERE tenant = ?`, tenant); err != nil {
		return err
	}
	n, err := f.exec("forget tenant", `DELETE FROM facts WHERE tenant = ?`, tenant)
	if err != nil {
		return err
	}
	rc.FactsDeleted = int(n)
	if n, err = f.exec("forget tenant", `DELETE FROM pending WHERE tenant = ?`, tenant); err != nil {
		return err
	}
	rc.PendingDeleted = int(n)
	rows, err = f.s.w.QueryContext(f.ctx, `DELETE FROM episodes WHERE tenant = ? RETURNING episode_id`, tenant)
	if err != nil {
		return mapErr("forget tenant", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return mapErr("forget tenant", err)
		}
		rc.EpisodeIDs = append(rc.EpisodeIDs, id)
		rc.EpisodesDeleted++
	}
	return mapErr("forget tenant", rows.Err())
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

// episodes forgets a set of episodes of one tenant: rows they alone
// support go (their neighbours mended), rows with other evidence lose them,
// rows that keep (expiry) lose them and are kept by the retention actor;
// then the episodes' pending candidates and the episodes themselves go.
func (f *forgetter) episodes(tenant string, ids []string, keep keepFunc, rc *sgam.Receipt) error {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	list := jsonList(ids)
	rows, err := f.s.w.QueryContext(f.ctx, `WITH g (id) AS (SELECT value FROM json_each(?2)),
		t (fact_id) AS (
			SELECT f.fact_id FROM g JOIN facts f ON f.tenant = ?1 AND f.source = g.id
			UNION SELECT e.fact_id FROM g JOIN evidence e ON e.tenant = ?1 AND e.episode_id = g.id)
		SELECT f.fact_id, f.subject, f.attribute, f.member, coalesce(f.source, ''), coalesce(f.actor, ''),
			f.retracted_at IS NULL, f.recorded_at,
			(SELECT group_concat(e.episode_id, char(31) ORDER BY e.recorded_at, e.episode_id) FROM evidence e WHERE e.fact_id = f.fact_id)
		FROM t JOIN facts f ON f.fact_id = t.fact_id ORDER BY f.fact_id`, tenant, list)
	if err != nil {
		return mapErr("forget episodes", err)
	}
	type change struct {
		id            int64
		source, actor string
		promoted      string
	}
	var changes []change
	var dead []doomed
	for rows.Next() {
		var sp ledger.Support
		var k sgam.Key
		var believed bool
		var recordedAt int64
		var links sql.NullString
		if err := rows.Scan(&sp.ID, &k.Subject, &k.Attribute, &k.Member, &sp.Source, &sp.Actor, &believed, &recordedAt, &links); err != nil {
			rows.Close()
			return mapErr("forget episodes", err)
		}
		k.Tenant = tenant
		if links.Valid && links.String != "" {
			sp.Evidence = strings.Split(links.String, "\x1f")
		}
		out := ledger.Unsupport(sp, func(e string) bool { return gone[e] }, keep != nil && keep(k.Attribute, recordedAt))
		switch out.Fate {
		case ledger.Untouched:
			continue
		case ledger.Deleted:
			dead = append(dead, doomed{sp.ID, k, believed})
			rc.FactIDs = append(rc.FactIDs, sp.ID)
			rc.FactsDeleted++
		case ledger.Retained:
			rc.FactsRetained++
		default:
			rc.LinksRemoved++
		}
		f.touch(k)
		if out.Fate != ledger.Deleted && (out.Source != sp.Source || out.Actor != sp.Actor) {
			c := change{id: sp.ID, source: out.Source, actor: out.Actor}
			if out.Fate == ledger.Promoted {
				c.promoted = out.Source
			}
			changes = append(changes, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("forget episodes", err)
	}
	for _, c := range changes {
		if _, err := f.exec("forget episodes", `UPDATE facts SET source = ?, actor = ? WHERE fact_id = ?`,
			nullString(c.source), nullString(c.actor), c.id); err != nil {
			return err
		}
		if c.promoted != "" {
			if _, err := f.exec("forget episodes", `DELETE FROM evidence WHERE fact_id = ? AND episode_id = ?`, c.id, c.promoted); err != nil {
				return err
			}
		}
	}
	if _, err := f.exec("forget episodes", `DELETE FROM evidence WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2))`, tenant, list); err != nil {
		return err
	}
	if err := f.remove(dead, rc); err != nil {
		return err
	}
	n, err := f.exec("forget episodes", `DELETE FROM pending WHERE tenant = ?1 AND source IN (SELECT value FROM json_each(?2))`, tenant, list)
	if err != nil {
		return err
	}
	rc.PendingDeleted += int(n)
	drows, err := f.s.w.QueryContext(f.ctx, `DELETE FROM episodes WHERE tenant = ?1 AND episode_id IN (SELECT value FROM json_each(?2)) RETURNING episode_id`, tenant, list)
	if err != nil {
		return mapErr("forget episodes", err)
	}
	defer drows.Close()
	for drows.Next() {
		var id string
		if err := drows.Scan(&id); err != nil {
			return mapErr("forget episodes", err)
		}
		rc.EpisodeIDs = append(rc.EpisodeIDs, id)
		rc.EpisodesDeleted++
	}
	return mapErr("forget episodes", drows.Err())
}

// remove deletes fact rows and mends the believed rows of their keys:
// the believed predecessor of a deleted believed row is retracted and
// re-inserted over the deleted row's window (ledger.PlanMend). Pointers at
// the deleted rows (supersedes, a candidate's conflicts_with) are cleared.
func (f *forgetter) remove(dead []doomed, rc *sgam.Receipt) error {
	if len(dead) == 0 {
		return nil
	}
	isDead := make(map[int64]bool, len(dead))
	var ids []int64
	var keys []sgam.Key
	mendKeys := map[sgam.Key]bool{}
	seen := map[sgam.Key]bool{}
	for _, d := range dead {
		isDead[d.id] = true
		ids = append(ids, d.id)
		if !seen[d.key] {
			seen[d.key] = true
			keys = append(keys, d.key)
		}
		if d.believed {
			mendKeys[d.key] = true
		}
		f.touch(d.key)
	}
	var mends []ledger.Mend
	for _, k := range keys {
		if !mendKeys[k] {
			continue
		}
		believed, err := f.believed(k)
		if err != nil {
			return err
		}
		mends = append(mends, ledger.PlanMend(believed, func(id int64) bool { return isDead[id] })...)
	}
	list := jsonList(ids)
	if _, err := f.exec("delete facts", `DELETE FROM evidence WHERE fact_id IN (SELECT value FROM json_each(?))`, list); err != nil {
		return err
	}
	n, err := f.exec("delete facts", `DELETE FROM facts WHERE fact_id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return err
	}
	if n != int64(len(ids)) {
		return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("delete facts: %d of %d rows were there", n, len(ids))}
	}
	for _, k := range keys {
		if _, err := f.exec("delete facts", `UPDATE facts SET supersedes = NULL
			WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ? AND supersedes IN (SELECT value FROM json_each(?))`,
			k.Tenant, k.Subject, k.Attribute, k.Member, list); err != nil {
			return err
		}
	}
	if _, err := f.exec("delete facts", `UPDATE pending SET conflicts_with = NULL WHERE tenant = ? AND conflicts_with IN (SELECT value FROM json_each(?))`,
		dead[0].key.Tenant, list); err != nil {
		return err
	}
	if len(mends) == 0 {
		return nil
	}
	nextID, err := f.tx.nextIDs(len(mends))
	if err != nil {
		return err
	}
	for _, m := range mends {
		if n, err := f.exec("mend facts", `UPDATE facts SET retracted_at = ? WHERE fact_id = ? AND retracted_at IS NULL`, f.now, m.Of); err != nil {
			return err
		} else if n != 1 {
			return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("mend facts: fact %d is no longer believed", m.Of)}
		}
		id := nextID()
		if _, err := f.exec("mend facts", `INSERT INTO facts (fact_id, tenant, subject, attribute, member, value, valid_from, valid_to,
				recorded_at, retracted_at, supersedes, source, schema_version, actor)
			SELECT ?1, tenant, subject, attribute, member, value, valid_from, ?2, ?3, NULL, fact_id, source, schema_version, actor
			FROM facts WHERE fact_id = ?4`, id, nullIfOpen(m.ValidTo), f.now, m.Of); err != nil {
			return err
		}
		if _, err := f.exec("mend facts", `INSERT INTO evidence (fact_id, tenant, episode_id, recorded_at)
			SELECT ?1, tenant, episode_id, recorded_at FROM evidence WHERE fact_id = ?2`, id, m.Of); err != nil {
			return err
		}
		rc.FactsMended++
	}
	return nil
}

// believed returns the believed rows of a key.
func (f *forgetter) believed(k sgam.Key) ([]temporal.Row, error) {
	rows, err := f.s.w.QueryContext(f.ctx, `SELECT fact_id, valid_from, valid_to FROM facts
		WHERE tenant = ? AND subject = ? AND attribute = ? AND member = ? AND retracted_at IS NULL`, k.Tenant, k.Subject, k.Attribute, k.Member)
	if err != nil {
		return nil, mapErr("mend "+k.String(), err)
	}
	defer rows.Close()
	var out []temporal.Row
	for rows.Next() {
		var r temporal.Row
		var validTo sql.NullInt64
		if err := rows.Scan(&r.ID, &r.ValidFrom, &validTo); err != nil {
			return nil, mapErr("mend "+k.String(), err)
		}
		r.ValidTo, r.RetractedAt = openIfNull(validTo), temporal.Open
		out = append(out, r)
	}
	return out, mapErr("mend "+k.String(), rows.Err())
}

// Receipts implements sgam.Store.
func (s *Store) Receipts(ctx context.Context, tenant string) ([]sgam.Receipt, error) {
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT receipt FROM audit WHERE tenant = ? ORDER BY at, rowid`, tenant)
	if err != nil {
		return nil, mapErr("list receipts", err)
	}
	defer rows.Close()
	out := []sgam.Receipt{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, mapErr("list receipts", err)
		}
		var rc sgam.Receipt
		if err := json.Unmarshal(body, &rc); err != nil {
			return nil, &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("list receipts: a stored receipt does not parse: %v", err), Err: err}
		}
		out = append(out, rc)
	}
	return out, mapErr("list receipts", rows.Err())
}

// Expire implements sgam.Store: transaction after transaction, each of at
// most ledger.ExpireBatch episodes and as many expired fact rows, until
// nothing more has expired. Each transaction records one receipt per
// tenant it touched.
func (s *Store) Expire(ctx context.Context) ([]sgam.Receipt, error) {
	out := []sgam.Receipt{}
	for {
		rcs, more, err := s.expireBatch(ctx)
		out = append(out, rcs...)
		if err != nil || !more {
			return out, err
		}
	}
}

func (s *Store) expireBatch(ctx context.Context) ([]sgam.Receipt, bool, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer tx.rollback()
	gov, err := s.currentGov(ctx)
	if err != nil {
		return nil, false, err
	}
	now := s.clock.Now()
	episodeCuts, attributeCuts := gov.EpisodeCutoffs(now), gov.AttributeCutoffs(now)
	if len(episodeCuts) == 0 && len(attributeCuts) == 0 {
		return nil, false, nil
	}

	// The expired episodes: their class (their own, else the schema's
	// episode_retention) is finite and has run out.
	type ref struct{ tenant, id string }
	var expired []ref
	if len(episodeCuts) > 0 {
		def := ""
		var conds []string
		args := []any{ledger.ExpireBatch}
		for _, c := range episodeCuts {
			if c.Default {
				def = c.Class
			}
			conds = append(conds, fmt.Sprintf("(coalesce(retention, ?2) = ?%d AND recorded_at <= ?%d)", len(args)+2, len(args)+3))
			args = append(args, c.Class, c.Before)
		}
		args = append(args[:1], append([]any{def}, args[1:]...)...)
		rows, err := s.w.QueryContext(ctx, `SELECT tenant, episode_id FROM episodes WHERE `+strings.Join(conds, " OR ")+`
			ORDER BY tenant, episode_id LIMIT ?1`, args...)
		if err != nil {
			return nil, false, mapErr("expire", err)
		}
		for rows.Next() {
			var r ref
			if err := rows.Scan(&r.tenant, &r.id); err != nil {
				rows.Close()
				return nil, false, mapErr("expire", err)
			}
			expired = append(expired, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, false, mapErr("expire", err)
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
		var conds []string
		args := []any{ledger.ExpireBatch}
		for _, c := range attributeCuts {
			conds = append(conds, fmt.Sprintf("(attribute = ?%d AND recorded_at <= ?%d)", len(args)+1, len(args)+2))
			args = append(args, c.Class, c.Before)
		}
		rows, err := s.w.QueryContext(ctx, `SELECT tenant, fact_id FROM facts WHERE `+strings.Join(conds, " OR ")+`
			ORDER BY tenant, fact_id LIMIT ?1`, args...)
		if err != nil {
			return nil, mapErr("expire", err)
		}
		defer rows.Close()
		var out []factRef
		for rows.Next() {
			var r factRef
			if err := rows.Scan(&r.tenant, &r.id); err != nil {
				return nil, mapErr("expire", err)
			}
			out = append(out, r)
		}
		return out, mapErr("expire", rows.Err())
	}
	facts, err := findFacts()
	if err != nil {
		return nil, false, err
	}
	if len(expired) == 0 && len(facts) == 0 {
		return nil, false, nil
	}

	f, err := s.startForget(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	receipts := map[string]*sgam.Receipt{}
	var order []string
	receipt := func(tenant string) *sgam.Receipt {
		rc := receipts[tenant]
		if rc == nil {
			r := ledger.NewReceipt(tenant, ledger.ActorRetention, ledger.KindExpire, "", f.now)
			rc = &r
			receipts[tenant] = rc
			order = append(order, tenant)
		}
		return rc
	}
	keep := func(attribute string, recordedAt int64) bool { return gov.RetentionKeeps(attribute, recordedAt, now) }
	for i := 0; i < len(expired); {
		j := i
		var ids []string
		for ; j < len(expired) && expired[j].tenant == expired[i].tenant; j++ {
			ids = append(ids, expired[j].id)
		}
		if err := f.episodes(expired[i].tenant, ids, keep, receipt(expired[i].tenant)); err != nil {
			return nil, false, err
		}
		i = j
	}
	// Rows deleted with the episodes are gone from the list; mended copies
	// are recorded now and have not expired.
	if len(expired) > 0 {
		if facts, err = findFacts(); err != nil {
			return nil, false, err
		}
	}
	for i := 0; i < len(facts); {
		tenant := facts[i].tenant
		var ids []int64
		for ; i < len(facts) && facts[i].tenant == tenant; i++ {
			ids = append(ids, facts[i].id)
		}
		if err := f.expireFacts(tenant, ids, receipt(tenant)); err != nil {
			return nil, false, err
		}
	}
	out := make([]sgam.Receipt, 0, len(order))
	for _, tenant := range order {
		rc := receipts[tenant]
		if err := f.audit(rc); err != nil {
			return nil, false, err
		}
		out = append(out, *rc)
	}
	if err := tx.commit(f.list); err != nil {
		return nil, false, err
	}
	return out, len(expired) == ledger.ExpireBatch || len(facts) == ledger.ExpireBatch, nil
}

// expireFacts deletes expired fact rows of one tenant, mending their keys.
func (f *forgetter) expireFacts(tenant string, ids []int64, rc *sgam.Receipt) error {
	rows, err := f.s.w.QueryContext(f.ctx, `SELECT fact_id, subject, attribute, member, retracted_at IS NULL FROM facts
		WHERE fact_id IN (SELECT value FROM json_each(?)) AND tenant = ?`, jsonList(ids), tenant)
	if err != nil {
		return mapErr("expire facts", err)
	}
	var dead []doomed
	for rows.Next() {
		d := doomed{key: sgam.Key{Tenant: tenant}}
		if err := rows.Scan(&d.id, &d.key.Subject, &d.key.Attribute, &d.key.Member, &d.believed); err != nil {
			rows.Close()
			return mapErr("expire facts", err)
		}
		dead = append(dead, d)
		rc.FactIDs = append(rc.FactIDs, d.id)
		rc.FactsDeleted++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("expire facts", err)
	}
	return f.remove(dead, rc)
}

// Compact implements sgam.Store: checkpoint the WAL into the file, rebuild
// the file (VACUUM: freed pages and their old contents go), and truncate
// the WAL, which held the old page images, to nothing.
func (s *Store) Compact(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// The background checkpointer holds the checkpoint lock while it runs,
	// which would make the truncating checkpoint busy: pause it.
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	checkpoint := func() error {
		var busy, log, done int
		if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil {
			return mapErr("compact: checkpoint", err)
		}
		if busy != 0 {
			return sgam.Errorf(sgam.Unavailable, "", "compact: a reader kept the write-ahead log from being truncated; run compact again when the store is idle")
		}
		return nil
	}
	if err := checkpoint(); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
		return mapErr("compact: vacuum", err)
	}
	return checkpoint()
}
