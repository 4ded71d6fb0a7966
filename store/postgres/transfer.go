package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// storedFactColumns is the select list of a fact row f as stored: the fact,
// its source, and its evidence links with the instants they were made.
var storedFactColumns = factColumns("'infinity'") + `, f.source,
	(SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id),
	(SELECT array_agg(e.recorded_at ORDER BY e.recorded_at, e.episode_id) FROM evidence e WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id),
	coalesce(f.actor, '')`

// scanStoredFact reads a row of storedFactColumns.
func scanStoredFact(row pgx.Row) (sgam.StoredFact, error) {
	var source *string
	var ids []string
	var ats []time.Time
	var actor string
	f, err := scanFact(row, &source, &ids, &ats, &actor)
	if err != nil {
		return sgam.StoredFact{}, err
	}
	sf := sgam.StoredFact{Fact: f, Evidence: []sgam.Evidence{}, Actor: actor}
	if source != nil {
		sf.Source = *source
	}
	for i := range ids {
		sf.Evidence = append(sf.Evidence, sgam.Evidence{EpisodeID: ids[i], RecordedAt: ats[i].UTC()})
	}
	return sf, nil
}

// Export implements engine.Reader: one repeatable-read snapshot.
func (s *db) Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	return mapErr(s.export(ctx, tenant, episode, fact))
}

func (s *db) export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, scopeSQL, tenant); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE $1 = '' OR tenant_id = $1 ORDER BY tenant_id, episode_id`, tenant)
	if err != nil {
		return fmt.Errorf("export episodes: %w", err)
	}
	for rows.Next() {
		e, err := scanEpisode(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("export episodes: %w", err)
		}
		if err := episode(e); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export episodes: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT `+storedFactColumns+`
		FROM facts f WHERE $1 = '' OR tenant_id = $1 ORDER BY fact_id`, tenant)
	if err != nil {
		return fmt.Errorf("export facts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		sf, err := scanStoredFact(rows)
		if err != nil {
			return fmt.Errorf("export facts: %w", err)
		}
		if err := fact(sf); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export facts: %w", err)
	}
	return nil
}

// InsertFacts implements engine.Tx.
func (t *tx) InsertFacts(facts []sgam.StoredFact) error {
	var rows factRows
	var ev links
	var maxID int64
	var actorTenants, actors []string
	var actorIDs []int64
	for _, f := range facts {
		var value *string
		if !f.Tombstone {
			v := string(f.Value)
			value = &v
		}
		rows.append(f.Key(), f.ID, value, f.ValidFrom, f.ValidTo, f.RecordedAt, f.RetractedAt, f.Supersedes,
			nullString(f.Source), int32(f.SchemaVersion))
		for _, e := range f.Evidence {
			ev.add(f.Tenant, f.ID, e.EpisodeID, e.RecordedAt)
		}
		if f.Actor != "" {
			actorTenants, actorIDs, actors = append(actorTenants, f.Tenant), append(actorIDs, f.ID), append(actors, f.Actor)
		}
		maxID = max(maxID, f.ID)
	}
	bt := &pgx.Batch{}
	// New ids continue above imported ones: move the sequence first, only
	// ever forward (the lock keeps two imports from racing on it).
	bt.Queue(`SELECT pg_advisory_xact_lock($1, $2)`, lockClass, sequenceLock)
	bt.Queue(`SELECT setval('fact_ids', $1) FROM fact_ids WHERE last_value < $1`, maxID)
	bt.Queue(insertFactsSQL, rows.args()...)
	if len(ev.ids) > 0 {
		bt.Queue(linksSQL, ev.tenants, ev.ids, ev.episodes, ev.at)
	}
	if len(actorIDs) > 0 {
		bt.Queue(`UPDATE facts f SET actor = a.actor FROM unnest($1::text[], $2::bigint[], $3::text[]) AS a(t, id, actor)
			WHERE f.tenant_id = a.t AND f.fact_id = a.id`, actorTenants, actorIDs, actors)
	}
	return t.send(bt)
}

