package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) forgetCommand() *cobra.Command {
	var subject, episode, actor string
	var all, yes bool
	c := &cobra.Command{
		Use:   "forget (--subject S | --episode E | --all --yes)",
		Short: "Delete a subject, an episode or the whole --tenant for real, and print the audit receipt",
		Long: `Delete, for real, what one flag names within --tenant:

  --subject S   every fact row of S (every attribute, history and retractions
                too), its pending candidates, and the episodes that supported
                only S
  --episode E   the episode E: facts only E supports are deleted and the
                windows of their neighbours mended, as replaying the other
                writes would give them (except that a value E replaced at the
                same valid_from is not restored: docs/lifecycle.md); facts
                that other episodes corroborate lose E and keep the others
  --all --yes   every fact, candidate and episode of the tenant

Forgetting is not retracting: nothing stays in history. Each forget is
recorded in the audit with who (--actor), when, how many rows and their ids,
but none of the deleted content: a subject appears only as a digest keyed by
a secret of the store, which 'sgam receipts --subject S' computes to find
the receipts of S. List the audit with 'sgam receipts'. Run 'sgam compact' afterwards so that
the deleted bytes leave the database files too. See docs/lifecycle.md.`,
		Example: `  sgam forget --subject mira --actor dpo-ticket-4711
  sgam forget --episode e42
  sgam --tenant acme forget --all --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"subject": "--subject", "episode": "--episode", "all": "--all", "actor": "--actor"})
			req, _, err := sgam.ForgetRequest{Tenant: a.tenant, Subject: subject, Episode: episode, All: all, Actor: actor}.Check()
			if err != nil {
				return err
			}
			if all && !yes {
				return sgam.Errorf(sgam.Invalid, "--yes", "is required with --all: it deletes every fact and episode of tenant %s", a.tenant)
			}
			return a.withExisting(func(s store.Store) error {
				rc, err := s.Forget(a.ctx, req)
				if err != nil {
					return err
				}
				return a.show(rc, func(w io.Writer) error {
					printReceipt(w, rc)
					fmt.Fprintln(w, "run 'sgam compact' to remove the deleted bytes from the database files")
					return nil
				})
			})
		},
	}
	f := c.Flags()
	f.StringVar(&subject, "subject", "", "forget this subject")
	f.StringVar(&episode, "episode", "", "forget this episode")
	f.BoolVar(&all, "all", false, "forget the whole tenant (with --yes)")
	f.BoolVar(&yes, "yes", false, "confirm --all")
	f.StringVar(&actor, "actor", sgam.DefaultActor, "who asks, for the audit (an identifier: a person, a ticket)")
	return c
}

func (a *app) expireCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "expire",
		Short: "Delete the episodes and facts whose retention class has run out, printing a receipt per tenant",
		Long: `Delete, in every tenant, what the retention classes of the schema in force
say has expired now:

  - an episode whose class (its own, else the schema's episode_retention) has
    a time to live that has run out since it was recorded, with the facts
    only it supported: unless the fact's attribute has a retention class of
    its own that has not run out, which keeps the fact without a source
    (actor "retention");
  - a fact row whose attribute's retention class has run out since the row
    was recorded.

Without a schema nothing expires. Running it again deletes nothing more
until more has expired, so it can run from cron. Work is done in bounded
transactions; each records a receipt per tenant in the audit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				rcs, err := s.Expire(a.ctx)
				if err != nil {
					return err
				}
				return a.show(rcs, func(w io.Writer) error {
					if len(rcs) == 0 {
						fmt.Fprintln(w, "nothing has expired")
						return nil
					}
					for i, rc := range rcs {
						if i > 0 {
							fmt.Fprintln(w)
						}
						printReceipt(w, rc)
					}
					return nil
				})
			})
		},
	}
}

