package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// TestUpgradeMakesTheSchemaTheDefault: a file written before schemas were
// per tenant (migration 0004) had one schema for the whole store; opened
// now, that schema is the store default, it governs every tenant that has
// none of its own, and a tenant's own schema replaces it for that tenant
// only.
func TestUpgradeMakesTheSchemaTheDefault(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	// The file of an sgam before 0004, with its one schema. (Its migrations
	// are run by hand: today's store cannot open a file that old without
	// upgrading it.)
	old, err := schema.Parse([]byte("attributes:\n  full_name: {memory: profile, type: string}\n"))
	require.NoError(t, err)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, name := range []string{"0001_ledger.sql", "0002_schemas.sql", "0003_api_keys.sql"} {
		body, err := migrations.ReadFile("migrations/" + name)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, string(body))
		require.NoError(t, err, name)
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = 3", applicationID))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO schemas (version, body, hash, applied_at) VALUES (1, ?, ?, ?)`,
		string(old.Canonical()), old.Hash(), sgam.Micros(time.Now()))
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	defer s.Close()
	def, err := s.DefaultSchema(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, def.Version)
	require.Equal(t, old.Hash(), def.Hash)

	now := time.Now().Add(-time.Minute)
	write := func(tenant, attribute string) error {
		_, err := s.Assert(ctx, sgam.Assertion{Key: sgam.Key{Tenant: tenant, Subject: "mira", Attribute: attribute},
			Value: []byte(`"x"`), ValidFrom: now, Source: "e1"})
		return err
	}
	for _, tenant := range []string{"acme", "beta"} {
		require.NoError(t, write(tenant, "full_name"), tenant)
		require.ErrorContains(t, write(tenant, "city"), "city", "the default governs %s", tenant)
	}
	_, err = s.ApplySchema(ctx, "beta", []byte("attributes:\n  city: {memory: profile, type: string}\n"), false)
	require.NoError(t, err)
	require.NoError(t, write("beta", "city"))
	require.Error(t, write("acme", "city"), "beta's schema is beta's only")
	cur, err := s.Schema(ctx, "acme")
	require.NoError(t, err)
	require.True(t, cur.StoreDefault)
}
