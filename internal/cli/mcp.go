package cli

import (
	"log/slog"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
)

func (a *app) mcpCommand() *cobra.Command {
	var role, kind string
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools over stdio for one tenant (for an MCP client's config)",
		Long: `Serve sgam as a Model Context Protocol server over stdin and stdout, for
the tenant given by --tenant (or $SGAM_TENANT). The tenant is the
operator's choice: no tool takes one, so a model cannot reach another
tenant's memory. See docs/mcp.md for the snippet to paste into an MCP
client's configuration.

Tools: observe (what was said, in its words, captured as an episode and
queued for extraction into facts under the tenant's schema), remember (a
fact, with the quote it comes from stored as its source episode),
forget_value (a retraction), recall (a question, or a subject or one
attribute, now or at as_of / known_at), history and trace. Resource:
sgam://subjects/{subject}, a subject's current state.

--role read offers only recall, history and trace; write adds observe,
remember and forget_value. --episode-kind is the kind of the episodes
observe, remember and forget_value capture (default message): it ranks the
source under prefer_source, and user_confirmed makes sensitive attributes
facts directly, which is why the operator sets it and the model cannot.

Messages are JSON-RPC, one per line. A line that is not JSON is answered
with a JSON-RPC error -32700, one that is not a JSON-RPC message (or a
batch, a key given twice, or longer than 4 MiB) with -32600, and the
session goes on. When standard input ends, every request already read is
run and answered before sgam exits. (A Go program gets the same from
mcpserver.ServeStdio.)

Over HTTP, 'sgam serve' offers the same tools at /mcp, bound to the tenant
and role of the caller's API key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := sgam.Role(role)
			if r != sgam.RoleRead && r != sgam.RoleWrite {
				return sgam.Errorf(sgam.Invalid, "--role", "must be read or write, not %q", role)
			}
			if err := sgam.CheckEpisodeKind("--episode-kind", kind); err != nil {
				return err
			}
			s, err := a.open(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			log := slog.New(slog.NewJSONHandler(a.stderr, nil))
			rc, err := a.recaller(s)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg := mcpserver.Config{Store: s, Tenant: a.tenant, Role: r, EpisodeKind: kind, Version: version(), Logger: log, Recaller: rc}
			// The protocol's bytes go out as they are, not escaped as text
			// for a terminal.
			if err := mcpserver.ServeStdio(ctx, cfg, a.stdin, raw(a.stdout)); err != nil && ctx.Err() == nil {
				return err
			}
			return nil // standard input ended, or we were told to stop
		},
	}
	c.Flags().StringVar(&role, "role", string(sgam.RoleWrite), "read (recall, history, trace) or write (also observe, remember, forget_value)")
	c.Flags().StringVar(&kind, "episode-kind", sgam.KindMessage, "kind of the episodes observe, remember and forget_value capture")
	return c
}

// version is the module version sgam was built as ("(devel)" from a
// checkout).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "(devel)"
}
