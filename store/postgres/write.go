package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

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

// write applies ops in order in one transaction at one transaction
// instant. batch names the operations in errors ("assertions[i]").
func (s *Store) write(ctx context.Context, req writeReq) ([]sgam.WriteResult, error) {
	var results []sgam.WriteResult
	var instant int64
	// Two round trips: BEGIN, locks, clock, schema version, ids and the
	// keys' rows; then the writes and COMMIT (a third when results must be
	// read back first, or episode kinds read for the conflict policies).
	err := s.inConn(ctx, "write", func(c *pgxpool.Conn) error {
		gov := s.readGov()
		ops, err := req.build(gov, s.wallNow())
		if err != nil {
			return err
		}
		b := ledger.New(ops)
		b.Gov = gov
		ids, now, err := s.load(ctx, c, b, 2*len(ops), req.confirm, true) // an operation inserts at most two rows
		if err != nil {
			return err
		}
		if refs := b.KindsNeeded(); len(refs) > 0 {
			kinds, err := episodeKinds(ctx, c, refs)
			if err != nil {
				return err
			}
			b.SetKinds(kinds)
		}
		if err := b.Apply(now, func() int64 { id := ids[0]; ids = ids[1:]; return id }, req.batch); err != nil {
			return err
		}
		if len(b.Pending) > 0 {
			if err := b.SettlePending(func(cand sgam.Candidate) (string, error) { return findPending(ctx, c, cand) }); err != nil {
				return err
			}
		}
		reads := b.NeedsReads()
		bt := flushBatch(b, now)
		if !reads {
			bt.Queue("COMMIT")
		}
		if err := c.SendBatch(ctx, bt).Close(); err != nil {
			return err
		}
		results, err = b.Results(func(k sgam.Key, id int64) (sgam.Fact, error) {
			return readFact(ctx, c, k.Tenant, id)
		})
		if err != nil {
			return err
		}
		if reads {
			if _, err := c.Exec(ctx, "COMMIT"); err != nil {
				return err
			}
		}
		instant = now
		return nil
	})
	if err != nil {
		return nil, err
	}
	raise(&s.txHigh, instant)
	return results, nil
}

// batchSender is a connection or a transaction.
type batchSender interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	QueryRow(context.Context, string, ...any) pgx.Row
}

// load begins the transaction (unless begin is false: the caller did), takes the keys' advisory locks, reads the
// transaction instant and schema version, deletes the confirmed candidate,
// draws nIDs fact ids and loads each key's window of believed rows, in one
// round trip. When another process applied a schema since b's ops were
// built, it loads the new schema and returns errSchemaChanged, to run the
// write again from the start.
func (s *Store) load(ctx context.Context, c batchSender, b *ledger.Batch, nIDs int, confirm *sgam.Candidate, begin bool) ([]int64, int64, error) {
	tenant := b.Keys[0].Tenant
	for _, k := range b.Keys {
		if k.Tenant != tenant {
			tenant = allTenants // a batch across tenants is an administrative load
			break
		}
	}
	n := len(b.Keys)
	tenants, subjects, attributes, members := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tmins, tmaxs := make([]time.Time, n), make([]time.Time, n)
	for i, k := range b.Keys {
		tmin, tmax := b.Window(k)
		tenants[i], subjects[i], attributes[i], members[i] = k.Tenant, k.Subject, k.Attribute, k.Member
		tmins[i], tmaxs[i] = sgam.FromMicros(tmin), sgam.FromMicros(tmax)
	}
	bt := &pgx.Batch{}
	if begin {
		bt.Queue("BEGIN")
	}
	bt.Queue(scopeSQL, tenant)
	bt.Queue(lockSQL, keyLocks(b.Keys))
	bt.Queue(`SELECT clock_timestamp(), (SELECT value FROM sgam_meta WHERE key = 'tx_floor'),
		(SELECT coalesce(max(version), 0) FROM schemas)`)
	if confirm != nil {
		bt.Queue(`DELETE FROM pending WHERE tenant_id = $1 AND pending_id = $2`, confirm.Tenant, confirm.ID)
	}
	bt.Queue(`SELECT nextval('fact_ids') FROM generate_series(1, $1) ORDER BY 1`, nIDs)
	bt.Queue(windowSQL, tenants, subjects, attributes, members, tmins, tmaxs)
	br := c.SendBatch(ctx, bt)
	defer br.Close()
	steps := 2 // scope, locks
	if begin {
		steps++
	}
	for range steps {
		if _, err := br.Exec(); err != nil {
			return nil, 0, err
		}
	}
	var dbNow time.Time
	var floor int64
	var version int
	if err := br.QueryRow().Scan(&dbNow, &floor, &version); err != nil {
		return nil, 0, err
	}
	if confirm != nil {
		tag, err := br.Exec()
		if err != nil {
			return nil, 0, err
		}
		if tag.RowsAffected() != 1 {
			return nil, 0, sgam.Errorf(sgam.NotFound, "pending_id", "tenant %s has no pending candidate %q", confirm.Tenant, confirm.ID)
		}
	}
	if version != b.Gov.Version {
		br.Close()
		if _, err := s.loadGov(ctx, c, version); err != nil {
			return nil, 0, err
		}
		return nil, 0, errSchemaChanged
	}
	idRows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	ids, err := pgx.CollectRows(idRows, pgx.RowTo[int64])
	if err != nil {
		return nil, 0, err
	}
	now := sgam.Micros(dbNow)
	if s.clock != nil {
		now = sgam.Micros(s.clock.Now())
	}
	now = max(now, s.txHigh.Load(), floor)
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
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
		now = max(now, r.RecordedAt)
		loaded[i-1] = append(loaded[i-1], r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	for i, k := range b.Keys {
		b.SetBelieved(k, loaded[i])
	}
	return ids, now, nil
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
		bt.Queue(`INSERT INTO pending (`+pendingColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			c.Tenant, c.ID, c.Subject, c.Attribute, string(c.Member), string(c.Value), c.ValidFrom, c.Source, c.Reason,
			c.ConflictsWith, c.RecordedAt, c.SchemaVersion)
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
