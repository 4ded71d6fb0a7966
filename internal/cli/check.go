package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) checkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify every invariant over the whole database; exit 1 naming each violation",
		Long: `Verify every invariant over the whole database, every tenant:

  window           every closed row has valid_from < valid_to
  belief_window    no row is retracted before it was recorded
  overlap          the believed rows of a key never overlap in valid time
  open             at most one believed row of a key is open
  evidence         every fact has a source episode, or a system actor that keeps
                   it (retention, migration)
  member           a set member's row holds the member as its value
  evidence_tenant  every evidence link is of the fact's own tenant
  foreign_key      every source and evidence link names an existing episode
  value            every value is valid JSON
  integrity        the SQLite file itself is sound (SQLite only; on PostgreSQL the
                   exclusion constraint and foreign keys guard the rest)

Exit status 0 when clean, 1 with one line per violation otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				vs, err := s.Check(a.ctx)
				if err != nil {
					return err
				}
				err = a.show(vs, func(w io.Writer) error {
					for _, v := range vs {
						where := ""
						if v.Tenant != "" {
							where = fmt.Sprintf(" %s/%s.%s", v.Tenant, v.Subject, v.Attribute)
						}
						fmt.Fprintf(w, "%s%s: %s\n", v.Rule, where, v.Message)
					}
					if len(vs) == 0 {
						fmt.Fprintln(w, "ok: every invariant holds")
					}
					return nil
				})
				if err != nil {
					return err
				}
				if len(vs) > 0 {
					return &sgam.Error{Code: sgam.Internal, Message: fmt.Sprintf("check found %d violations", len(vs))}
				}
				return nil
			})
		},
	}
}
