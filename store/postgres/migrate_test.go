package postgres

import (
	"io/fs"
	"sort"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/pgtest"
)

// TestUpgradeFillsSearchTerms: a database written before migration 0008
// has its episodes' terms filled in by the upgrade, every tenant's, and
// searches find them within their tenant.
func TestUpgradeFillsSearchTerms(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	names, err := fs.Glob(migrations, "migrations/*.sql")
	require.NoError(t, err)
	sort.Strings(names)
	before := sort.SearchStrings(names, "migrations/0008")
	_, err = conn.Exec(ctx, `CREATE TABLE sgam_schema (version integer NOT NULL); INSERT INTO sgam_schema VALUES (0)`)
	require.NoError(t, err)
	for _, name := range names[:before] {
		body, err := migrations.ReadFile(name)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, string(body))
		require.NoError(t, err, name)
	}
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
