package postgres

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/engine"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// windowSQL loads, for each key (arrays of tenant, subject, attribute,
// member, tmin, tmax), its believed rows from the one at or before tmin to the one
// after tmax: the neighbours of every operation in [tmin, tmax].
//
// Each part is ordered and limited, so that every key is a few steps along
// the facts_key index whatever the planner's statistics say: a plain join
// is run as a scan of every believed row whenever the statistics lag behind
// a fast-growing table. "Believed" is spelled so that the planner cannot
// pick the exclusion constraint's partial GiST index instead, which holds
// the same rows but cannot return them in order.
const windowSQL = `SELECT k.i, f.fact_id, f.value_text, f.valid_from, f.valid_to, f.recorded_at, f.source, f.schema_version, f.actor,
		EXISTS (SELECT 1 FROM evidence e WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id)
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
		WITH ORDINALITY AS k(tenant, subject, attribute, member, tmin, tmax, i)
	JOIN LATERAL (
		(SELECT * FROM facts f
		 WHERE f.tenant_id = k.tenant AND f.subject = k.subject AND f.attribute = k.attribute AND f.member = k.member
		   AND coalesce(f.retracted_at, 'infinity') = 'infinity' AND f.valid_from <= k.tmin
		 ORDER BY f.valid_from DESC LIMIT 1)
		UNION ALL
		(SELECT * FROM facts f
		 WHERE f.tenant_id = k.tenant AND f.subject = k.subject AND f.attribute = k.attribute AND f.member = k.member
		   AND coalesce(f.retracted_at, 'infinity') = 'infinity' AND f.valid_from > k.tmin AND f.valid_from <= k.tmax
		 ORDER BY f.valid_from)
		UNION ALL
		(SELECT * FROM facts f
		 WHERE f.tenant_id = k.tenant AND f.subject = k.subject AND f.attribute = k.attribute AND f.member = k.member
		   AND coalesce(f.retracted_at, 'infinity') = 'infinity' AND f.valid_from > k.tmax
		 ORDER BY f.valid_from LIMIT 1)
	) f ON true`

// headsSQL is the schema in force for each tenant of $1 (” for the
// default's head): its own latest version (own), else the default's.
const headsSQL = `SELECT t, coalesce((SELECT max(version) FROM schemas s WHERE s.tenant_id = t AND t <> ''), 0),
		(SELECT coalesce(max(version), 0) FROM schemas WHERE tenant_id = '')
	FROM unnest($1::text[]) AS t`

// scanHeads reads what headsSQL answers, and the heads that differ from want.
func scanHeads(rows pgx.Rows, want map[string]ledger.Head) (changed map[string]ledger.Head, err error) {
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var own, def int
		if err := rows.Scan(&tenant, &own, &def); err != nil {
			return nil, err
		}
		if h := ledger.HeadOf(tenant, own, def); h != want[tenant] {
			if changed == nil {
				changed = map[string]ledger.Head{}
			}
			changed[tenant] = ledger.HeadOf(tenant, own, def)
		}
	}
	return changed, rows.Err()
}

func headTenants(heads map[string]ledger.Head) []string {
	out := make([]string, 0, len(heads))
	for t := range heads {
		out = append(out, t)
	}
	return out
}

