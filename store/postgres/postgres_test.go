package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/postgres"
	"github.com/sgam-dev/sgam/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newStore(t testing.TB, opts storetest.Options) sgam.Store {
	s, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{Clock: opts.Clock, Limits: opts.Limits, Observer: opts.Observer})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

func TestVectorConformance(t *testing.T) {
	storetest.RunVectors(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, newStore)
}

// TestRowLevelSecurity: raw SQL, on the store's own connection role, sees
// nothing of a tenant other than the one its transaction set, even with
// no tenant filter at all, and cannot write rows of another tenant.
func TestRowLevelSecurity(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer s.Close()
	for _, tenant := range []string{"acme", "globex"} {
		_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: "city"},
			Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
		require.NoError(t, err)
		_, err = s.AddEpisode(ctx, sgam.Episode{Tenant: tenant, ID: "e2", Kind: sgam.KindMessage, Content: "passport renewal", OccurredAt: time.Now()})
		require.NoError(t, err)
	}
	count := func(setup string) map[string]int {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		if setup != "" {
			_, err := tx.Exec(ctx, setup)
			require.NoError(t, err)
		}
		out := map[string]int{}
		for _, table := range []string{"facts", "episodes", "evidence", "search_terms"} {
			var n int
			require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)) // no tenant filter
			out[table] = n
		}
		return out
	}
	none := map[string]int{"facts": 0, "episodes": 0, "evidence": 0, "search_terms": 0}
	require.Equal(t, none, count(""), "no tenant set: nothing")
	require.Equal(t, none, count(`SELECT set_config('sgam.tenant', 'initech', true)`), "the wrong tenant: nothing")
	require.Equal(t, map[string]int{"facts": 1, "episodes": 2, "evidence": 0, "search_terms": 2}, count(`SELECT set_config('sgam.tenant', 'acme', true)`))

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT set_config('sgam.tenant', 'acme', true)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO episodes (tenant_id, episode_id, kind, occurred_at, recorded_at) VALUES ('globex', 'x', 'message', now(), now())`)
	require.ErrorContains(t, err, "row-level security")
}

// TestSuperuserRefused: connecting as a role that bypasses row-level
// security is refused, since the policies would silently not apply.
func TestSuperuserRefused(t *testing.T) {
	_, err := postgres.Open(t.Context(), pgtest.Admin(t), postgres.Options{})
	require.Error(t, err)
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Contains(t, err.Error(), "row-level security")
}

// TestBackendKilledMidWrite terminates the server process of a write
// transaction after it retracted a row and while it inserts the new ones:
// nothing of it remains, the caller gets an error it may retry, and the
// retry succeeds.
func TestBackendKilledMidWrite(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url, postgres.Options{})
	require.NoError(t, err)
	defer s.Close()
	k := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"}
	at := time.Now().Add(-time.Hour)
	_, err = s.Assert(ctx, sgam.Assertion{Key: k, Value: []byte(`"Oslo"`), ValidFrom: at, Source: "e1"})
	require.NoError(t, err)

	// As superuser: a trigger that stalls the insert of one value, so the
	// write can be killed in the middle.
	admin, err := pgx.Connect(ctx, pgtest.Admin(t))
	require.NoError(t, err)
	defer admin.Close(ctx)
	var schema string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))
	_, err = admin.Exec(ctx, `CREATE FUNCTION `+schema+`.stall() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.value_text = '"stall"' THEN PERFORM pg_sleep(60); END IF; RETURN NEW; END $$;
		CREATE TRIGGER stall BEFORE INSERT ON `+schema+`.facts FOR EACH ROW EXECUTE FUNCTION `+schema+`.stall()`)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := s.Assert(ctx, sgam.Assertion{Key: k, Value: []byte(`"stall"`), ValidFrom: at.Add(time.Minute), Source: "e2"})
		done <- err
	}()
	var pid int
	require.Eventually(t, func() bool {
		err := admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'INSERT INTO facts%'`).Scan(&pid)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the write never reached the stalled insert")
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	err = <-done
	require.Error(t, err)
	require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), "a retryable error: %v", err)

	hist, err := s.History(ctx, k)
	require.NoError(t, err)
	require.Len(t, hist, 1, "nothing of the killed write remains")
	require.Nil(t, hist[0].RetractedAt, "its retraction was rolled back")
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)

	_, err = admin.Exec(ctx, `DROP TRIGGER stall ON `+schema+`.facts`)
	require.NoError(t, err)
	_, err = s.Assert(ctx, sgam.Assertion{Key: k, Value: []byte(`"stall"`), ValidFrom: at.Add(time.Minute), Source: "e2"})
	require.NoError(t, err, "the retry succeeds")
}

