package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) schemaCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "schema",
		Short: "Write, check, apply and show the schema that governs what may be remembered",
		Long: `The schema declares every attribute sgam may remember: its value type,
cardinality (one value or a set), conflict policy, sensitivity and retention.
Once a schema is applied, writes of undeclared attributes and of values that
break their type are refused. See docs/schema.md.`,
	}
	c.AddCommand(a.schemaInitCommand(), a.schemaCheckCommand(), a.schemaApplyCommand(), a.schemaShowCommand())
	return c
}

func (a *app) schemaInitCommand() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented example schema for a customer-support agent (default schema.yaml)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "schema.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, os.ErrExist) {
				return sgam.Errorf(sgam.Invalid, "FILE", "%s exists; pass --force to overwrite it", path)
			}
			if err != nil {
				return err
			}
			if _, err := f.Write(schema.Example()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s; check it with 'sgam schema check %s', then apply it to a tenant with 'sgam schema apply %s --tenant T' or as the store default with 'sgam schema apply %s --default'\n", path, path, path, path)
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return c
}

// readSchemaFile reads a schema file, bounded like the parser.
func readSchemaFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
	}
	if st.Size() > 1<<20 {
		return nil, sgam.Errorf(sgam.Invalid, "FILE", "%s is %d bytes; a schema file may have at most 1 MiB", path, st.Size())
	}
	return os.ReadFile(path)
}

// schemaProblems prints every problem of a parse error as FILE:LINE lines
// and returns an error for the exit status; other errors pass through.
func (a *app) schemaProblems(path string, err error) error {
	var pe *schema.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	for _, p := range pe.Problems {
		if p.Path == "" {
			fmt.Fprintf(a.stderr, "%s:%d: %s\n", path, p.Line, p.Message)
		} else {
			fmt.Fprintf(a.stderr, "%s:%d: %s: %s\n", path, p.Line, p.Path, p.Message)
		}
	}
	return sgam.Errorf(sgam.Invalid, "FILE", "%s has %d problem(s)", path, len(pe.Problems))
}

func (a *app) schemaCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Check a schema file and explain every problem with its line number",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := readSchemaFile(args[0])
			if err != nil {
				return err
			}
			s, err := schema.Parse(body)
			if err != nil {
				return a.schemaProblems(args[0], err)
			}
			return a.show(map[string]any{"ok": true, "attributes": len(s.Attributes), "migrations": len(s.Migrations), "hash": s.Hash()}, func(w io.Writer) error {
				fmt.Fprintf(w, "%s: ok: %d attributes, %d retention classes, %d migrations\n", args[0], len(s.Attributes), len(s.Retention), len(s.Migrations))
				return nil
			})
		},
	}
}

// schemaOwner says whose schema a command acts on: the --tenant's, or the
// store default's.
func (a *app) schemaOwner(storeDefault bool) string {
	if storeDefault {
		return "the store default schema"
	}
	return "tenant " + a.tenant + "'s schema"
}

// whose names the owner of a stored schema version.
func whose(v sgam.SchemaVersion) string {
	if v.StoreDefault {
		return "the store default schema"
	}
	return "tenant " + v.Tenant + "'s schema"
}

