package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sgam-dev/sgam"
)

// episodeColumns are the columns scanEpisode reads.
var episodeColumns = episodeColumnsOf("")

// episodeColumnsOf is episodeColumns of a table alias.
func episodeColumnsOf(alias string) string { return columnsOf(alias, "@tenant, "+episodeFields) }

// episodeColumnsIn is episodeColumnsOf without the tenant: the columns
// of a read of one tenant's episodes, which newEpisodeScanIn scans. The
// tenant is the read's own, and a text column read costs two allocations
// a row (the recall's reads of episodes, search and Around, read about
// fifty rows).
func episodeColumnsIn(alias string) string { return columnsOf(alias, episodeFields) }

const episodeFields = `@episode_id, @session, @kind, @content, @occurred_at, @recorded_at, @metadata,
		coalesce(@idempotency_key, ''), coalesce(@retention, ''), @subjects`

// columnsOf is columns (each name after an @) of a table alias.
func columnsOf(alias, columns string) string {
	if alias != "" {
		alias += "."
	}
	return strings.ReplaceAll(columns, "@", alias)
}

// scanEpisode scans the episodeColumns of a row, then extra.
func scanEpisode(sc scanner, extra ...any) (sgam.Episode, error) {
	return newEpisodeScan(nil, extra).scan(sc)
}

// episodeScan scans rows of prefix, the episodeColumns and suffix into one
// set of destinations, kept for every row of a read: Scan takes them as
// pointers, which escape, so that fresh ones for each row cost half a
// dozen allocations (about 500 bytes) a row, and a recall reads about a
// hundred episodes.
type episodeScan struct {
	e                  sgam.Episode
	occurred, recorded int64
	metadata, subjects []byte
	dest               []any
}

func newEpisodeScan(prefix, suffix []any) *episodeScan {
	s := &episodeScan{}
	s.dest = append(append(slices.Clip(prefix), &s.e.Tenant), s.fields()...)
	s.dest = append(s.dest, suffix...)
	return s
}

// newEpisodeScanIn is newEpisodeScan for rows of episodeColumnsIn, all of
// them tenant's.
func newEpisodeScanIn(tenant string, prefix, suffix []any) *episodeScan {
	s := &episodeScan{}
	s.e.Tenant = tenant
	s.dest = append(append(slices.Clip(prefix), s.fields()...), suffix...)
	return s
}

// fields are the destinations of episodeFields.
func (s *episodeScan) fields() []any {
	return []any{&s.e.ID, &s.e.Session, &s.e.Kind, &s.e.Content, &s.occurred, &s.recorded,
		&s.metadata, &s.e.IdempotencyKey, &s.e.Retention, &s.subjects}
}

// scan scans one row (every destination is written by each, NULL as
// nil); the prefix and suffix destinations hold its other columns until
// the next.
func (s *episodeScan) scan(sc scanner) (sgam.Episode, error) {
	if err := sc.Scan(s.dest...); err != nil {
		return sgam.Episode{}, err
	}
	e := s.e
	if s.subjects != nil {
		// Into a list of its own: &e.Subjects would move every row's
		// episode (224 bytes) to the heap.
		var subjects []string
		if err := json.Unmarshal(s.subjects, &subjects); err != nil {
			return e, fmt.Errorf("episode %s: stored subjects do not parse: %w", e.ID, err)
		}
		e.Subjects = subjects
	}
	e.OccurredAt = sgam.FromMicros(s.occurred)
	e.RecordedAt = sgam.FromMicros(s.recorded)
	if s.metadata != nil {
		e.Metadata = s.metadata // a copy of the row's bytes, the row's own
	}
	return e, nil
}

// found turns a single-row read into (row, found, error).
func found[T any](v T, err error, what string) (T, bool, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return v, false, nil
	case err != nil:
		return v, false, fmt.Errorf("%s: %w", what, err)
	}
	return v, true, nil
}

// EpisodeByID implements engine.Tx (the write lock holds every row).
func (t *tx) EpisodeByID(tenant, id string) (sgam.Episode, bool, error) {
	e, err := scanEpisode(t.queryRow(`SELECT `+episodeColumns+` FROM episodes WHERE tenant = ?1 AND episode_id = ?2`, tenant, id))
	return found(e, err, "read episode")
}

