package bench

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the engine of the embedded store
)

// recipeSchema is the reference recipe's table
// (../shared/bench/reference_recipe.py), instants as integers.
const recipeSchema = `
CREATE TABLE memory_facts (
    fact_id INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL, subject TEXT NOT NULL, attribute TEXT NOT NULL,
    value TEXT NOT NULL, valid_from INTEGER NOT NULL, valid_to INTEGER,
    supersedes_fact_id INTEGER REFERENCES memory_facts (fact_id),
    source_episode_id TEXT NOT NULL,
    CHECK (valid_to IS NULL OR valid_from < valid_to));
CREATE UNIQUE INDEX one_open_fact ON memory_facts (tenant_id, subject, attribute) WHERE valid_to IS NULL;
CREATE INDEX fact_key ON memory_facts (tenant_id, subject, attribute, valid_from);`

// BenchmarkRecipeStatements runs the reference recipe's own replace_fact
// (three reads, an update, an insert: two rows a write, no closed copy, no
// provenance index, no foreign keys to episodes) from Go on the engine the
// embedded store uses, modernc.org/sqlite, on the recipe's workload: one
// transaction per fact, and 16 facts per transaction (what group commit
// makes of 16 writers at once). It measures what the engine itself allows,
// to set beside `sgam bench` (README, "What limits the figures"):
//
//	go test ./internal/bench -run X -bench RecipeStatements -benchtime 100000x
func BenchmarkRecipeStatements(b *testing.B) {
	for _, perTx := range []int{1, 16} {
		b.Run(fmt.Sprintf("factsPerTx=%d", perTx), func(b *testing.B) {
			ctx := b.Context()
			db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "recipe.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			exec := func(q string) {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			exec("PRAGMA journal_mode = WAL")
			exec("PRAGMA synchronous = NORMAL")
			exec("PRAGMA cache_size = -32768") // the store's writer's
			exec(recipeSchema)
			prep := func(q string) *sql.Stmt {
				st, err := conn.PrepareContext(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				return st
			}
			equal := prep(`SELECT fact_id FROM memory_facts WHERE tenant_id = ? AND subject = ? AND attribute = ? AND valid_from = ?`)
			covering := prep(`SELECT fact_id, valid_to FROM memory_facts WHERE tenant_id = ? AND subject = ? AND attribute = ?
				AND valid_from < ? AND (valid_to IS NULL OR valid_to > ?) LIMIT 1`)
			next := prep(`SELECT valid_from FROM memory_facts WHERE tenant_id = ? AND subject = ? AND attribute = ? AND valid_from > ?
				ORDER BY valid_from LIMIT 1`)
			closeRow := prep(`UPDATE memory_facts SET valid_to = ? WHERE fact_id = ?`)
			insert := prep(`INSERT INTO memory_facts (tenant_id, subject, attribute, value, valid_from, valid_to, supersedes_fact_id, source_episode_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
			replace := func(i int) error {
				s, vf := fmt.Sprintf("s%d", i%1000), int64(i)
				var id int64
				if err := equal.QueryRow("acme", s, "a", vf).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("equal valid_from: %v", err)
				}
				var boundary, supersedes any
				var validTo sql.NullInt64
				switch err := covering.QueryRow("acme", s, "a", vf, vf).Scan(&id, &validTo); {
				case err == nil:
					if _, err := closeRow.Exec(vf, id); err != nil {
						return err
					}
					supersedes = id
					if validTo.Valid {
						boundary = validTo.Int64
					}
				case errors.Is(err, sql.ErrNoRows):
					var from int64
					if err := next.QueryRow("acme", s, "a", vf).Scan(&from); err == nil {
						boundary = from
					} else if !errors.Is(err, sql.ErrNoRows) {
						return err
					}
				default:
					return err
				}
				_, err := insert.Exec("acme", s, "a", fmt.Sprintf("v%d", i), vf, boundary, supersedes, fmt.Sprintf("e%d", i))
				return err
			}
			// One fact an op; a transaction commits every perTx facts.
			i := 0
			for b.Loop() {
				if i%perTx == 0 {
					exec("BEGIN IMMEDIATE")
				}
				if err := replace(i); err != nil {
					b.Fatal(err)
				}
				i++
				if i%perTx == 0 {
					exec("COMMIT")
				}
			}
			if i%perTx != 0 {
				exec("COMMIT")
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "facts/s")
		})
	}
}
