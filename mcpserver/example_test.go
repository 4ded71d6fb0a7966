package mcpserver_test

import (
	"context"
	"log"
	"os"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
	"github.com/sgam-dev/sgam/store"
)

// A program of its own serves the tools over its standard input and
// output, as 'sgam mcp' does, for the tenant its operator chose.
func ExampleServeStdio() {
	ctx := context.Background()
	s, err := store.Open(ctx, "/home/me/.local/share/sgam/memory.db", store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	cfg := mcpserver.Config{Store: s, Tenant: "me", Role: sgam.RoleWrite}
	if err := mcpserver.ServeStdio(ctx, cfg, os.Stdin, os.Stdout); err != nil {
		log.Fatal(err) // nil once standard input ends and every request is answered
	}
}