// EpisodeByKey implements engine.Tx.
func (t *tx) EpisodeByKey(tenant, key string) (sgam.Episode, bool, error) {
	e, err := scanEpisode(t.queryRow(`SELECT `+episodeColumns+` FROM episodes WHERE tenant = ?1 AND idempotency_key = ?2`, tenant, key))
	return found(e, err, "read episode")
}

// InsertEpisode implements engine.Tx.
func (t *tx) InsertEpisode(e sgam.Episode) error {
	_, err := t.exec("add episode "+e.ID, `INSERT INTO episodes (tenant, episode_id, session, kind, content, occurred_at, recorded_at, metadata, idempotency_key, retention, subjects)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.Tenant, e.ID, e.Session, e.Kind, e.Content, sgam.Micros(e.OccurredAt),
		sgam.Micros(e.RecordedAt), nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention), subjectsJSON(e.Subjects))
	return err
}

// FillPlaceholder implements engine.Tx.
func (t *tx) FillPlaceholder(e sgam.Episode) error {
	_, err := t.exec("add episode "+e.ID, `UPDATE episodes SET session = ?, kind = ?, content = ?, occurred_at = ?, metadata = ?, idempotency_key = ?, retention = ?, subjects = ?
		WHERE tenant = ? AND episode_id = ?`, e.Session, e.Kind, e.Content, sgam.Micros(e.OccurredAt),
		nullString(string(e.Metadata)), nullString(e.IdempotencyKey), nullString(e.Retention), subjectsJSON(e.Subjects), e.Tenant, e.ID)
	return err
}

// subjectsJSON is an episode's subjects as stored: a JSON array, or NULL.
func subjectsJSON(subjects []string) any {
	if len(subjects) == 0 {
		return nil
	}
	b, _ := json.Marshal(subjects)
	return string(b)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Episode implements engine.Reader.
func (s *db) Episode(ctx context.Context, tenant, id string) (sgam.Episode, bool, error) {
	sctx, err := statementContext(ctx)
	if err != nil {
		return sgam.Episode{}, false, mapErr(err)
	}
	e, err := scanEpisode(s.rst.episode.QueryRowContext(sctx, tenant, id))
	e, ok, err := found(e, err, "get episode")
	return e, ok, mapErr(err)
}

// Episodes implements engine.Reader.
func (s *db) Episodes(ctx context.Context, q sgam.EpisodeQuery) ([]sgam.Episode, error) {
	// Conditions are added only when asked for, so that the planner picks
	// the index of the query at hand.
	where := `tenant = ?1`
	if q.Session != "" {
		where += ` AND session = ?3`
	}
	if !q.Before.IsZero() {
		where += ` AND occurred_at < ?4`
	}
	if !q.Since.IsZero() {
		where += ` AND occurred_at >= ?5`
	}
	args := []any{q.Tenant, q.Limit, q.Session, sgam.Micros(q.Before), sgam.Micros(q.Since)}
	order := `occurred_at, episode_id`
	if q.Latest {
		order = `occurred_at DESC, episode_id DESC`
	}
	out := []sgam.Episode{}
	rows := newEpisodeScan(nil, nil)
	err := s.each(ctx, "list episodes", `SELECT `+episodeColumns+` FROM episodes WHERE `+where+` ORDER BY `+order+` LIMIT ?2`, args, func(sc scanner) error {
		e, err := rows.scan(sc)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	if q.Latest {
		slices.Reverse(out)
	}
	return out, nil
}

const pendingColumns = `tenant, pending_id, subject, attribute, member, value, valid_from, source, reason, conflicts_with, recorded_at, schema_version, signals`

func scanCandidate(sc scanner) (sgam.Candidate, error) {
	var c sgam.Candidate
	var member, value string
	var validFrom, recordedAt int64
	var conflicts sql.NullInt64
	if err := sc.Scan(&c.Tenant, &c.ID, &c.Subject, &c.Attribute, &member, &value, &validFrom, &c.Source, &c.Reason,
		&conflicts, &recordedAt, &c.SchemaVersion, &c.Signals); err != nil {
		return c, err
	}
	if member != "" {
		c.Member = []byte(member)
	}
	c.Value = []byte(value)
	c.ValidFrom, c.RecordedAt = sgam.FromMicros(validFrom), sgam.FromMicros(recordedAt)
	if conflicts.Valid {
		id := conflicts.Int64
		c.ConflictsWith = &id
	}
	return c, nil
}

// Pending implements engine.Reader.
func (s *db) Pending(ctx context.Context, q sgam.PendingQuery) ([]sgam.Candidate, error) {
	out := []sgam.Candidate{}
	err := s.each(ctx, "list pending", `SELECT `+pendingColumns+` FROM pending
		WHERE tenant = ?1 AND (?2 = '' OR subject = ?2) ORDER BY recorded_at, pending_id LIMIT ?3`, []any{q.Tenant, q.Subject, q.Limit}, func(sc scanner) error {
		c, err := scanCandidate(sc)
		out = append(out, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Candidate implements engine.Reader.
func (s *db) Candidate(ctx context.Context, tenant, id string) (sgam.Candidate, bool, error) {
	c, err := scanCandidate(s.queryRow(ctx, `SELECT `+pendingColumns+` FROM pending WHERE tenant = ? AND pending_id = ?`, tenant, id))
	c, ok, err := found(c, err, "read pending")
	return c, ok, mapErr(err)
}

// Around implements engine.Reader: one statement of two index seeks per
// episode (the n before it in its session, the n after), each as deep
// as n.
func (s *db) Around(ctx context.Context, tenant string, at []sgam.Episode, n int, knownAt int64) (map[string]sgam.Window, error) {
	args := []any{tenant, n, knownAt}
	for _, e := range at {
		args = append(args, e.ID, e.Session, sgam.Micros(e.OccurredAt))
	}
	out := map[string]sgam.Window{}
	var target, side int
	rows := newEpisodeScanIn(tenant, []any{&target, &side}, nil)
	err := s.each(ctx, "episodes around", aroundSQL(len(at)), args, func(sc scanner) error {
		e, err := rows.scan(sc)
		if err != nil {
			return err
		}
		if target < 0 || target >= len(at) {
			return fmt.Errorf("episodes around: row of episode %d of %d", target, len(at))
		}
		id := at[target].ID
		w := out[id]
		// A side holds at most n (sgam.MaxAround): room for them at once.
		if side == 0 {
			if w.Before == nil {
				w.Before = make([]sgam.Episode, 0, n)
			}
			w.Before = append(w.Before, e) // nearest first (engine.Reader)
		} else {
			if w.After == nil {
				w.After = make([]sgam.Episode, 0, n)
			}
			w.After = append(w.After, e)
		}
		out[id] = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// aroundSQL is Around's statement for k episodes (parameters ?4 on, an
// id, its session and its occurred_at per episode): per episode, the
// episodes of its session before it, nearest first, then those after it,
// each row led by the episode's place among the k (a small integer: its
// id would be a string to allocate for every row) and its side; each
// side a seek of the index episodes_session that stops after ?2
// rows (plan_test.go). The episode's own row is not read again: taking
// its session and instant from the caller instead of from a join to it
// made Around a quarter cheaper on `sgam bench http`'s store. Each text
// is built once (k is at most sgam.MaxAroundLookup): it is long, and it
// is the key of its prepared statement.
func aroundSQL(k int) string {
	if q, ok := aroundSQLs.Load(k); ok {
		return q.(string)
	}
	var q strings.Builder
	for i := range k {
		id, session, occurred := 4+3*i, 5+3*i, 6+3*i
		for side, cmp := range []string{"<", ">"} {
			dir := "DESC"
			if side == 1 {
				dir = "ASC"
			}
			if i > 0 || side > 0 {
				q.WriteString(" UNION ALL ")
			}
			fmt.Fprintf(&q, `SELECT * FROM (SELECT %d, %d, %s FROM episodes x
				WHERE x.tenant = ?1 AND x.session = ?%d AND (x.occurred_at, x.episode_id) %s (?%d, ?%d) AND x.recorded_at <= ?3
				ORDER BY x.occurred_at %s, x.episode_id %s LIMIT ?2)`, i, side, episodeColumnsIn("x"), session, cmp, occurred, id, dir, dir)
		}
	}
	text, _ := aroundSQLs.LoadOrStore(k, q.String())
	return text.(string)
}

var aroundSQLs sync.Map // k → aroundSQL(k)
