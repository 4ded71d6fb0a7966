package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam"
)

// factColumns is the select list of a fact row f: its source, then its
// corroborating links made at or before the transaction instant bound to
// param, oldest first.
func factColumns(param string) string {
	return `f.fact_id, f.tenant_id, f.subject, f.attribute, f.member, f.value_text, f.valid_from, f.valid_to,
		f.recorded_at, f.retracted_at, f.supersedes, f.schema_version, f.source,
		(SELECT array_agg(e.episode_id ORDER BY e.recorded_at, e.episode_id) FROM evidence e
		  WHERE e.tenant_id = f.tenant_id AND e.fact_id = f.fact_id AND e.recorded_at <= ` + param + `)`
}

func scanFact(row pgx.Row, extra ...any) (sgam.Fact, error) {
	var f sgam.Fact
	var value, source *string
	var member string
	var corroborations []string
	dest := append([]any{&f.ID, &f.Tenant, &f.Subject, &f.Attribute, &member, &value, &f.ValidFrom, &f.ValidTo,
		&f.RecordedAt, &f.RetractedAt, &f.Supersedes, &f.SchemaVersion, &source, &corroborations}, extra...)
	if err := row.Scan(dest...); err != nil {
		return f, err
	}
	if value != nil {
		f.Value = []byte(*value)
	} else {
		f.Tombstone = true
	}
	if member != "" {
		f.Member = json.RawMessage(member)
	}
	f.ValidFrom = f.ValidFrom.UTC()
	f.RecordedAt = f.RecordedAt.UTC()
	f.ValidTo = utc(f.ValidTo)
	f.RetractedAt = utc(f.RetractedAt)
	f.Sources = make([]string, 0, 1+len(corroborations))
	if source != nil {
		f.Sources = append(f.Sources, *source)
	}
	f.Sources = append(f.Sources, corroborations...)
	return f, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// readFact reads one fact inside a transaction, with all its evidence.
func readFact(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant string, id int64) (sgam.Fact, error) {
	return scanFact(q.QueryRow(ctx, `SELECT `+factColumns("'infinity'")+` FROM facts f WHERE tenant_id = $1 AND fact_id = $2`, tenant, id))
}

// instants returns the parameters of a read (whose instants the engine
// checked): the given instants, or nil for "now" when the database's clock
// is the store's.
func (s *db) instants(at sgam.At) (asOf, knownAt *time.Time) {
	if s.clock != nil {
		now := s.clock.Now()
		if at.AsOf.IsZero() {
			at.AsOf = now
		}
		if at.KnownAt.IsZero() {
			at.KnownAt = now
		}
	}
	if !at.AsOf.IsZero() {
		asOf = &at.AsOf
	}
	if !at.KnownAt.IsZero() {
		knownAt = &at.KnownAt
	}
	return asOf, knownAt
}

// readInstants spells the two instants of a read for a query whose next
// free parameter is $n: a parameter where an instant is given, or
// statement_timestamp() for the database's now. Every combination is its
// own statement: an expression like coalesce($4, now()) would not serve as
// an index bound in a generic plan, and a read at a past as_of would then
// filter every row of the key.
func readInstants(v, k *time.Time, n int) (asOf, knownAt string, args []any) {
	asOf, knownAt = "statement_timestamp()", "statement_timestamp()"
	if v != nil {
		asOf, args = fmt.Sprintf("$%d::timestamptz", n), append(args, *v)
		n++
	}
	if k != nil {
		knownAt, args = fmt.Sprintf("$%d::timestamptz", n), append(args, *k)
	}
	return asOf, knownAt, args
}

// Get implements engine.Reader.
func (s *db) Get(ctx context.Context, key sgam.Key, at sgam.At) (*sgam.Fact, error) {
	v, k := s.instants(at)
	// One round trip: the scope and the query run in one implicit transaction.
	bt := newBatch(key.Tenant)
	asOfSQL, knownSQL, times := readInstants(v, k, 5)
	bt.Queue(`SELECT `+factColumns(knownSQL)+`, `+asOfSQL+` FROM facts f
		WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND member = $4 AND valid_from <= `+asOfSQL+`
		  AND recorded_at <= `+knownSQL+` AND (retracted_at IS NULL OR retracted_at > `+knownSQL+`)
		ORDER BY valid_from DESC LIMIT 1`, append([]any{key.Tenant, key.Subject, key.Attribute, key.Member}, times...)...)
	br := s.pool.SendBatch(ctx, bt)
	defer br.Close()
	if err := skipScope(br); err != nil {
		return nil, mapErr(fmt.Errorf("get %s: %w", key, err))
	}
	var asOf time.Time
	f, err := scanFact(br.QueryRow(), &asOf)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("get %s: %w", key, err))
	}
	// The newest row believed then that started by V: if it ended before V
	// (a gap) or is a tombstone, there is no value.
	if f.Tombstone || (f.ValidTo != nil && !f.ValidTo.After(asOf)) {
		return nil, nil
	}
	return &f, nil
}