// LoadBatch implements engine.Tx in one round trip: BEGIN, the scope, the
// keys' advisory locks, the clock, the schema heads, the confirmed
// candidate's deletion, the fact ids and each key's window of believed
// rows.
func (t *tx) LoadBatch(b *ledger.Batch, nIDs int, confirm *sgam.Candidate) (func() int64, int64, error) {
	n := len(b.Keys)
	tenants, subjects, attributes, members := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tmins, tmaxs := make([]time.Time, n), make([]time.Time, n)
	for i, k := range b.Keys {
		tmin, tmax := b.Window(k)
		tenants[i], subjects[i], attributes[i], members[i] = k.Tenant, k.Subject, k.Attribute, k.Member
		tmins[i], tmaxs[i] = sgam.FromMicros(tmin), sgam.FromMicros(tmax)
	}
	heads := b.Govs.Heads()
	bt := &pgx.Batch{}
	steps := t.begin(bt)
	bt.Queue(lockSQL, keyLocks(b.Keys))
	bt.Queue(clockSQL)
	bt.Queue(headsSQL, headTenants(heads))
	if confirm != nil {
		bt.Queue(`DELETE FROM pending WHERE tenant_id = $1 AND pending_id = $2`, confirm.Tenant, confirm.ID)
	}
	bt.Queue(`SELECT nextval('fact_ids') FROM generate_series(1, $1) ORDER BY 1`, nIDs)
	bt.Queue(windowSQL, tenants, subjects, attributes, members, tmins, tmaxs)
	br := t.c.SendBatch(t.ctx, bt)
	defer br.Close()
	if err := skipBegin(br, steps); err != nil {
		return nil, 0, err
	}
	if _, err := br.Exec(); err != nil { // locks
		return nil, 0, err
	}
	var dbNow time.Time
	var floor int64
	if err := br.QueryRow().Scan(&dbNow, &floor); err != nil {
		return nil, 0, err
	}
	headRows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	changed, err := scanHeads(headRows, heads)
	if err != nil {
		return nil, 0, err
	}
	if changed != nil {
		return nil, 0, &engine.SchemaChanged{Heads: changed}
	}
	if confirm != nil {
		tag, err := br.Exec()
		if err != nil {
			return nil, 0, err
		}
		if tag.RowsAffected() != 1 {
			return nil, 0, engine.NoCandidate(confirm.Tenant, confirm.ID)
		}
	}
	idRows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	ids, err := pgx.CollectRows(idRows, pgx.RowTo[int64])
	if err != nil {
		return nil, 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	var latest int64
	loaded := make([][]temporal.Row, n)
	for rows.Next() {
		var i int64
		var r temporal.Row
		var value, source, actor *string
		var validFrom, recordedAt time.Time
		var validTo *time.Time
		if err := rows.Scan(&i, &r.ID, &value, &validFrom, &validTo, &recordedAt, &source, &r.Version, &actor, &r.Corroborated); err != nil {
			rows.Close()
			return nil, 0, err
		}
		if value != nil {
			r.Value = []byte(*value)
		}
		if source != nil {
			r.Source = *source
		}
		if actor != nil {
			r.Actor = *actor
		}
		r.ValidFrom, r.RecordedAt, r.ValidTo, r.RetractedAt = sgam.Micros(validFrom), sgam.Micros(recordedAt), openOr(validTo), temporal.Open
		// Transaction time never runs backwards for a key: a row is never
		// retracted before it was recorded, whatever the clock.
		latest = max(latest, r.RecordedAt)
		loaded[i-1] = append(loaded[i-1], r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	for i, k := range b.Keys {
		b.SetBelieved(k, loaded[i])
	}
	if !t.fixed {
		t.fix(dbNow, floor, latest)
	}
	now, err := t.Instant(latest)
	if err != nil {
		return nil, 0, err
	}
	return func() int64 { id := ids[0]; ids = ids[1:]; return id }, now, nil
}

// FlushBatch implements engine.Tx: one round trip, with COMMIT when last.
func (t *tx) FlushBatch(b *ledger.Batch, now int64, last bool) error {
	bt := flushBatch(b, now)
	if last {
		bt.Queue("COMMIT")
		t.committed = true
	}
	return t.send(bt)
}

// ReadFact implements engine.Tx.
func (t *tx) ReadFact(k sgam.Key, id int64) (sgam.Fact, error) {
	return readFact(t.ctx, t.c, k.Tenant, id)
}

// EpisodeKinds implements engine.Tx.
func (t *tx) EpisodeKinds(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]string, error) {
	tenants, ids := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], ids[i] = r.Tenant, r.ID
	}
	rows, err := t.query(`SELECT e.tenant_id, e.episode_id, e.kind FROM unnest($1::text[], $2::text[]) AS r(t, id)
		JOIN episodes e ON e.tenant_id = r.t AND e.episode_id = r.id`, tenants, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[ledger.EpisodeRef]string, len(refs))
	for rows.Next() {
		var r ledger.EpisodeRef
		var kind string
		if err := rows.Scan(&r.Tenant, &r.ID, &kind); err != nil {
			return nil, err
		}
		out[r] = kind
	}
	return out, rows.Err()
}