func (a *app) compactCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Reclaim the space of deleted rows, so that forgotten bytes leave the database files",
		Long: `Reclaim the space of deleted rows.

SQLite: checkpoint the write-ahead log, rebuild the file (VACUUM) and
truncate the log, so that no page of the files holds a forgotten row. It
takes the write lock and rewrites the whole file: run it after forgetting,
when the store is quiet.

PostgreSQL: VACUUM each sgam table, which makes the space of deleted rows
reusable; the old bytes stay in the table's pages until new rows overwrite
them, or until an administrator runs VACUUM FULL (docs/lifecycle.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				if err := s.Compact(a.ctx); err != nil {
					return err
				}
				return a.show(map[string]bool{"ok": true}, func(w io.Writer) error {
					fmt.Fprintln(w, "ok: compacted")
					return nil
				})
			})
		},
	}
}

func (a *app) receiptsCommand() *cobra.Command {
	var subject string
	c := &cobra.Command{
		Use:   "receipts [--subject S]",
		Short: "List the --tenant's forget and expiry receipts (the audit), oldest first",
		Long: `List the --tenant's forget and expiry receipts (the audit), oldest first.

A receipt of a forgotten subject keeps only its digest: an HMAC of the tenant
and the subject id keyed by a secret of this store, so a receipt alone does
not confirm a guessed id. --subject S computes the digest of S with the
store's secret and lists only S's receipts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"subject": "--subject"})
			return a.withExisting(func(s store.Store) error {
				rcs, err := s.Receipts(a.ctx, a.tenant)
				if err != nil {
					return err
				}
				if subject != "" {
					digest, err := s.SubjectDigest(a.ctx, a.tenant, subject)
					if err != nil {
						return err
					}
					mine := []sgam.Receipt{}
					for _, rc := range rcs {
						if rc.Kind == sgam.ReceiptSubject && rc.Target == digest {
							mine = append(mine, rc)
						}
					}
					rcs = mine
				}
				return printList(a, rcs, "(no receipts)", "AT\tRECEIPT\tKIND\tTARGET\tACTOR\tFACTS\tMENDED\tEPISODES\tPENDING",
					func(rc sgam.Receipt) []any {
						target := rc.Target
						if target == "" {
							target = "-"
						}
						return []any{fmtTime(rc.At), rc.ID, rc.Kind, truncate(target, 20), rc.Actor,
							rc.FactsDeleted, rc.FactsMended, rc.EpisodesDeleted, rc.PendingDeleted}
					})
			})
		},
	}
	c.Flags().StringVar(&subject, "subject", "", "only the receipts of forgetting this subject")
	return c
}

// printReceipt renders a receipt in full.
func printReceipt(w io.Writer, rc sgam.Receipt) {
	what := rc.Kind
	switch rc.Kind {
	case sgam.ReceiptSubject:
		what = "subject " + rc.Target
	case sgam.ReceiptEpisode:
		what = "episode " + rc.Target
	case sgam.ReceiptTenant:
		what = "tenant " + rc.Tenant
	}
	fmt.Fprintf(w, "receipt %s: %s in tenant %s, by %s at %s\n", rc.ID, what, rc.Tenant, rc.Actor, fmtTime(rc.At))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range []struct {
		name string
		n    int
	}{
		{"facts deleted", rc.FactsDeleted}, {"facts mended", rc.FactsMended}, {"links removed", rc.LinksRemoved},
		{"facts retained", rc.FactsRetained}, {"pending deleted", rc.PendingDeleted}, {"episodes deleted", rc.EpisodesDeleted},
	} {
		fmt.Fprintf(tw, "  %s\t%d\n", c.name, c.n)
	}
	ids := make([]string, len(rc.FactIDs))
	for i, id := range rc.FactIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	fmt.Fprintf(tw, "  fact ids\t%s\n", orDash(ids))
	fmt.Fprintf(tw, "  episode ids\t%s\n", orDash(rc.EpisodeIDs))
	tw.Flush()
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}
