package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/pgtest"
	"github.com/sgam-dev/sgam/store/postgres"
)

// withoutRLS lists the tables of the store's schema that have no
// row-level security, each with the reason. Every other table must carry
// the block of tenantBlock. A table added here needs a reason a reviewer
// can check: it holds no tenant's rows, or it must be read before the
// tenant is known.
var withoutRLS = map[string]string{
	"sgam_schema": "the migrations' bookkeeping: one row, the schema version",
	"sgam_meta":   "store-wide values (tx_floor), no tenant's data",
	"secrets":     "store-wide secrets (the receipt key), no tenant's data",
	"api_keys":    "looked up by key id before the tenant is known; holds only a hash of each secret",
	// River's tables (package queue), in the ledger's schema. Jobs hold
	// ids only (queue.ExtractArgs, queue.EmbedArgs), never content.
	"river_job":          "the queue's jobs, of every tenant, for the workers: ids only",
	"river_queue":        "River's queues: names and settings",
	"river_leader":       "River's leader election: the client that leads",
	"river_migration":    "River's migrations bookkeeping",
	"river_notification": "River's notification outbox: topics and queue names, no job data",
}

// isolation is the condition of the policy tenant_isolation: the
// transaction's tenant (sgam.tenant), or every tenant for the operations
// that span them (sgam.scope 'all').
const isolation = `tenant_id = current_setting('sgam.tenant', true) OR current_setting('sgam.scope', true) = 'all'`

// tenantBlock is what every tenant table's migration has (0001_ledger.sql
// and each one after it), for table.
func tenantBlock(table string) string {
	return fmt.Sprintf(`ALTER TABLE %[1]s ENABLE ROW LEVEL SECURITY;
ALTER TABLE %[1]s FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON %[1]s
    USING (%[2]s)
    WITH CHECK (%[2]s);`, table, isolation)
}

// querier is a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type policy struct {
	name, cmd, using, check string
	permissive              bool
}

type table struct {
	name            string
	tenantID        bool
	enabled, forced bool
	policies        []policy
}

