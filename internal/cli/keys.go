package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) keysCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke the API keys of the HTTP API and MCP server",
		Long: `An API key is bound to one tenant (--tenant) and one role when it is created:

  read    every read
  write   reads, and writes of episodes and facts
  admin   everything within its tenant, forget and the tenant's own schema
          included (never the store default, which only the CLI sets)

The tenant of every request comes from its key. Only a hash of the key's
secret is stored: the key is printed once, by 'sgam keys create'.`,
	}
	var role, name string
	create := &cobra.Command{
		Use:     "create --role read|write|admin [--name NAME]",
		Short:   "Create a key for --tenant and print it, once",
		Example: `  sgam keys create --tenant acme --role write --name support-agent`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"role": "--role", "name": "--name"})
			r, err := sgam.ParseRole(role)
			if err != nil {
				return err
			}
			return a.withStore(func(s store.Store) error {
				token, k, err := s.CreateKey(a.ctx, a.tenant, r, name)
				if err != nil {
					return err
				}
				return a.show(map[string]any{"key": token, "key_id": k.ID, "tenant": k.Tenant, "role": k.Role, "name": k.Name}, func(w io.Writer) error {
					fmt.Fprintln(w, token)
					fmt.Fprintf(a.stderr, "key %s for tenant %s, role %s: store it now; sgam keeps only its hash and cannot show it again\n", k.ID, k.Tenant, k.Role)
					return nil
				})
			})
		},
	}
	create.Flags().StringVar(&role, "role", "", "read, write or admin (required)")
	create.Flags().StringVar(&name, "name", "", "a label for people (who uses the key)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List --tenant's keys (ids, roles, names; never secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				keys, err := s.ListKeys(a.ctx, a.tenant)
				if err != nil {
					return err
				}
				return printList(a, keys, "(no keys)", "KEY ID\tROLE\tNAME\tCREATED\tREVOKED", func(k sgam.APIKey) []any {
					return []any{k.ID, k.Role, k.Name, fmtTime(k.CreatedAt), fmtEnd(k.RevokedAt, "-")}
				})
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke one of --tenant's keys: requests with it fail from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"key_id": "KEY_ID"})
			return a.withExisting(func(s store.Store) error {
				if err := s.RevokeKey(a.ctx, a.tenant, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "revoked %s\n", args[0])
				return nil
			})
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}
