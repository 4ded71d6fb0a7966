package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) evalCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate memory on fixed data: replayed scenarios, scored stage by stage, and retrieval on LoCoMo",
	}
	c.AddCommand(a.evalRunCommand(), a.evalCheckCommand(), a.evalInitCommand(), a.evalLocomoCommand())
	return c
}

func (a *app) evalLocomoCommand() *cobra.Command {
	var into string
	c := &cobra.Command{
		Use:   "locomo FILE",
		Short: "Score recall's evidence on the LoCoMo benchmark (turn and session recall@k by category), no model, no network",
		Long: `Score recall's evidence on LoCoMo (locomo10.json: 10 long conversations, 1,986
questions with their evidence turns).

Each conversation's turns become episodes of a tenant of its own
(locomo-<sample_id>): episode id = the turn's dia_id, session = session_N,
occurred_at = the session's date and time (plus a second per turn), content =
"Speaker: text" and the caption of a shared image. Every question of
categories 1-4 (multi-hop, temporal, open-domain, single-hop) goes through
recall with 25 evidence episodes, and the report gives, by category, the
fraction of the question's evidence turns among the first 5, 10 and 25 cited
episodes, the fraction of its evidence sessions among the first 1 and 3
sessions cited, and recall's time per question.

Figures are given for all conversations, for conversations 1-5 (the ones
sgam's ranking was tuned on) and for 6-10 (unseen), so that the second says
how it generalizes. The episodes go into a temporary SQLite file, deleted
after, or into --into (a new file path or an empty postgres:// database).

With SGAM_EMBED_BASE_URL and SGAM_EMBED_MODEL set (any OpenAI-compatible
/v1/embeddings; the key in SGAM_EMBED_API_KEY), every episode is embedded
first and the figures are those of lexical and vector search fused.`,
		Example: `  sgam eval locomo ../shared/data/locomo/locomo10.json
  sgam --json eval locomo locomo10.json > locomo.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			convs, err := locomo.Load(args[0])
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
			}
			dsn := into
			if dsn == "" {
				dir, err := os.MkdirTemp("", "sgam-eval-locomo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dsn = filepath.Join(dir, "locomo.db")
			} else if !store.IsPostgres(dsn) {
				if _, err := os.Stat(dsn); err == nil {
					return sgam.Errorf(sgam.Invalid, "--into", "%s exists; name a new file", dsn)
				}
			}
			s, err := store.Open(a.ctx, dsn, store.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			p := &phases{a: a, prefix: "eval locomo"}
			start := time.Now()
			n, err := locomo.Capture(a.ctx, s, convs)
			if err != nil {
				return err
			}
			captured := time.Since(start)
			opts := locomo.RunOptions{Progress: func(done, total int) { p.update("questions", done, total) }}
			search := "lexical"
			cfg, ok, err := llm.EmbedConfigFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			if ok {
				emb, err := llm.NewEmbedder(cfg)
				if err != nil {
					return err
				}
				if err := locomo.Embed(a.ctx, s, emb, n, func(done, total int) { p.update("embedding episodes", done, total) }); err != nil {
					return err
				}
				opts.Embedder, opts.Vectors, search = emb, s, "lexical+vector ("+emb.Model()+")"
			}
			res, err := locomo.Run(a.ctx, s, convs, opts)
			p.finish()
			if err != nil {
				return err
			}
			res.Episodes, res.Search = n, search
			return a.show(res, func(w io.Writer) error {
				fmt.Fprintf(w, "LoCoMo: %d conversations, %d episodes captured in %s, %d questions (categories 1-4); evidence %s\n\n",
					len(convs), n, captured.Round(time.Millisecond), res.Questions, search)
				for _, part := range []struct {
					title string
					r     *locomo.Report
				}{{"all conversations", res.All}, {"conversations 1-5 (tuned on)", res.Tuned}, {"conversations 6-10 (unseen)", res.Unseen}} {
					fmt.Fprintln(w, part.title+":")
					if err := part.r.Write(w); err != nil {
						return err
					}
					fmt.Fprintln(w)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&into, "into", "", "capture into this new SQLite file or empty postgres:// database (default a temporary file)")
	return c
}