func (a *app) schemaApplyCommand() *cobra.Command {
	var dryRun, storeDefault bool
	c := &cobra.Command{
		Use:   "apply FILE [--tenant T | --default]",
		Short: "Store FILE as the next version of --tenant's schema (or --default's) and print the changes",
		Long: `Store FILE as the next version of the --tenant's schema and print what
changed from the schema that served it before. Each tenant has its own
schema history. With --default, store it as the next version of the
store-wide default, which serves every tenant that applied no schema of
its own: only the operator sets it, here; the HTTP API applies a key's own
tenant's schema only.

Fact rows written from then on carry the new version. Applying the schema
in force again stores nothing. Declared migrations are run by
'sgam migrate'. See docs/schema.md.`,
		Example: `  sgam schema apply schema.yaml --tenant acme --dry-run
  sgam schema apply schema.yaml --tenant acme
  sgam schema apply schema.yaml --default`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if storeDefault && cmd.Flags().Changed("tenant") {
				return sgam.Errorf(sgam.Invalid, "--default", "applies the store-wide default, which is no tenant's: give --tenant or --default, not both")
			}
			body, err := readSchemaFile(args[0])
			if err != nil {
				return err
			}
			return a.withStore(func(s store.Store) error {
				var v sgam.SchemaVersion
				var err error
				if storeDefault {
					v, err = s.ApplyDefaultSchema(a.ctx, body, dryRun)
				} else {
					v, err = s.ApplySchema(a.ctx, a.tenant, body, dryRun)
				}
				if err != nil {
					return a.schemaProblems(args[0], err)
				}
				v.Body = nil // FILE's text, not echoed back
				return a.show(v, func(w io.Writer) error {
					switch {
					case len(v.Diff) == 0:
						fmt.Fprintf(w, "unchanged: version %d of %s already says this\n", v.Version, whose(v))
						return nil
					case dryRun:
						fmt.Fprintf(w, "dry run: would store schema version %d of %s:\n", v.Version, a.schemaOwner(storeDefault))
					default:
						fmt.Fprintf(w, "stored schema version %d of %s:\n", v.Version, a.schemaOwner(storeDefault))
					}
					for _, d := range v.Diff {
						fmt.Fprintf(w, "  %s\n", d)
					}
					return nil
				})
			})
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the changes without storing them")
	c.Flags().BoolVar(&storeDefault, "default", false, "apply the store-wide default schema, for tenants without their own")
	return c
}

func (a *app) schemaShowCommand() *cobra.Command {
	var storeDefault bool
	c := &cobra.Command{
		Use:   "show [--tenant T | --default]",
		Short: "Print the schema in force for --tenant (its own, or the store default) or --default's, with its version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				var v sgam.SchemaVersion
				var err error
				if storeDefault {
					v, err = s.DefaultSchema(a.ctx)
				} else {
					v, err = s.Schema(a.ctx, a.tenant)
				}
				if err != nil {
					return err
				}
				return a.show(v, func(w io.Writer) error {
					if v.Version == 0 {
						owner := "no schema for tenant " + a.tenant
						if storeDefault {
							owner = "no store default schema"
						}
						fmt.Fprintf(w, "%s: any attribute, any JSON value, every attribute single-valued\n", owner)
						return nil
					}
					fmt.Fprintf(w, "schema version %d of %s, applied %s, sha256 %s\n%s\n", v.Version, whose(v), fmtTime(v.AppliedAt), v.Hash, v.Body)
					return nil
				})
			})
		},
	}
	c.Flags().BoolVar(&storeDefault, "default", false, "show the store-wide default schema")
	return c
}

func (a *app) memberCommands() []*cobra.Command {
	var validFrom, at, source string
	add := &cobra.Command{
		Use:   "add SUBJECT ATTRIBUTE VALUE",
		Short: "Add VALUE (JSON) to the set SUBJECT's ATTRIBUTE from --valid-from on",
		Long: `Add VALUE to a set: an attribute the schema declares with cardinality many,
or the built-in alias, every subject's other names (stored lowercase, one
space between words), by which extraction and recall find the subject in
text. Each member has its own windows and sources; adding a member already
there from the same instant is a repeat.`,
		Example: `  sgam add mira allergies '"peanuts"' --valid-from 2026-06-01T00:00:00Z --source e4
  sgam add cust-17 alias '"Mira Chen"' --valid-from 2026-01-01T00:00:00Z --source crm-1`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := jsonValue(args[2])
			if err != nil {
				return err
			}
			return a.write("valid-from", validFrom, source, "this member", func(s sgam.Store, vf time.Time) (sgam.WriteResult, error) {
				return s.Add(a.ctx, sgam.Assertion{Key: a.key(args[0], args[1]), Value: value, ValidFrom: vf, Source: source})
			})
		},
	}
	add.Flags().StringVar(&validFrom, "valid-from", "", "when the member joins the set (RFC 3339; default now)")
	add.Flags().StringVar(&source, "source", "", "id of the supporting episode (required)")

	remove := &cobra.Command{
		Use:     "remove SUBJECT ATTRIBUTE VALUE",
		Short:   "Remove VALUE (JSON) from the set SUBJECT's ATTRIBUTE from --at on",
		Example: `  sgam remove mira allergies '"peanuts"' --at 2026-07-01T00:00:00Z --source e9`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := jsonValue(args[2])
			if err != nil {
				return err
			}
			return a.write("at", at, source, "the removal", func(s sgam.Store, t time.Time) (sgam.WriteResult, error) {
				return s.Remove(a.ctx, sgam.Retraction{Key: a.key(args[0], args[1]), Value: value, At: t, Source: source})
			})
		},
	}
	remove.Flags().StringVar(&at, "at", "", "when the member leaves the set (RFC 3339; default now)")
	remove.Flags().StringVar(&source, "source", "", "id of the supporting episode (required)")
	return []*cobra.Command{add, remove}
}

