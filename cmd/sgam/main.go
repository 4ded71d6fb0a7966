// Command sgam is the command line of sgam, schema-guided agent memory.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sgam-dev/sgam/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