// Observe implements engine.Tx: writes after the import happen after its
// transaction times, in every process.
func (t *tx) Observe(at int64) error {
	if _, err := t.exec("import", `UPDATE sgam_meta SET value = greatest(value, $1) WHERE key = 'tx_floor'`, at); err != nil {
		return err
	}
	raise(&t.s.txHigh, at)
	return nil
}

// LockKeys implements engine.Tx.
func (t *tx) LockKeys(keys []sgam.Key) error { return t.lock(keys) }

// StoredFacts implements ledger.ImportStore.
func (t *tx) StoredFacts(facts []sgam.StoredFact) (map[int64]sgam.StoredFact, error) {
	ids := make([]int64, len(facts))
	for i, f := range facts {
		ids[i] = f.ID
	}
	rows, err := t.query(`SELECT `+storedFactColumns+`
		FROM unnest($1::bigint[]) AS k(id)
		JOIN LATERAL (SELECT * FROM facts f WHERE f.fact_id = k.id OFFSET 0) f ON true`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]sgam.StoredFact{}
	for rows.Next() {
		sf, err := scanStoredFact(rows)
		if err != nil {
			return nil, err
		}
		out[sf.ID] = sf
	}
	return out, rows.Err()
}

// HasEpisodes implements ledger.ImportStore.
func (t *tx) HasEpisodes(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]bool, error) {
	tenants, ids := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], ids[i] = r.Tenant, r.ID
	}
	rows, err := t.query(`SELECT e.tenant_id, e.episode_id FROM unnest($1::text[], $2::text[]) AS k(t, id)
		JOIN LATERAL (SELECT * FROM episodes e WHERE e.tenant_id = k.t AND e.episode_id = k.id OFFSET 0) e ON true`, tenants, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[ledger.EpisodeRef]bool{}
	for rows.Next() {
		var r ledger.EpisodeRef
		if err := rows.Scan(&r.Tenant, &r.ID); err != nil {
			return nil, err
		}
		out[r] = true
	}
	return out, rows.Err()
}

// KeyRows implements ledger.ImportStore.
func (t *tx) KeyRows(keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	if err := t.ensure(); err != nil {
		return nil, err
	}
	return keyRows(t.ctx, t.c, keys)
}

// FactTenant implements ledger.ImportStore: ids are store-wide (one
// sequence), though the primary key leads with tenant_id for sharding; the
// import runs with every tenant in scope to check that.
func (t *tx) FactTenant(id int64) (string, error) {
	var tenant string
	err := t.queryRow(`SELECT tenant_id FROM facts WHERE fact_id = $1 LIMIT 1`, id).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return tenant, err
}

// keyRows returns every row of each key, as the temporal rules see them.
func keyRows(ctx context.Context, tx interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	n := len(keys)
	tenants, subjects, attributes, members := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		tenants[i], subjects[i], attributes[i], members[i] = k.Tenant, k.Subject, k.Attribute, k.Member
	}
	rows, err := tx.Query(ctx, `SELECT f.tenant_id, f.subject, f.attribute, f.member, f.fact_id, f.valid_from, f.valid_to, f.recorded_at, f.retracted_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(t, s, a, m)
		JOIN LATERAL (SELECT * FROM facts f WHERE f.tenant_id = k.t AND f.subject = k.s AND f.attribute = k.a AND f.member = k.m OFFSET 0) f ON true`,
		tenants, subjects, attributes, members)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[sgam.Key][]temporal.Row{}
	for rows.Next() {
		var k sgam.Key
		var r temporal.Row
		var validFrom, recordedAt time.Time
		var validTo, retractedAt *time.Time
		if err := rows.Scan(&k.Tenant, &k.Subject, &k.Attribute, &k.Member, &r.ID, &validFrom, &validTo, &recordedAt, &retractedAt); err != nil {
			return nil, err
		}
		r.ValidFrom, r.ValidTo, r.RecordedAt, r.RetractedAt = sgam.Micros(validFrom), openOr(validTo), sgam.Micros(recordedAt), openOr(retractedAt)
		out[k] = append(out[k], r)
	}
	return out, rows.Err()
}
