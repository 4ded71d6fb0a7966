package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam/store"
)

func (a *app) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the database at --db, or bring its schema up to date",
		Long: `Create the database at --db (a SQLite file, or the tables in a PostgreSQL
schema), or apply the migrations it has not seen yet. Commands that write do
this by themselves; init lets a separate owner role do it once, so that the
role the servers connect as needs no right to create tables (docs/scaling.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Opening creates the database or migrates it; nothing else to do.
			if err := a.withStore(func(store.Store) error { return nil }); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "ok: the database is ready")
			return nil
		},
	}
}