// rlsProblems reads the catalog of the current schema (the first on the
// search_path: where the migrations create the tables) and returns what
// is wrong with its row-level security, one message per table, by table
// name: a table not on withoutRLS without the whole block, a table on it
// that has row-level security after all, an entry for a table that does
// not exist.
func rlsProblems(ctx context.Context, q querier) ([]string, error) {
	// pg_attribute rather than information_schema.columns, which shows
	// only the columns the current role has a privilege on.
	rows, err := q.Query(ctx, `SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
			EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnum > 0 AND NOT a.attisdropped)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
		ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*table, error) {
		t := &table{}
		return t, r.Scan(&t.name, &t.enabled, &t.forced, &t.tenantID)
	})
	if err != nil {
		return nil, err
	}
	byName := map[string]*table{}
	for _, t := range tables {
		byName[t.name] = t
	}
	rows, err = q.Query(ctx, `SELECT tablename, policyname, permissive = 'PERMISSIVE', cmd, coalesce(qual, ''), coalesce(with_check, '')
		FROM pg_policies WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	var on string
	var p policy
	_, err = pgx.ForEachRow(rows, []any{&on, &p.name, &p.permissive, &p.cmd, &p.using, &p.check}, func() error {
		if t := byName[on]; t != nil {
			t.policies = append(t.policies, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	var problems []string
	for _, t := range tables {
		if reason, ok := withoutRLS[t.name]; ok {
			if t.enabled || t.forced || len(t.policies) > 0 {
				problems = append(problems, fmt.Sprintf("table %s has row-level security, and withoutRLS (store/postgres/rls_test.go) says it has none (%q): remove it from withoutRLS", t.name, reason))
			}
			continue
		}
		if msg := t.missing(); msg != "" {
			problems = append(problems, msg)
		}
	}
	for name := range withoutRLS {
		if byName[name] == nil {
			problems = append(problems, fmt.Sprintf("withoutRLS (store/postgres/rls_test.go) names table %s, which the store does not have: remove it", name))
		}
	}
	slices.Sort(problems)
	return problems, nil
}

// missing says what table lacks of the tenant block, "" when nothing.
func (t *table) missing() string {
	if !t.tenantID {
		return fmt.Sprintf("table %s has no tenant_id column and no row-level security: if it holds a tenant's rows, give it a tenant_id column and add to its migration\n%s\nif it is store-wide by nature, add it to withoutRLS in store/postgres/rls_test.go with the reason",
			t.name, tenantBlock(t.name))
	}
	var lacks []string
	if !t.enabled {
		lacks = append(lacks, "row-level security is not enabled (ENABLE ROW LEVEL SECURITY)")
	}
	if !t.forced {
		lacks = append(lacks, "row-level security is not forced (FORCE ROW LEVEL SECURITY: without it the tables' owner, the role sgam connects as, bypasses the policy)")
	}
	var iso *policy
	for i, p := range t.policies {
		switch {
		case p.name == "tenant_isolation":
			iso = &t.policies[i]
		case p.permissive:
			lacks = append(lacks, fmt.Sprintf("policy %s is permissive: it widens what tenant_isolation lets through (make it AS RESTRICTIVE, or drop it)", p.name))
		}
	}
	switch {
	case iso == nil:
		lacks = append(lacks, "it has no policy tenant_isolation")
	default:
		if iso.cmd != "ALL" || !iso.permissive {
			lacks = append(lacks, fmt.Sprintf("policy tenant_isolation must be a permissive policy FOR ALL commands, not %s", iso.cmd))
		}
		if !comparesTenant(iso.using) {
			lacks = append(lacks, fmt.Sprintf("policy tenant_isolation's USING (%s) does not compare tenant_id with current_setting('sgam.tenant', true)", iso.using))
		}
		if !comparesTenant(iso.check) {
			lacks = append(lacks, fmt.Sprintf("policy tenant_isolation's WITH CHECK (%s) does not compare tenant_id with current_setting('sgam.tenant', true)", iso.check))
		}
	}
	if len(lacks) == 0 {
		return ""
	}
	return fmt.Sprintf("table %s has a tenant_id column, and %s; every tenant table's migration has the block\n%s\n(or, if it is store-wide by nature, add it to withoutRLS in store/postgres/rls_test.go with the reason)",
		t.name, strings.Join(lacks, "; "), tenantBlock(t.name))
}

// comparesTenant reports whether a policy expression, as pg_policies shows
// it ("(tenant_id = current_setting('sgam.tenant'::text, true))"),
// compares tenant_id with the transaction's tenant.
func comparesTenant(expr string) bool {
	return strings.Contains(strings.ReplaceAll(expr, "::text", ""), "tenant_id = current_setting('sgam.tenant', true)")
}

// migrated opens a store on a schema of its own, and migrates River's
// tables into it too, as package queue does (queue.OpenPostgres): the
// schema as a deployment has it.
func migrated(t *testing.T) *postgres.Store {
	s, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	m, err := rivermigrate.New(riverpgxv5.New(s.Pool()), nil)
	require.NoError(t, err)
	_, err = m.Migrate(t.Context(), rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	return s
}

// TestRLSEveryTenantTable: after the migrations (the store's and River's,
// which share its schema), every table of the schema has row-level
// security enabled and forced with the policy tenant_isolation, or is on
// withoutRLS with its reason.
func TestRLSEveryTenantTable(t *testing.T) {
	ctx := t.Context()
	s := migrated(t)
	problems, err := rlsProblems(ctx, s.Pool())
	require.NoError(t, err)
	require.Empty(t, problems, "row-level security:\n%s", strings.Join(problems, "\n\n"))

	// The check looked at what it should: the ledger's tables are there.
	var tenantTables []string
	rows, err := s.Pool().Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relforcerowsecurity ORDER BY 1`)
	require.NoError(t, err)
	tenantTables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Subset(t, tenantTables, []string{"audit", "budgets", "embeddings", "episodes", "evidence", "extract_queue", "extractions", "facts", "pending", "schemas", "search_terms"})
}

// TestRLSCheckerCatches: the check of TestRLSEveryTenantTable finds each
// way a table can miss its block, naming the table and what to add; the
// block it advises passes. Each case runs in a transaction that is rolled
// back (DDL is transactional in PostgreSQL), on a migrated store.
func TestRLSCheckerCatches(t *testing.T) {
	ctx := t.Context()
	s := migrated(t)
	const cond = isolation
	for _, c := range []struct {
		name string
		ddl  string
		want []string // substrings of the one problem expected; none: no problem
	}{
		{"a tenant table without the block", `CREATE TABLE notes (tenant_id text NOT NULL, body text)`,
			[]string{"table notes has a tenant_id column", "not enabled", "not forced", "no policy tenant_isolation",
				"ALTER TABLE notes FORCE ROW LEVEL SECURITY;", "CREATE POLICY tenant_isolation ON notes"}},
		{"enabled but not forced", `CREATE TABLE notes (tenant_id text NOT NULL, body text);
			ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
			CREATE POLICY tenant_isolation ON notes USING (` + cond + `) WITH CHECK (` + cond + `)`,
			[]string{"table notes", "not forced (FORCE ROW LEVEL SECURITY"}},
		{"a policy that checks no writes", `CREATE TABLE notes (tenant_id text NOT NULL, body text);
			ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
			ALTER TABLE notes FORCE ROW LEVEL SECURITY;
			CREATE POLICY tenant_isolation ON notes USING (` + cond + `) WITH CHECK (true)`,
			[]string{"table notes", "WITH CHECK (true) does not compare tenant_id"}},
		{"a policy for reads only", `CREATE TABLE notes (tenant_id text NOT NULL, body text);
			ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
			ALTER TABLE notes FORCE ROW LEVEL SECURITY;
			CREATE POLICY tenant_isolation ON notes FOR SELECT USING (` + cond + `)`,
			[]string{"table notes", "FOR ALL commands, not SELECT"}},
		{"a second permissive policy on an existing table", `CREATE POLICY peek ON facts USING (true)`,
			[]string{"table facts", "policy peek is permissive"}},
		{"a store-wide table not on the allow-list", `CREATE TABLE settings (name text PRIMARY KEY, value text)`,
			[]string{"table settings has no tenant_id column and no row-level security", "add it to withoutRLS"}},
		{"an allow-listed table that gained RLS", `ALTER TABLE secrets ENABLE ROW LEVEL SECURITY`,
			[]string{"table secrets has row-level security", "remove it from withoutRLS"}},
		{"an allow-listed table that is gone", `DROP TABLE secrets`,
			[]string{"names table secrets, which the store does not have"}},
		{"the advised block passes", `CREATE TABLE notes (tenant_id text NOT NULL, body text);` + tenantBlock("notes"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := s.Pool().Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(context.Background())
			_, err = tx.Exec(ctx, c.ddl)
			require.NoError(t, err)
			problems, err := rlsProblems(ctx, tx)
			require.NoError(t, err)
			if c.want == nil {
				require.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1, "%s", strings.Join(problems, "\n\n"))
			t.Log(problems[0])
			for _, w := range c.want {
				require.Contains(t, problems[0], w)
			}
		})
	}
}
