package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Export implements sgam.Store.
func (s *Store) Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr("export", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+episodeColumns+` FROM episodes
		WHERE ?1 = '' OR tenant = ?1 ORDER BY tenant, episode_id`, tenant)
	if err != nil {
		return mapErr("export episodes", err)
	}
	for rows.Next() {
		e, err := scanEpisode(rows)
		if err != nil {
			rows.Close()
			return mapErr("export episodes", err)
		}
		if err := episode(e); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("export episodes", err)
	}

	rows, err = tx.QueryContext(ctx, `SELECT `+factColumns("?2")+`, f.source,
		(SELECT group_concat(e.episode_id || char(30) || e.recorded_at, char(31) ORDER BY e.recorded_at, e.episode_id)
		   FROM evidence e WHERE e.fact_id = f.fact_id), coalesce(f.actor, '')
		FROM facts f WHERE ?1 = '' OR tenant = ?1 ORDER BY fact_id`, tenant, temporal.Open)
	if err != nil {
		return mapErr("export facts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var links, source sql.NullString
		var actor string
		f, err := scanFact(withExtra{rows, []any{&source, &links, &actor}})
		if err != nil {
			return mapErr("export facts", err)
		}
		sf := sgam.StoredFact{Fact: f, Source: source.String, Evidence: []sgam.Evidence{}, Actor: actor}
		if links.Valid {
			for _, l := range strings.Split(links.String, "\x1f") {
				id, at, _ := strings.Cut(l, "\x1e")
				us, err := strconv.ParseInt(at, 10, 64)
				if err != nil {
					return mapErr("export facts", err)
				}
				sf.Evidence = append(sf.Evidence, sgam.Evidence{EpisodeID: id, RecordedAt: sgam.FromMicros(us)})
			}
		}
		if err := fact(sf); err != nil {
			return err
		}
	}
	return mapErr("export facts", rows.Err())
}

// withExtra scans the fact columns and then extra trailing columns.
type withExtra struct {
	sc    scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

// Import implements sgam.Store.
func (s *Store) Import(ctx context.Context, b sgam.ImportBatch) (sgam.ImportStats, error) {
	var st sgam.ImportStats
	if err := s.limits.CheckImportBatch(b); err != nil {
		return st, err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return st, err
	}
	defer tx.rollback()
	gov, err := s.currentGov(ctx)
	if err != nil {
		return st, err
	}
	if err := gov.CheckImport(b); err != nil {
		return st, err
	}

	for i, e := range b.Episodes {
		have, err := scanEpisode(s.w.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant = ?1 AND episode_id = ?2`, e.Tenant, e.ID))
		switch {
		case err == sql.ErrNoRows:
			if err := gov.CheckRetention(e.Retention); err != nil {
				return st, sgam.PrefixField(fmt.Sprintf("episodes[%d]", i), err)
			}
			if _, err := s.w.ExecContext(ctx, `INSERT INTO episodes (tenant, episode_id, session, kind, content, occurred_at, recorded_at, metadata, idempotency_key, retention)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.Tenant, e.ID, e.Session, e.Kind, e.Content, sgam.Micros(e.OccurredAt),
				sgam.Micros(e.RecordedAt), nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention)); err != nil {
				return st, sgam.PrefixField(fmt.Sprintf("episodes[%d]", i), mapErr("import episode "+e.ID, err))
			}
			st.Episodes++
		case err != nil:
			return st, mapErr("import episode "+e.ID, err)
		case sgam.EpisodesEqual(have, e):
			st.EpisodesPresent++
		default:
			return st, sgam.Errorf(sgam.Conflict, fmt.Sprintf("episodes[%d]", i), "tenant %s already has a different episode %s", e.Tenant, e.ID)
		}
	}

	plan, err := ledger.PlanImport(importStore{s, ctx}, b)
	if err != nil {
		return st, err
	}
	st.FactsPresent = plan.FactsPresent
	var inserts, links []any
	actors := map[string][]int64{}
	for _, i := range plan.Fresh {
		f := b.Facts[i]
		var value any
		if !f.Tombstone {
			value = string(f.Value)
		}
		inserts = append(inserts, f.ID, f.Tenant, f.Subject, f.Attribute, string(f.Member), value, sgam.Micros(f.ValidFrom),
			microsOrNil(f.ValidTo), sgam.Micros(f.RecordedAt), microsOrNil(f.RetractedAt), supersedesOrNil(f.Supersedes),
			nullString(f.Source), f.SchemaVersion)
		for _, e := range f.Evidence {
			links = append(links, f.ID, f.Tenant, e.EpisodeID, sgam.Micros(e.RecordedAt))
		}
		if f.Actor != "" {
			actors[f.Actor] = append(actors[f.Actor], f.ID)
		}
		st.Facts++
	}
	if _, err := s.bulkExec(ctx, bulkFacts, nil, inserts); err != nil {
		return st, mapErr("import facts", err)
	}
	if _, err := s.bulkExec(ctx, bulkEvidence, nil, links); err != nil {
		return st, mapErr("import evidence", err)
	}
	for actor, ids := range actors {
		if _, err := s.w.ExecContext(ctx, `UPDATE facts SET actor = ?1 WHERE fact_id IN (SELECT value FROM json_each(?2))`, actor, jsonList(ids)); err != nil {
			return st, mapErr("import facts", err)
		}
	}
	tx.observe(sgam.Micros(b.LatestInstant()))
	if err := tx.commit(plan.Keys); err != nil {
		return st, err
	}
	return st, nil
}

