package postgres

import (
	"io/fs"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/schema"
)

// migrateBefore runs, on conn's database, the migrations before the
// one whose name starts with prefix: the database of an older sgam.
func migrateBefore(t *testing.T, conn *pgx.Conn, prefix string) int {
	ctx := t.Context()
	names, err := fs.Glob(migrations, "migrations/*.sql")
	require.NoError(t, err)
	sort.Strings(names)
	before := sort.SearchStrings(names, "migrations/"+prefix)
	_, err = conn.Exec(ctx, `CREATE TABLE sgam_schema (version integer NOT NULL); INSERT INTO sgam_schema VALUES (0)`)
	require.NoError(t, err)
	for _, name := range names[:before] {
		body, err := migrations.ReadFile(name)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, string(body))
		require.NoError(t, err, name)
	}
	return before
}

// TestUpgradeMakesTheSchemaTheDefault: a database written before schemas
// were per tenant (migration 0004) had one schema for the whole store;
// after the upgrade it is the store default, which governs every tenant
// without a schema of its own.
func TestUpgradeMakesTheSchemaTheDefault(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	before := migrateBefore(t, conn, "0004")
	old, err := schema.Parse([]byte("attributes:\n  full_name: {memory: profile, type: string}\n"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO schemas (version, body, hash, applied_at) VALUES (1, $1, $2, now())`, string(old.Canonical()), old.Hash())
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE sgam_schema SET version = `+strconv.Itoa(before))
	require.NoError(t, err)

	s, err := Open(ctx, url, Options{})
	require.NoError(t, err)
	defer s.Close()
	def, err := s.DefaultSchema(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, def.Version)
	require.Equal(t, old.Hash(), def.Hash)
	write := func(tenant, attribute string) error {
		_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attribute},
			Value: []byte(`"x"`), ValidFrom: time.Now().Add(-time.Minute), Source: "e1"})
		return err
	}
	for _, tenant := range []string{"acme", "beta"} {
		require.NoError(t, write(tenant, "full_name"), tenant)
		require.ErrorContains(t, write(tenant, "city"), "city", "the default governs %s", tenant)
	}
}

// TestUpgradeFillsSearchTerms: a database written before migration 0008
// has its episodes' terms filled in by the upgrade, every tenant's, and
// searches find them within their tenant.
func TestUpgradeFillsSearchTerms(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	before := migrateBefore(t, conn, "0008")
	_, err = conn.Exec(ctx, `BEGIN; SELECT set_config('sgam.scope', 'all', true);
		INSERT INTO episodes (tenant_id, episode_id, kind, content, occurred_at, recorded_at) VALUES
			('acme', 'e1', 'message', 'my passport renewal', now(), now()),
			('acme', 'e2', 'message', '', now(), now()),
			('globex', 'e1', 'message', 'a zebra crossing', now(), now());
		UPDATE sgam_schema SET version = `+strconv.Itoa(before)+`; COMMIT`)
	require.NoError(t, err)

	s, err := Open(ctx, url, Options{})
	require.NoError(t, err)
	defer s.Close()
	search := func(tenant, text string) []string {
		hits, err := s.SearchEpisodes(ctx, sgam.SearchQuery{Tenant: tenant, Text: text})
		require.NoError(t, err)
		ids := []string{}
		for _, h := range hits {
			ids = append(ids, h.Episode.Tenant+"/"+h.Episode.ID)
		}
		return ids
	}
	require.Equal(t, []string{"acme/e1"}, search("acme", "passports renewed"))
	require.Equal(t, []string{"globex/e1"}, search("globex", "zebra"))
	require.Empty(t, search("globex", "passport"))
	v, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
}