func (a *app) traverseCommand() *cobra.Command {
	var asOf, knownAt string
	c := &cobra.Command{
		Use:   "traverse SUBJECT ATTRIBUTE [ATTRIBUTE...]",
		Short: "Follow relations from SUBJECT, one ref attribute per hop (now, or --as-of / --known-at)",
		Long: fmt.Sprintf(`Follow relations (attributes of type ref, whose values are subject ids) from
SUBJECT, one attribute per hop, every hop at the same instants. A set fans out
to each member. A subject reached twice is reported as a cycle and not
followed again. At most %d hops.`, sgam.MaxHops),
		Example: `  sgam traverse mira account policy --as-of 2026-06-02T00:00:00Z`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"path": "ATTRIBUTE"})
			at, err := atFlags(asOf, knownAt)
			if err != nil {
				return err
			}
			return a.withExisting(func(s store.Store) error {
				hops, err := sgam.Traverse(a.ctx, s, sgam.SystemClock{}, a.tenant, args[0], args[1:], at)
				if err != nil {
					return err
				}
				return a.show(hops, func(w io.Writer) error {
					if len(hops) == 0 {
						fmt.Fprintln(w, "(no relations)")
						return nil
					}
					for _, h := range hops {
						cycle := ""
						if h.Cycle {
							cycle = "  (cycle: not followed)"
						}
						fmt.Fprintf(w, "%s%s -%s-> %s  [fact %d, sources %s]%s\n", strings.Repeat("  ", h.Depth-1), h.From, h.Attribute, h.To, h.Fact.ID, fmtSources(h.Fact), cycle)
					}
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&asOf, "as-of", "", "valid instant (RFC 3339; default now)")
	c.Flags().StringVar(&knownAt, "known-at", "", "belief instant (RFC 3339; default now)")
	return c
}

func (a *app) pendingCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "pending",
		Short: "List, confirm and dismiss candidates held back from becoming facts",
		Long: `A write is held back as a pending candidate when its attribute's conflict
policy is review and a different value already starts at the same instant,
or when the attribute is sensitive and the source is not a user_confirmed
episode. Confirming makes it a fact, with the confirming episode as further
evidence; dismissing deletes it.`,
	}
	var subject string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's pending candidates, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"subject": "--subject"})
			return a.withExisting(func(s store.Store) error {
				cs, err := s.Pending(a.ctx, sgam.PendingQuery{Tenant: a.tenant, Subject: subject})
				if err != nil {
					return err
				}
				return printList(a, cs, "(no pending candidates)", "PENDING ID\tSUBJECT\tATTRIBUTE\tVALUE\tVALID FROM\tSOURCE\tREASON\tCONFLICTS WITH",
					func(c sgam.Candidate) []any {
						conflicts := "-"
						if c.ConflictsWith != nil {
							conflicts = fmt.Sprint(*c.ConflictsWith)
						}
						reason := c.Reason
						if c.Reason == sgam.ReasonRecurrence {
							reason = fmt.Sprintf("%s (%d signals)", c.Reason, c.Signals)
						}
						return []any{c.ID, c.Subject, c.Attribute, truncate(string(c.Value), 40), fmtTime(c.ValidFrom), c.Source, reason, conflicts}
					})
			})
		},
	}
	list.Flags().StringVar(&subject, "subject", "", "only this subject's candidates")

	var episode string
	confirm := &cobra.Command{
		Use:   "confirm PENDING_ID --episode E",
		Short: "Make a pending candidate a fact, with episode E (the confirmation) as further evidence",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"pending_id": "PENDING_ID", "episode_id": "--episode"})
			if episode == "" {
				return sgam.Errorf(sgam.Invalid, "--episode", "is required: the episode that confirms the candidate (a user_confirmed one, typically)")
			}
			return a.withStore(func(s store.Store) error {
				r, err := s.Confirm(a.ctx, a.tenant, args[0], episode)
				if err != nil {
					return err
				}
				return a.printWrite(r)
			})
		},
	}
	confirm.Flags().StringVar(&episode, "episode", "", "id of the confirming episode (required)")
	dismiss := &cobra.Command{
		Use:   "dismiss PENDING_ID",
		Short: "Delete a pending candidate",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"pending_id": "PENDING_ID"})
			return a.withStore(func(s store.Store) error {
				if err := s.Dismiss(a.ctx, a.tenant, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "dismissed %s\n", args[0])
				return nil
			})
		},
	}
	c.AddCommand(list, confirm, dismiss)
	return c
}

