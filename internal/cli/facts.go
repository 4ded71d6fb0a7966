package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) assertCommand() *cobra.Command {
	var validFrom, source string
	c := &cobra.Command{
		Use:   "assert SUBJECT ATTRIBUTE VALUE",
		Short: "Assert that SUBJECT's ATTRIBUTE is VALUE (JSON) from --valid-from on",
		Long: `Assert that SUBJECT's ATTRIBUTE is VALUE from --valid-from on (default now),
on the evidence of episode --source. VALUE is JSON: quote strings ('"Oslo"');
a negative number (-5) is a VALUE, not a flag.

A value already starting at the same instant is a repeat (no change, the
source is added as evidence) or, if different, a conflict. A value that
started earlier is closed at --valid-from, not deleted. An assertion
earlier than every stored value ends where the next one starts.`,
		Example: `  sgam assert mira passport_deadline '"2026-06-30"' --valid-from 2026-06-03T10:00:00Z --source e2`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := jsonValue(args[2])
			if err != nil {
				return err
			}
			return a.write("valid-from", validFrom, source, "this fact (a missing one is created as a placeholder; capture its text with 'sgam episode add')",
				func(s sgam.Store, vf time.Time) (sgam.WriteResult, error) {
					return s.Assert(a.ctx, sgam.Assertion{Key: a.key(args[0], args[1]), Value: value, ValidFrom: vf, Source: source})
				})
		},
	}
	c.Flags().StringVar(&validFrom, "valid-from", "", "when the value starts to hold (RFC 3339; default now)")
	c.Flags().StringVar(&source, "source", "", "id of the supporting episode (required)")
	return c
}

func (a *app) retractCommand() *cobra.Command {
	var at, source string
	c := &cobra.Command{
		Use:   "retract SUBJECT ATTRIBUTE",
		Short: "Record that SUBJECT's ATTRIBUTE has no value from --at on",
		Long: `Record that SUBJECT's ATTRIBUTE has no value from --at on (default now), on
the evidence of episode --source: "I no longer prefer X". The retraction is
kept as a tombstone with its source, so history shows it, and a delayed
assertion that arrives later stops where it starts.`,
		Example: `  sgam retract mira favourite_music --at 2026-07-01T00:00:00Z --source e7`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.write("at", at, source, "the retraction", func(s sgam.Store, t time.Time) (sgam.WriteResult, error) {
				return s.Retract(a.ctx, sgam.Retraction{Key: a.key(args[0], args[1]), At: t, Source: source})
			})
		},
	}
	c.Flags().StringVar(&at, "at", "", "when the attribute stops having a value (RFC 3339; default now)")
	c.Flags().StringVar(&source, "source", "", "id of the supporting episode (required)")
	return c
}

// write runs one write command: the instant flag (default now) and
// --source checked, the store opened, the result printed. supports says
// what the source episode supports, for the error when it is missing.
func (a *app) write(instantFlag, instant, source, supports string, do func(sgam.Store, time.Time) (sgam.WriteResult, error)) error {
	t, err := timeFlag(instantFlag, instant)
	if err != nil {
		return err
	}
	if source == "" {
		return sgam.Errorf(sgam.Invalid, "--source", "is required: the episode that supports %s", supports)
	}
	return a.withStore(func(s store.Store) error {
		if t.IsZero() {
			t = now()
		}
		r, err := do(s, t)
		if err != nil {
			return err
		}
		return a.printWrite(r)
	})
}

func (a *app) key(subject, attribute string) sgam.Key {
	return sgam.Key{Tenant: a.tenant, Subject: subject, Attribute: attribute}
}

func (a *app) printWrite(r sgam.WriteResult) error {
	return a.show(r, func(w io.Writer) error {
		switch {
		case r.Pending != nil:
			c := r.Pending
			fmt.Fprintf(w, "held pending as %s (%s): confirm with 'sgam pending confirm %s --episode E', or dismiss it\n", c.ID, c.Reason, c.ID)
			return nil
		case r.Kept:
			fmt.Fprintln(w, "kept: a higher-ranked source already gives another value at that instant (conflict policy prefer_source); nothing written")
		case r.NoChange:
			fmt.Fprintln(w, "no change: the same value already starts at that instant; the source was added as evidence")
		}
		if r.Fact != nil {
			printFact(w, *r.Fact)
		}
		return nil
	})
}