// importStore answers PlanImport inside the writer's transaction.
type importStore struct {
	s   *Store
	ctx context.Context
}

func (is importStore) StoredFacts(facts []sgam.StoredFact) (map[int64]sgam.StoredFact, error) {
	out := map[int64]sgam.StoredFact{}
	for _, f := range facts {
		have, err := is.s.storedFact(is.ctx, f.ID)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return nil, mapErr("import facts", err)
		default:
			out[f.ID] = have
		}
	}
	return out, nil
}

func (is importStore) HasEpisodes(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]bool, error) {
	out := map[ledger.EpisodeRef]bool{}
	for _, r := range refs {
		var one int
		err := is.s.w.QueryRowContext(is.ctx, `SELECT 1 FROM episodes WHERE tenant = ?1 AND episode_id = ?2`, r.Tenant, r.ID).Scan(&one)
		if err != nil && err != sql.ErrNoRows {
			return nil, mapErr("import facts", err)
		}
		out[r] = err == nil
	}
	return out, nil
}

func (is importStore) KeyRows(keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	out := map[sgam.Key][]temporal.Row{}
	for _, k := range keys {
		rows, err := is.s.keyRows(is.ctx, k)
		if err != nil {
			return nil, err
		}
		out[k] = rows
	}
	return out, nil
}

func (is importStore) FactTenant(id int64) (string, error) {
	var tenant string
	err := is.s.w.QueryRowContext(is.ctx, `SELECT tenant FROM facts WHERE fact_id = ?`, id).Scan(&tenant)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return tenant, mapErr("import facts", err)
}

// keyRows returns every row of a key for the invariant check.
func (s *Store) keyRows(ctx context.Context, k sgam.Key) ([]temporal.Row, error) {
	rows, err := s.w.QueryContext(ctx, `SELECT fact_id, valid_from, valid_to, recorded_at, retracted_at FROM facts
		WHERE tenant = ?1 AND subject = ?2 AND attribute = ?3 AND member = ?4`, k.Tenant, k.Subject, k.Attribute, k.Member)
	if err != nil {
		return nil, mapErr("check "+k.String(), err)
	}
	defer rows.Close()
	var out []temporal.Row
	for rows.Next() {
		var r temporal.Row
		var validTo, retractedAt sql.NullInt64
		if err := rows.Scan(&r.ID, &r.ValidFrom, &validTo, &r.RecordedAt, &retractedAt); err != nil {
			return nil, mapErr("check "+k.String(), err)
		}
		r.ValidTo, r.RetractedAt = openIfNull(validTo), openIfNull(retractedAt)
		out = append(out, r)
	}
	return out, mapErr("check "+k.String(), rows.Err())
}

// storedFact reads one fact row with its evidence inside the write transaction.
func (s *Store) storedFact(ctx context.Context, id int64) (sgam.StoredFact, error) {
	f, err := scanFact(s.wst.factByID.QueryRowContext(ctx, id, temporal.Open))
	if err != nil {
		return sgam.StoredFact{}, err
	}
	sf := sgam.StoredFact{Fact: f}
	if err := s.w.QueryRowContext(ctx, `SELECT coalesce(source, ''), coalesce(actor, '') FROM facts WHERE fact_id = ?`, id).Scan(&sf.Source, &sf.Actor); err != nil {
		return sf, err
	}
	rows, err := s.w.QueryContext(ctx, `SELECT episode_id, recorded_at FROM evidence WHERE fact_id = ? ORDER BY recorded_at, episode_id`, id)
	if err != nil {
		return sf, err
	}
	defer rows.Close()
	for rows.Next() {
		var e sgam.Evidence
		var at int64
		if err := rows.Scan(&e.EpisodeID, &at); err != nil {
			return sf, err
		}
		e.RecordedAt = sgam.FromMicros(at)
		sf.Evidence = append(sf.Evidence, e)
	}
	return sf, rows.Err()
}

func microsOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return sgam.Micros(*t)
}

func supersedesOrNil(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
