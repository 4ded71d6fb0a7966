package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
	"github.com/sgam-dev/sgam/temporal"
)

// Export implements engine.Reader.
func (s *db) Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	return mapErr(s.export(ctx, tenant, episode, fact))
}

func (s *db) export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+episodeColumns+` FROM episodes
		WHERE ?1 = '' OR tenant = ?1 ORDER BY tenant, episode_id`, tenant)
	if err != nil {
		return fmt.Errorf("export episodes: %w", err)
	}
	scan := newEpisodeScan(nil, nil)
	for rows.Next() {
		e, err := scan.scan(rows)
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

	rows, err = tx.QueryContext(ctx, `SELECT `+factColumns("?2")+`, f.source,
		(SELECT group_concat(e.episode_id || char(30) || e.recorded_at, char(31) ORDER BY e.recorded_at, e.episode_id)
		   FROM evidence e WHERE e.fact_id = f.fact_id), coalesce(f.actor, '')
		FROM facts f WHERE ?1 = '' OR tenant = ?1 ORDER BY fact_id`, tenant, temporal.Open)
	if err != nil {
		return fmt.Errorf("export facts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var links, source sql.NullString
		var actor string
		f, err := scanFact(withExtra{rows, []any{&source, &links, &actor}})
		if err != nil {
			return fmt.Errorf("export facts: %w", err)
		}
		sf := sgam.StoredFact{Fact: f, Source: source.String, Evidence: []sgam.Evidence{}, Actor: actor}
		if links.Valid {
			for _, l := range strings.Split(links.String, "\x1f") {
				id, at, _ := strings.Cut(l, "\x1e")
				us, err := strconv.ParseInt(at, 10, 64)
				if err != nil {
					return fmt.Errorf("export facts: %w", err)
				}
				sf.Evidence = append(sf.Evidence, sgam.Evidence{EpisodeID: id, RecordedAt: sgam.FromMicros(us)})
			}
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

// withExtra scans the fact columns and then extra trailing columns.
type withExtra struct {
	sc    scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

// InsertFacts implements engine.Tx.
func (t *tx) InsertFacts(facts []sgam.StoredFact) error {
	var inserts, links []any
	actors := map[string][]int64{}
	for _, f := range facts {
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
		t.keys = append(t.keys, f.Key())
	}
	if _, err := t.s.bulkExec(t.ctx, bulkFacts, nil, inserts); err != nil {
		return fmt.Errorf("import facts: %w", err)
	}
	if _, err := t.s.bulkExec(t.ctx, bulkEvidence, nil, links); err != nil {
		return fmt.Errorf("import evidence: %w", err)
	}
	for actor, ids := range actors {
		if _, err := t.exec("import facts", `UPDATE facts SET actor = ?1 WHERE fact_id IN (SELECT value FROM json_each(?2))`, actor, jsonList(ids)); err != nil {
			return err
		}
	}
	return nil
}

// Observe implements engine.Tx.
func (t *tx) Observe(at int64) error {
	t.observe(at)
	return nil
}

// LockKeys implements engine.Tx: the write lock holds every key.
func (t *tx) LockKeys([]sgam.Key) error { return nil }

// StoredFacts implements ledger.ImportStore.
func (t *tx) StoredFacts(facts []sgam.StoredFact) (map[int64]sgam.StoredFact, error) {
	out := map[int64]sgam.StoredFact{}
	for _, f := range facts {
		have, ok, err := t.storedFact(f.ID)
		if err != nil {
			return nil, fmt.Errorf("import facts: %w", err)
		}
		if ok {
			out[f.ID] = have
		}
	}
	return out, nil
}

// HasEpisodes implements ledger.ImportStore.
func (t *tx) HasEpisodes(refs []ledger.EpisodeRef) (map[ledger.EpisodeRef]bool, error) {
	out := map[ledger.EpisodeRef]bool{}
	for _, r := range refs {
		ok, err := t.HasEpisode(r.Tenant, r.ID)
		if err != nil {
			return nil, err
		}
		out[r] = ok
	}
	return out, nil
}

// KeyRows implements ledger.ImportStore.
func (t *tx) KeyRows(keys []sgam.Key) (map[sgam.Key][]temporal.Row, error) {
	out := map[sgam.Key][]temporal.Row{}
	for _, k := range keys {
		rows, err := t.keyRows(k)
		if err != nil {
			return nil, err
		}
		out[k] = rows
	}
	return out, nil
}

// FactTenant implements ledger.ImportStore.
func (t *tx) FactTenant(id int64) (string, error) {
	var tenant string
	err := t.s.w.QueryRowContext(t.ctx, `SELECT tenant FROM facts WHERE fact_id = ?`, id).Scan(&tenant)
	_, _, err = found(tenant, err, "import facts")
	return tenant, err
}

// keyRows returns every row of a key for the invariant check.
func (t *tx) keyRows(k sgam.Key) ([]temporal.Row, error) {
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT fact_id, valid_from, valid_to, recorded_at, retracted_at FROM facts
		WHERE tenant = ?1 AND subject = ?2 AND attribute = ?3 AND member = ?4`, k.Tenant, k.Subject, k.Attribute, k.Member)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", k, err)
	}
	defer rows.Close()
	var out []temporal.Row
	for rows.Next() {
		var r temporal.Row
		var validTo, retractedAt sql.NullInt64
		if err := rows.Scan(&r.ID, &r.ValidFrom, &validTo, &r.RecordedAt, &retractedAt); err != nil {
			return nil, fmt.Errorf("check %s: %w", k, err)
		}
		r.ValidTo, r.RetractedAt = openIfNull(validTo), openIfNull(retractedAt)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check %s: %w", k, err)
	}
	return out, nil
}

// storedFact reads one fact row with its evidence inside the write transaction.
func (t *tx) storedFact(id int64) (sgam.StoredFact, bool, error) {
	f, err := scanFact(t.s.wst.factByID.QueryRowContext(t.ctx, id, temporal.Open))
	if errors.Is(err, sql.ErrNoRows) {
		return sgam.StoredFact{}, false, nil
	}
	if err != nil {
		return sgam.StoredFact{}, false, err
	}
	sf := sgam.StoredFact{Fact: f}
	if err := t.s.w.QueryRowContext(t.ctx, `SELECT coalesce(source, ''), coalesce(actor, '') FROM facts WHERE fact_id = ?`, id).Scan(&sf.Source, &sf.Actor); err != nil {
		return sf, false, err
	}
	rows, err := t.s.w.QueryContext(t.ctx, `SELECT episode_id, recorded_at FROM evidence WHERE fact_id = ? ORDER BY recorded_at, episode_id`, id)
	if err != nil {
		return sf, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var e sgam.Evidence
		var at int64
		if err := rows.Scan(&e.EpisodeID, &at); err != nil {
			return sf, false, err
		}
		e.RecordedAt = sgam.FromMicros(at)
		sf.Evidence = append(sf.Evidence, e)
	}
	return sf, true, rows.Err()
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