// Subjects implements engine.Reader.
func (s *db) Subjects(ctx context.Context, tenant string, ids []string) ([]string, error) {
	var out []string
	err := s.readEach(ctx, tenant, "find subjects", func(tx querier) error {
		// Each id stops at its first believed row (DISTINCT over the rows
		// would read every row of each subject), in a LATERAL ... LIMIT 1,
		// which the planner keeps an index probe per id: it turns an
		// EXISTS into a semi-join, which before the table's first ANALYZE
		// it ran as a walk of the whole tenant (140 ms, against 0.2 ms).
		// "Believed" is spelled so that the planner cannot pick the
		// exclusion constraint's partial index (by its tenant_id) instead
		// of facts_key, as it did before the first ANALYZE (1 s a recall).
		rows, err := tx.Query(ctx, `SELECT id FROM unnest($2::text[]) id CROSS JOIN LATERAL (
			SELECT 1 FROM facts WHERE tenant_id = $1 AND subject = id AND coalesce(retracted_at, 'infinity') = 'infinity' LIMIT 1) f`, tenant, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

// SubjectsNamed implements engine.Reader.
func (s *db) SubjectsNamed(ctx context.Context, tenant string, members []string, at sgam.At) ([][2]string, error) {
	v, k := s.instants(at)
	asOfSQL, knownSQL, times := readInstants(v, k, 3)
	var out [][2]string
	err := s.readEach(ctx, tenant, "find subjects by name", func(tx querier) error {
		rows, err := tx.Query(ctx, `SELECT DISTINCT f.member, f.subject FROM facts f WHERE f.tenant_id = $1 AND f.attribute = 'alias'
			AND f.member = ANY($2) AND f.value_text IS NOT NULL
			AND f.recorded_at <= `+knownSQL+` AND (f.retracted_at IS NULL OR f.retracted_at > `+knownSQL+`)
			AND (f.valid_to IS NULL OR (f.valid_from <= `+asOfSQL+` AND f.valid_to > `+asOfSQL+`))`,
			append([]any{tenant, members}, times...)...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
			var p [2]string
			err := r.Scan(&p[0], &p[1])
			return p, err
		})
		return err
	})
	return out, err
}

// SubjectsFrom implements engine.Reader.
func (s *db) SubjectsFrom(ctx context.Context, tenant string, episodes []string, knownAt int64) ([]string, error) {
	var out []string
	err := s.readEach(ctx, tenant, "find subjects", func(tx querier) error {
		k := sgam.FromMicros(knownAt)
		rows, err := tx.Query(ctx, `SELECT DISTINCT subject FROM facts WHERE tenant_id = $1 AND source = ANY($2)
			AND recorded_at <= $3 AND (retracted_at IS NULL OR retracted_at > $3) ORDER BY subject`, tenant, episodes, k)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

// FactsFrom implements engine.Reader.
func (s *db) FactsFrom(ctx context.Context, tenant string, episodes, subjects []string, knownAt int64, limit int) ([]sgam.Fact, error) {
	k := sgam.FromMicros(knownAt)
	return s.queryFacts(ctx, tenant, "facts from episodes", `WITH mine AS (
			SELECT f.fact_id, f.subject, f.attribute, f.member, f.valid_to FROM facts f
			 WHERE f.tenant_id = $1 AND f.source = ANY($2) AND f.subject = ANY($3) AND f.recorded_at <= $4
			UNION
			SELECT f.fact_id, f.subject, f.attribute, f.member, f.valid_to FROM evidence v
			  JOIN facts f ON f.tenant_id = v.tenant_id AND f.fact_id = v.fact_id
			 WHERE v.tenant_id = $1 AND v.episode_id = ANY($2) AND v.recorded_at <= $4 AND f.subject = ANY($3)),
		ids AS (
			SELECT fact_id FROM mine
			UNION
			SELECT n.fact_id FROM mine r JOIN facts n ON n.tenant_id = $1 AND n.subject = r.subject AND n.attribute = r.attribute
			   AND n.member = r.member AND n.valid_from = r.valid_to
			 WHERE n.recorded_at <= $4 AND (n.retracted_at IS NULL OR n.retracted_at > $4))
		SELECT `+factColumns("$4")+` FROM facts f WHERE f.tenant_id = $1 AND f.fact_id IN (SELECT fact_id FROM ids)
		ORDER BY f.fact_id LIMIT $5`, tenant, episodes, subjects, k, limit)
}

// State implements engine.Reader.
func (s *db) State(ctx context.Context, tenant, subject string, at sgam.At) ([]sgam.Fact, error) {
	v, k := s.instants(at)
	asOfSQL, knownSQL, times := readInstants(v, k, 3)
	// Key by key, as on SQLite: k walks the subject's keys (attribute,
	// member) by index seeks, and each key's row at the instants is the
	// newest believed one starting by as_of, if it still holds then (Get's
	// rule). Reading every row of the subject instead costs its whole
	// history: 4 ms a recall for subjects of 1,000 rows.
	return s.queryFacts(ctx, tenant, "state of "+subject, `WITH RECURSIVE k(attribute, member) AS (
			(SELECT attribute, member FROM facts WHERE tenant_id = $1 AND subject = $2 ORDER BY attribute, member LIMIT 1)
			UNION ALL
			SELECT n.attribute, n.member FROM k CROSS JOIN LATERAL (
				SELECT attribute, member FROM facts WHERE tenant_id = $1 AND subject = $2 AND (attribute, member) > (k.attribute, k.member)
				ORDER BY attribute, member LIMIT 1) n)
		SELECT `+factColumns(knownSQL)+` FROM k CROSS JOIN LATERAL (
			SELECT * FROM facts g WHERE g.tenant_id = $1 AND g.subject = $2 AND g.attribute = k.attribute AND g.member = k.member
			  AND g.valid_from <= `+asOfSQL+` AND g.recorded_at <= `+knownSQL+` AND (g.retracted_at IS NULL OR g.retracted_at > `+knownSQL+`)
			ORDER BY g.valid_from DESC LIMIT 1) f
		WHERE (f.valid_to IS NULL OR f.valid_to > `+asOfSQL+`) AND f.value_text IS NOT NULL
		ORDER BY f.attribute, f.member`, append([]any{tenant, subject}, times...)...)
}

// Members implements engine.Reader.
func (s *db) Members(ctx context.Context, key sgam.Key, at sgam.At) ([]sgam.Fact, error) {
	v, k := s.instants(at)
	asOfSQL, knownSQL, times := readInstants(v, k, 4)
	return s.queryFacts(ctx, key.Tenant, "members of "+key.String(), `SELECT `+factColumns(knownSQL)+` FROM facts f
		WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND valid_from <= `+asOfSQL+` AND (valid_to IS NULL OR valid_to > `+asOfSQL+`)
		  AND recorded_at <= `+knownSQL+` AND (retracted_at IS NULL OR retracted_at > `+knownSQL+`) AND value_text IS NOT NULL
		ORDER BY member`, append([]any{key.Tenant, key.Subject, key.Attribute}, times...)...)
}

// History implements engine.Reader.
func (s *db) History(ctx context.Context, key sgam.Key) ([]sgam.Fact, error) {
	return s.queryFacts(ctx, key.Tenant, "history of "+key.String(), `SELECT `+factColumns("'infinity'")+` FROM facts f
		WHERE tenant_id = $1 AND subject = $2 AND attribute = $3 AND ($4 = '' OR member = $4) ORDER BY fact_id`, key.Tenant, key.Subject, key.Attribute, key.Member)
}

// queryFacts runs a query of facts within a tenant's scope, in one round trip.
func (s *db) queryFacts(ctx context.Context, tenant, what, query string, args ...any) (out []sgam.Fact, err error) {
	err = s.readEach(ctx, tenant, what, func(tx querier) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = collectFacts(rows)
		return err
	})
	return out, err
}

// Trace implements engine.Reader.
func (s *db) Trace(ctx context.Context, tenant string, factID int64) (sgam.Trace, error) {
	var tr sgam.Trace
	// Repeatable read: the chain and its episodes from one snapshot.
	err := s.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, "trace", func(tx pgx.Tx) error {
		bt := newBatch(tenant)
		bt.Queue(`WITH RECURSIVE chain (id, depth) AS (
				SELECT $2::bigint, 0
				UNION ALL
				SELECT f.supersedes, c.depth + 1 FROM facts f JOIN chain c ON f.tenant_id = $1 AND f.fact_id = c.id
				WHERE f.supersedes IS NOT NULL AND c.depth < 10000)
			SELECT `+factColumns("'infinity'")+` FROM chain c JOIN facts f ON f.tenant_id = $1 AND f.fact_id = c.id
			ORDER BY c.depth`, tenant, factID)
		br := tx.SendBatch(ctx, bt)
		if err := skipScope(br); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		tr.Chain, err = collectFacts(rows)
		br.Close()
		if err != nil {
			return err
		}
		if len(tr.Chain) == 0 {
			return nil
		}
		var ids []string
		seen := map[string]bool{}
		for _, f := range tr.Chain {
			for _, id := range f.Sources {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		rows, err = tx.Query(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE tenant_id = $1 AND episode_id = ANY($2)`, tenant, ids)
		if err != nil {
			return err
		}
		eps, err := collectEpisodes(rows)
		if err != nil {
			return err
		}
		byID := map[string]sgam.Episode{}
		for _, e := range eps {
			byID[e.ID] = e
		}
		tr.Episodes = make([]sgam.Episode, 0, len(ids))
		for _, id := range ids {
			tr.Episodes = append(tr.Episodes, byID[id])
		}
		return nil
	})
	return tr, err
}

func collectFacts(rows pgx.Rows) ([]sgam.Fact, error) {
	defer rows.Close()
	out := []sgam.Fact{}
	for rows.Next() {
		f, err := scanFact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Attributes implements engine.Reader: the distinct attributes of a
// subject, one index seek each (a recursive walk down facts' key index),
// however long their histories.
func (s *db) Attributes(ctx context.Context, tenant, subject string, limit int) ([]string, error) {
	var out []string
	err := s.readEach(ctx, tenant, "attributes of "+subject, func(tx querier) error {
		rows, err := tx.Query(ctx, `WITH RECURSIVE a(attr) AS (
			SELECT min(attribute) FROM facts WHERE tenant_id = $1 AND subject = $2
			UNION ALL
			SELECT (SELECT min(attribute) FROM facts WHERE tenant_id = $1 AND subject = $2 AND attribute > a.attr) FROM a WHERE a.attr IS NOT NULL)
		SELECT attr FROM a WHERE attr IS NOT NULL LIMIT $3`, tenant, subject, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}