func (a *app) getCommand() *cobra.Command {
	var asOf, knownAt string
	c := &cobra.Command{
		Use:   "get SUBJECT ATTRIBUTE",
		Short: "Print the value of SUBJECT's ATTRIBUTE now, --as-of a valid instant, --known-at a belief instant",
		Long: `Print the value of SUBJECT's ATTRIBUTE, with its windows and sources.

  --as-of V     what was true in the world at V (default now)
  --known-at K  as the store believed it at K (default now)

Prints "(no value)" when there was none: never asserted, or retracted. On a
set (cardinality many) it prints the members at those instants.`,
		Example: `  sgam get mira passport_deadline
  sgam get mira passport_deadline --as-of 2026-06-02T00:00:00Z
  sgam get mira passport_deadline --as-of 2026-06-04T00:00:00Z --known-at 2026-06-03T09:59:00Z`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := atFlags(asOf, knownAt)
			if err != nil {
				return err
			}
			return a.withExisting(func(s store.Store) error {
				f, err := s.Get(a.ctx, a.key(args[0], args[1]), at)
				if errors.Is(err, sgam.ErrSet) {
					members, err := s.Members(a.ctx, a.key(args[0], args[1]), at)
					if err != nil {
						return err
					}
					return a.show(members, func(w io.Writer) error {
						if len(members) == 0 {
							fmt.Fprintln(w, "(no members)")
							return nil
						}
						printFacts(w, members, true)
						return nil
					})
				}
				if err != nil {
					return err
				}
				return a.show(f, func(w io.Writer) error {
					if f == nil {
						fmt.Fprintln(w, "(no value)")
						return nil
					}
					printFact(w, *f)
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&asOf, "as-of", "", "valid instant (RFC 3339; default now)")
	c.Flags().StringVar(&knownAt, "known-at", "", "belief instant (RFC 3339; default now)")
	return c
}

func (a *app) stateCommand() *cobra.Command {
	var asOf, knownAt string
	c := &cobra.Command{
		Use:   "state SUBJECT",
		Short: "Print every attribute of SUBJECT that has a value (now, or --as-of / --known-at)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := atFlags(asOf, knownAt)
			if err != nil {
				return err
			}
			return a.withExisting(func(s store.Store) error {
				facts, err := s.State(a.ctx, a.tenant, args[0], at)
				if err != nil {
					return err
				}
				return a.show(facts, func(w io.Writer) error {
					if len(facts) == 0 {
						fmt.Fprintln(w, "(no values)")
						return nil
					}
					printFacts(w, facts, true)
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&asOf, "as-of", "", "valid instant (RFC 3339; default now)")
	c.Flags().StringVar(&knownAt, "known-at", "", "belief instant (RFC 3339; default now)")
	return c
}

func (a *app) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history SUBJECT ATTRIBUTE",
		Short: "Print every row of SUBJECT's ATTRIBUTE, retracted rows and tombstones too, in write order",
		Long: `Print every row of SUBJECT's ATTRIBUTE in the order they were written, with
both windows: VALID FROM/TO (valid time) and RECORDED/RETRACTED (transaction
time). A row that a later write shortened is retracted, not edited; its
closed copy follows it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				facts, err := s.History(a.ctx, a.key(args[0], args[1]))
				if err != nil {
					return err
				}
				return a.show(facts, func(w io.Writer) error {
					if len(facts) == 0 {
						fmt.Fprintln(w, "(no rows)")
						return nil
					}
					printFacts(w, facts, false)
					return nil
				})
			})
		},
	}
}

func (a *app) traceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "trace FACT_ID",
		Short: "Print a fact's supersedes chain and its source episodes with their content",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"fact_id": "FACT_ID"})
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return sgam.Errorf(sgam.Invalid, "FACT_ID", "%q is not a fact id (a positive integer)", args[0])
			}
			return a.withExisting(func(s store.Store) error {
				tr, err := s.Trace(a.ctx, a.tenant, id)
				if err != nil {
					return err
				}
				return a.show(tr, func(w io.Writer) error {
					fmt.Fprintln(w, "chain (newest first):")
					printFacts(w, tr.Chain, false)
					fmt.Fprintln(w, "\nsource episodes:")
					for _, e := range tr.Episodes {
						printEpisode(w, e, false)
					}
					return nil
				})
			})
		},
	}
}