// FindPending implements engine.Tx.
func (t *tx) FindPending(c sgam.Candidate) (string, error) {
	var id string
	err := t.queryRow(`SELECT pending_id FROM pending WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND member = $4
		AND valid_from = $5 AND source = $6 AND value_text = $7 LIMIT 1`, c.Tenant, c.Subject, c.Attribute, string(c.Member),
		c.ValidFrom, c.Source, string(c.Value)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// Signals implements engine.Tx.
func (t *tx) Signals(k sgam.Key) ([]sgam.Candidate, error) {
	rows, err := t.query(`SELECT `+pendingColumns+` FROM pending WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND member = $4
		AND reason = $5 ORDER BY valid_from, pending_id`, k.Tenant, k.Subject, k.Attribute, k.Member, sgam.ReasonRecurrence)
	if err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sgam.Candidate, error) { return scanCandidate(r) })
}

// DeletePending implements engine.Tx.
func (t *tx) DeletePending(tenant, id string) (bool, error) {
	tag, err := t.exec("delete pending", `DELETE FROM pending WHERE tenant_id = $1 AND pending_id = $2`, tenant, id)
	return tag.RowsAffected() == 1, err
}

// flushBatch returns the statements that write the ledgers' outcome. Order
// matters: links to stored rows before they are copied; retractions before
// inserts, so the exclusion constraint never sees the old and the new
// believed row at once.
func flushBatch(b *ledger.Batch, now int64) *pgx.Batch {
	at := sgam.FromMicros(now)
	// Placeholders in one order, so that two batches cannot deadlock on them.
	var refs []ledger.EpisodeRef
	seen := map[ledger.EpisodeRef]bool{}
	for _, o := range b.Ops {
		r := ledger.EpisodeRef{Tenant: o.Key.Tenant, ID: o.Source}
		if o.Source != "" && !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(x, y ledger.EpisodeRef) int { return strings.Compare(x.Tenant+"\x1f"+x.ID, y.Tenant+"\x1f"+y.ID) })
	phTenants, phIDs := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		phTenants[i], phIDs[i] = r.Tenant, r.ID
	}
	var stored links
	retract := map[string][]int64{} // by tenant: each UPDATE is a primary-key lookup
	var retractTenants []string
	var ins factRows
	var copyTenants []string
	var copyNew, copyOld []int64
	var added links
	for _, k := range b.Keys {
		l := b.Ledger(k)
		for _, e := range l.EvidenceStored {
			stored.add(k.Tenant, e.RowID, e.Source, at)
		}
		for _, id := range l.RetractStored {
			if retract[k.Tenant] == nil {
				retractTenants = append(retractTenants, k.Tenant)
			}
			retract[k.Tenant] = append(retract[k.Tenant], id)
		}
		for _, r := range l.Inserted {
			ins.add(k, r)
			if r.EvidenceOf != 0 {
				copyTenants, copyNew, copyOld = append(copyTenants, k.Tenant), append(copyNew, r.ID), append(copyOld, r.EvidenceOf)
			}
			for _, src := range r.Corroborations {
				added.add(k.Tenant, r.ID, src, at)
			}
		}
	}
	bt := &pgx.Batch{}
	bt.Queue(`INSERT INTO episodes (tenant_id, episode_id, kind, occurred_at, recorded_at)
		SELECT t, e, 'unknown', $3, $3 FROM unnest($1::text[], $2::text[]) AS x(t, e) ON CONFLICT DO NOTHING`, phTenants, phIDs, at)
	if len(stored.ids) > 0 {
		bt.Queue(linksSQL, stored.tenants, stored.ids, stored.episodes, stored.at)
	}
	for _, tenant := range retractTenants {
		ids := retract[tenant]
		// "Still believed" is spelled so that the planner cannot match it to
		// the exclusion constraint's partial GiST index, which it otherwise
		// prefers to the primary key when its statistics lag, scanning every
		// believed row of the tenant.
		// The count is checked on the server: COMMIT may follow in the same
		// round trip, and must not run if a row was no longer believed.
		bt.Queue(`WITH r AS (
				UPDATE facts SET retracted_at = $1 WHERE tenant_id = $2 AND fact_id = ANY($3)
				AND coalesce(retracted_at, 'infinity') = 'infinity' RETURNING 1)
			SELECT sgam_check(count(*) = $4, 'retract facts: a row was no longer believed') FROM r`, at, tenant, ids, len(ids))
	}
	if len(ins.ids) > 0 {
		bt.Queue(insertFactsSQL, ins.args()...)
	}
	if len(copyNew) > 0 {
		bt.Queue(`INSERT INTO evidence (tenant_id, fact_id, episode_id, recorded_at)
			SELECT e.tenant_id, m.new, e.episode_id, e.recorded_at
			FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS m(t, new, old)
			JOIN LATERAL (SELECT * FROM evidence e WHERE e.tenant_id = m.t AND e.fact_id = m.old OFFSET 0) e ON true`, copyTenants, copyNew, copyOld)
	}
	if len(added.ids) > 0 {
		bt.Queue(linksSQL, added.tenants, added.ids, added.episodes, added.at)
	}
	for actor, ids := range b.Actors() {
		bt.Queue(`UPDATE facts SET actor = $1 WHERE fact_id = ANY($2)`, actor, ids)
	}
	for _, c := range b.Hold {
		bt.Queue(`INSERT INTO pending (`+pendingColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			c.Tenant, c.ID, c.Subject, c.Attribute, string(c.Member), string(c.Value), c.ValidFrom, c.Source, c.Reason,
			c.ConflictsWith, c.RecordedAt, c.SchemaVersion, c.Signals)
	}
	return bt
}

