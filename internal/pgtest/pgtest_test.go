package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sgam-dev/sgam/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestURLIsAFreshSchemaAsTheAppRole(t *testing.T) {
	u := pgtest.URL(t)
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var who string
	var super bool
	var tables int
	if err := conn.QueryRow(context.Background(), `SELECT current_user, usesuper, (SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema())
		FROM pg_user WHERE usename = current_user`).Scan(&who, &super, &tables); err != nil {
		t.Fatal(err)
	}
	if who != pgtest.AppRole || super || tables != 0 {
		t.Fatalf("connected as %s (superuser %v) to a schema with %d tables", who, super, tables)
	}
}
