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
	var compare bool
	var af answerFlags
	c := &cobra.Command{
		Use:   "locomo FILE",
		Short: "Score recall on the LoCoMo benchmark: its evidence's turn and session recall@k by category, or, with --answer-model, answers a judge grades",
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
sessions cited, and recall's time per question. A second report gives the
contexts an agent is given (at most 10 evidence episodes, evidence auto and
always, no budget, 800 and 400 tokens): turn recall@10, the fraction of
questions of categories 1, 2 and 4 whose gold answer the rendered context
holds (answer in context), and its tokens per question.

Figures are given for all conversations, for conversations 1-5 (the ones
sgam's ranking was tuned on) and for 6-10 (unseen), so that the second says
how it generalizes. The episodes go into a temporary SQLite file, deleted
after, or into --into (a new file path or an empty postgres:// database).

With SGAM_EMBED_BASE_URL and SGAM_EMBED_MODEL set (any OpenAI-compatible
/v1/embeddings; the key in SGAM_EMBED_API_KEY), every episode is embedded
first (the report says how long that took and the tokens the server
counted) and the figures are those of lexical and vector search fused;
--compare asks every question by words alone too, and prints both side
by side.

--answer-model M asks the questions end to end instead, as the memory
layers sgam is compared with report LoCoMo: recall's rendered context
(within --budget tokens) and the question go to the model M on the
configured endpoint (SGAM_LLM_BASE_URL, and SGAM_LLM_API_KEY if it needs a
key), which answers in a few words; the judge model (--judge-model,
default M) says whether the answer matches the gold one (CORRECT or
WRONG; docs/eval.md has the prompts); the report gives the fraction
judged correct (J) by category, the context's tokens and the models'
per question, and the time. Categories 1-4 by default (--categories);
--conversations and --questions keep a run short.`,
		Example: `  sgam eval locomo ../shared/data/locomo/locomo10.json
  sgam --json eval locomo locomo10.json > locomo.json
  SGAM_EMBED_BASE_URL=http://127.0.0.1:8080/v1 SGAM_EMBED_MODEL=all-minilm-l6-v2 sgam eval locomo locomo10.json --compare
  SGAM_LLM_BASE_URL=https://api.openai.com/v1 SGAM_LLM_API_KEY_FILE=~/.openai sgam eval locomo locomo10.json --answer-model gpt-4o-mini
  SGAM_LLM_BASE_URL=http://127.0.0.1:8080/v1 sgam eval locomo locomo10.json --answer-model smollm2 --conversations 1 --questions 5`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			convs, err := locomo.Load(args[0])
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
			}
			cfg, embed, err := llm.EmbedConfigFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			if compare && !embed {
				return sgam.Errorf(sgam.Invalid, "--compare", "compares lexical with fused search: set %s and %s", llm.EnvEmbedBaseURL, llm.EnvEmbedModel)
			}
			var answer *answerRun
			if answer, err = af.check(cmd, compare); err != nil {
				return err
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
			if answer != nil {
				return a.evalLocomoAnswer(s, convs, answer, cfg, embed, p)
			}
			start := time.Now()
			n, err := locomo.Capture(a.ctx, s, convs)
			if err != nil {
				return err
			}
			captured := time.Since(start)
			opts := locomo.RunOptions{Progress: func(done, total int) { p.update("questions", done, total) }}
			var lexical *locomo.Results
			if compare {
				if lexical, err = locomo.Run(a.ctx, s, convs, opts); err != nil {
					return err
				}
				lexical.Episodes, lexical.Search = n, "lexical"
			}
			search := "lexical"
			var cost *locomo.EmbedCost
			if embed {
				var emb llm.Embedder
				if emb, cost, err = a.embedLoCoMo(s, cfg, n, p); err != nil {
					return err
				}
				opts.Embedder, opts.Vectors, search = emb, s, "lexical+vector ("+emb.Model()+")"
			}
			res, err := locomo.Run(a.ctx, s, convs, opts)
			p.finish()
			if err != nil {
				return err
			}
			res.Episodes, res.Search, res.Embedding, res.Lexical = n, search, cost, lexical
			return a.show(res, func(w io.Writer) error {
				fmt.Fprintf(w, "LoCoMo: %d conversations, %d episodes captured in %s, %d questions (categories 1-4); evidence %s\n",
					len(convs), n, captured.Round(time.Millisecond), res.Questions, search)
				if cost != nil {
					fmt.Fprintf(w, "embedding: %d episodes, %d tokens (the server's count), in %s (%.1f ms an episode)\n",
						cost.Episodes, cost.Tokens, (time.Duration(cost.TimeMS) * time.Millisecond).String(), float64(cost.TimeMS)/float64(max(1, cost.Episodes)))
				}
				fmt.Fprintln(w)
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
				fmt.Fprintf(w, "the contexts an agent is given (at most %d evidence episodes; answer in context: categories 1, 2 and 4):\n", locomo.ContextLimit)
				if err := locomo.WriteContexts(w, res); err != nil {
					return err
				}
				if lexical != nil {
					fmt.Fprintln(w, "\nlexical against "+search+", categories 1-4:")
					return locomo.WriteComparison(w, lexical, res)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&into, "into", "", "capture into this new SQLite file or empty postgres:// database (default a temporary file)")
	c.Flags().BoolVar(&compare, "compare", false, "with an embedding endpoint: ask every question by words alone too, and print both side by side")
	af.add(c)
	return c
}

// embedLoCoMo embeds the n captured LoCoMo episodes with the configured
// embedding endpoint, as the queue's embedding job would, with progress,
// and returns the embedder and what embedding cost.
func (a *app) embedLoCoMo(s store.Store, cfg llm.EmbedConfig, n int, p *phases) (llm.Embedder, *locomo.EmbedCost, error) {
	emb, err := llm.NewEmbedder(cfg)
	if err != nil {
		return nil, nil, err
	}
	c, err := locomo.Embed(a.ctx, s, emb, n, func(done, total int) { p.update("embedding episodes", done, total) })
	if err != nil {
		return nil, nil, err
	}
	return emb, &c, nil
}