// storeAndConn opens a store on a database of its own and a raw
// connection to it, as the store's role, for writing past the store.
func storeAndConn(t *testing.T) (*postgres.Store, *pgx.Conn) {
	url := pgtest.URL(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return s, conn
}

// TestCheckSearchTerms: sgam check names an episode whose search terms
// (migration 0008) are not those of its content, and terms left by an
// episode that is gone.
func TestCheckSearchTerms(t *testing.T) {
	ctx := t.Context()
	s, conn := storeAndConn(t)
	for _, id := range []string{"e1", "e2"} {
		_, err := s.AddEpisode(ctx, sgam.Episode{Tenant: "acme", ID: id, Kind: sgam.KindMessage, Content: "passport renewal", OccurredAt: time.Now()})
		require.NoError(t, err)
	}
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)

	_, err = conn.Exec(ctx, `BEGIN; SELECT set_config('sgam.tenant', 'acme', true);
		DELETE FROM search_terms WHERE episode_id = 'e1' AND term = 'passport';
		INSERT INTO search_terms (tenant_id, term, episode_id) VALUES ('acme', 'zebra', 'gone'); COMMIT`)
	require.NoError(t, err)

	v, err = s.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, []sgam.Violation{
		{Rule: "search_index", Tenant: "acme", Message: "episode e1: its search terms are not those of its content (sgam reindex rebuilds them)"},
		{Rule: "search_index", Tenant: "acme", Message: "episode gone is gone, and its search terms are left (sgam reindex deletes them)"},
	}, v)

	// A stray term of an episode that is there goes too.
	_, err = conn.Exec(ctx, `BEGIN; SELECT set_config('sgam.tenant', 'acme', true);
		INSERT INTO search_terms (tenant_id, term, episode_id) VALUES ('acme', 'zebra', 'e2'); COMMIT`)
	require.NoError(t, err)
	_, err = s.Reindex(ctx, "", nil)
	require.NoError(t, err)
	v, err = s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v, "reindex rebuilt the terms")
	hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: "acme", Text: "zebra passport"})
	require.NoError(t, err)
	require.Len(t, hits, 2)
}

// TestDatabaseRefusesOverlap: the exclusion constraint (migration 0009:
// on the key's hash) refuses a believed row that overlaps another of its
// key, written by raw SQL past the store, and lets in a row of another key
// with the same window.
func TestDatabaseRefusesOverlap(t *testing.T) {
	ctx := t.Context()
	s, conn := storeAndConn(t)
	_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "city"},
		Value: []byte(`"Oslo"`), ValidFrom: time.Now().Add(-time.Hour), Source: "e1"})
	require.NoError(t, err)
	copyRow := func(subject string, id int) error {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `SELECT set_config('sgam.tenant', 'acme', true)`)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO facts (tenant_id, fact_id, subject, attribute, member, value_text, valid_from, recorded_at, source, schema_version)
			SELECT tenant_id, $2, $1, attribute, member, '"Rome"', valid_from + interval '1 minute', recorded_at, source, schema_version FROM facts`, subject, id)
		return err
	}
	err = copyRow("mira", 1_000_001)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "23P01", pe.Code, "exclusion violation")
	require.Equal(t, "facts_believed_no_overlap", pe.ConstraintName)
	require.NoError(t, copyRow("ana", 1_000_002), "another key's row with the same window")
}
