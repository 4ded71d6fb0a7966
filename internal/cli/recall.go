package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) recallCommand() *cobra.Command {
	var q recall.Query
	var asOf, knownAt string
	c := &cobra.Command{
		Use:   "recall QUESTION",
		Short: "Answer a question from memory: exact state at the instants it asks about, then cited evidence, within a token budget",
		Long: `Answer QUESTION from the tenant's memory with the smallest cited context:

  1. the instants: --as-of and --known-at win; else what the question says
     ("on June 2, 2026", "in May", "last week", "yesterday", "before
     2026-06-03"; "as we believed on ..." and "before the migration" for
     known_at); else now. The answer says which it used and why.
  2. the subjects: --subject names them; else the known subject ids and
     names (aliases) the question holds, and those of the latest facts of
     --session; else those of the best evidence's facts. The attributes
     the question names: under a schema, its attributes' names, aliases
     and descriptions; without one, the subjects' own attributes.
  3. their values at those instants, each with its validity, fact id,
     sources and the quote that supports it; superseded values only when
     the question is about the past ("was", "before", "history", ...),
     marked past, never current.
  4. facts of the subjects those facts refer to (ref attributes, --hops).
  5. episodes found by full-text search, as evidence. With --evidence auto
     (the default) --evidence-limit is a maximum: an episode that scores
     under half the best one's is left out, and when the facts answer
     every subject and attribute the question names, only the sources
     their quotes leave out are cited. --evidence always cites the best
     --evidence-limit episodes; --evidence none, none.

It stops before --budget tokens (o200k_base, the tokenizer of OpenAI's
recent models, counted by sgam itself) and says what it left out; a budget
too small for the question, its instants and that line is refused. With SGAM_EMBED_BASE_URL and SGAM_EMBED_MODEL set,
episodes embedded by the workers are searched by vector too, fused with the
lexical ranking. The default output is the prompt-ready block; --json
prints the whole context (docs/recall.md).`,
		Example: `  sgam recall "When is Mira's passport deadline?"
  sgam recall "What was Mira's passport deadline on June 2, 2026?"
  sgam recall "When is Mira's passport deadline?" --known-at 2026-06-03T09:59:00Z
  sgam recall "deadline" --subject mira --budget 200 --json
  sgam recall "Does Mira still prefer concise answers?" --evidence always --evidence-limit 2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.withFields(map[string]string{"question": "QUESTION", "budget": "--budget", "evidence": "--evidence", "evidence_limit": "--evidence-limit",
				"hops": "--hops", "session": "--session", "subjects": "--subject", "attributes": "--attribute"})
			at, err := atFlags(asOf, knownAt)
			if err != nil {
				return err
			}
			q.Tenant, q.Question, q.AsOf, q.KnownAt = a.tenant, args[0], at.AsOf, at.KnownAt
			// The library reads 0 as "the default"; a flag given as 0 asks
			// for something else (no hops, most likely), so it is refused.
			for _, f := range []struct {
				flag, field, give string
				v                 int
			}{
				{"budget", "budget", fmt.Sprintf("%d to %d", recall.MinBudget, recall.MaxBudget), q.TokenBudget},
				{"evidence-limit", "evidence_limit", fmt.Sprintf("1 to %d, or -1 for none", recall.MaxEvidence), q.EvidenceLimit},
				{"hops", "hops", fmt.Sprintf("1 to %d, or -1 for none", recall.MaxHops), q.Hops},
			} {
				if f.v == 0 && cmd.Flags().Changed(f.flag) {
					return sgam.Errorf(sgam.Invalid, f.field, "is 0: give %s, or leave the flag out for its default", f.give)
				}
			}
			if q.Evidence == recall.EvidenceNone && !cmd.Flags().Changed("evidence-limit") {
				q.EvidenceLimit = 0 // the flag's default is no limit asked for
			}
			return a.withExisting(func(s store.Store) error {
				r, err := a.recaller(s)
				if err != nil {
					return err
				}
				ctx, err := r.Recall(a.ctx, q)
				if err != nil {
					return err
				}
				return a.show(ctx, func(w io.Writer) error {
					fmt.Fprint(w, ctx.Rendered)
					// The block is for a model; what the reader should know about
					// how it was found goes beside it.
					for _, warning := range ctx.Warnings {
						fmt.Fprintf(a.stderr, "sgam: warning: %s\n", warning)
					}
					return nil
				})
			})
		},
	}
	f := c.Flags()
	f.StringArrayVar(&q.Subjects, "subject", nil, "a subject the question is about (repeatable); default those it names")
	f.StringArrayVar(&q.Attributes, "attribute", nil, "only this attribute (repeatable)")
	f.StringVar(&asOf, "as-of", "", "valid instant (RFC 3339); default what the question says, else now")
	f.StringVar(&knownAt, "known-at", "", "belief instant (RFC 3339); default what the question says, else now")
	f.IntVar(&q.TokenBudget, "budget", recall.DefaultBudget, fmt.Sprintf("most tokens of the answer (%d to %d)", recall.MinBudget, recall.MaxBudget))
	f.StringVar(&q.Evidence, "evidence", recall.EvidenceAuto, "which evidence is cited: auto, always or none")
	f.IntVar(&q.EvidenceLimit, "evidence-limit", recall.DefaultEvidence, fmt.Sprintf("most episodes cited as evidence (1 to %d; -1: none)", recall.MaxEvidence))
	f.IntVar(&q.Hops, "hops", recall.DefaultHops, fmt.Sprintf("how deep ref attributes are followed (1 to %d; -1: none)", recall.MaxHops))
	f.StringVar(&q.Session, "session", "", "the conversation asking: the subjects of its latest episodes' facts are in play too")
	return c
}

func (a *app) reindexCommand() *cobra.Command {
	var only string
	c := &cobra.Command{
		Use:   "reindex",
		Short: "Rebuild the full-text index of episodes (every tenant's, or --only one's), with progress",
		Long: `Rebuild the full-text index that recall searches for evidence, from the
stored episodes, in transactions of a few thousand episodes: every episode
stays searchable while it runs. The index is kept in the transaction of
every write, and an upgrade backfills it, so this is for repair (a file
restored from elsewhere, a changed tokenizer). Nothing is extracted again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExisting(func(s store.Store) error {
				p := &phases{a: a, prefix: "reindex"}
				n, err := s.Reindex(a.ctx, only, func(done, total int) { p.update("episodes", done, total) })
				p.finish()
				if err != nil {
					return err
				}
				return a.show(map[string]int{"episodes": n}, func(w io.Writer) error {
					fmt.Fprintf(w, "reindexed %d episodes\n", n)
					return nil
				})
			})
		},
	}
	c.Flags().StringVar(&only, "only", "", "only this tenant's episodes (default every tenant's)")
	return c
}