// schemaLabel names a schema by its tenant, or "(default)" for the store
// default's.
func schemaLabel(tenant string) string {
	if tenant == "" {
		return "(default)"
	}
	return tenant
}

func (a *app) migrateCommand() *cobra.Command {
	var batch int
	c := &cobra.Command{
		Use:   "migrate",
		Short: "Run the schemas' migrations: backfill renamed, retyped and split attributes as new fact versions",
		Long: `Run, for every tenant, the migrations its schema in force declares, in order:
a tenant's own schema's over its rows, the store default's over the rows of
the tenants without one (the SCHEMA column says which). Values are written again in their new representation as new fact versions,
through the normal write path; the old rows are retracted in transaction
time, so reads with --known-at before the migration still see the old
representation. Work is done in transactions of --batch subjects. Running
it again finishes an interrupted run and otherwise changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch <= 0 || batch > 100000 {
				return sgam.Errorf(sgam.Invalid, "--batch", "must be between 1 and 100000, not %d", batch)
			}
			return a.withExisting(func(s store.Store) error {
				progress := &phases{a: a, prefix: "migrate"}
				reports, err := s.Migrate(a.ctx, sgam.MigrateOptions{BatchKeys: batch, Progress: func(p sgam.MigrationProgress) {
					progress.update(schemaLabel(p.Tenant)+" "+p.Migration, p.Done, p.Total)
				}})
				progress.finish()
				if err != nil {
					return err
				}
				return a.show(reports, func(w io.Writer) error {
					if len(reports) == 0 {
						fmt.Fprintln(w, "no migrations: no schema in force declares any")
						return nil
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "SCHEMA\tMIGRATION\tKIND\tSINCE\tSUBJECTS\tROWS\tTIME\tROWS/S")
					for _, r := range reports {
						rate := "-"
						if r.Rows > 0 && r.Elapsed > 0 {
							rate = fmt.Sprintf("%.0f", float64(r.Rows)/r.Elapsed.Seconds())
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\tv%d\t%d\t%d\t%s\t%s\n", schemaLabel(r.Tenant), r.Name, r.Kind, r.Since, r.Subjects, r.Rows, r.Elapsed.Round(time.Millisecond), rate)
					}
					return tw.Flush()
				})
			})
		},
	}
	c.Flags().IntVar(&batch, "batch", 500, "subjects per transaction")
	return c
}