const linksSQL = `INSERT INTO evidence (tenant_id, fact_id, episode_id, recorded_at)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::timestamptz[]) ON CONFLICT DO NOTHING`

const insertFactsSQL = `INSERT INTO facts (tenant_id, fact_id, subject, attribute, member, value_text, valid_from, valid_to,
		recorded_at, retracted_at, supersedes, source, schema_version)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[],
		$9::timestamptz[], $10::timestamptz[], $11::bigint[], $12::text[], $13::integer[])`

// links are evidence rows to insert, as columns.
type links struct {
	tenants, episodes []string
	ids               []int64
	at                []time.Time
}

func (l *links) add(tenant string, id int64, episode string, at time.Time) {
	l.tenants, l.ids, l.episodes, l.at = append(l.tenants, tenant), append(l.ids, id), append(l.episodes, episode), append(l.at, at)
}

// factRows are fact rows to insert, as columns.
type factRows struct {
	tenants, subjects, attributes, members []string
	ids                                    []int64
	values, sources                        []*string
	validFrom, recordedAt                  []time.Time
	validTo, retractedAt                   []*time.Time
	supersedes                             []*int64
	schemaVersions                         []int32
}

func (f *factRows) add(k sgam.Key, r *temporal.Inserted) {
	var value, source *string
	if r.Value != nil {
		v := string(r.Value)
		value = &v
	}
	if r.Source != "" {
		src := r.Source
		source = &src
	}
	var sup *int64
	if r.Supersedes != 0 {
		id := r.Supersedes
		sup = &id
	}
	f.append(k, r.ID, value, sgam.FromMicros(r.ValidFrom), ledger.TimeOrNil(r.ValidTo), sgam.FromMicros(r.RecordedAt),
		ledger.TimeOrNil(r.RetractedAt), sup, source, int32(r.Version))
}

func (f *factRows) append(k sgam.Key, id int64, value *string, validFrom time.Time, validTo *time.Time, recordedAt time.Time,
	retractedAt *time.Time, supersedes *int64, source *string, schemaVersion int32) {
	f.tenants, f.ids, f.subjects, f.attributes = append(f.tenants, k.Tenant), append(f.ids, id), append(f.subjects, k.Subject), append(f.attributes, k.Attribute)
	f.members = append(f.members, k.Member)
	f.values, f.validFrom, f.validTo = append(f.values, value), append(f.validFrom, validFrom), append(f.validTo, validTo)
	f.recordedAt, f.retractedAt, f.supersedes = append(f.recordedAt, recordedAt), append(f.retractedAt, retractedAt), append(f.supersedes, supersedes)
	f.sources, f.schemaVersions = append(f.sources, source), append(f.schemaVersions, schemaVersion)
}

func (f *factRows) args() []any {
	return []any{f.tenants, f.ids, f.subjects, f.attributes, f.members, f.values, f.validFrom, f.validTo, f.recordedAt,
		f.retractedAt, f.supersedes, f.sources, f.schemaVersions}
}

func openOr(t *time.Time) int64 {
	if t == nil {
		return temporal.Open
	}
	return sgam.Micros(*t)
}

// raise lifts v to at least x.
func raise(v interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}
