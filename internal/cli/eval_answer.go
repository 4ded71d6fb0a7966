package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// answerFlags are sgam eval locomo's flags of the end-to-end evaluation.
type answerFlags struct {
	model, judge              string
	budget, questions         int
	categories, conversations string
}

func (f *answerFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.model, "answer-model", "", "answer the questions with this model of the endpoint $"+llm.EnvBaseURL+", and judge the answers")
	fs.StringVar(&f.judge, "judge-model", "", "the model that judges the answers (default --answer-model's)")
	fs.IntVar(&f.budget, "budget", recall.DefaultBudget, "tokens of recall's context given with each question")
	fs.StringVar(&f.categories, "categories", "1,2,3,4", "the question categories asked: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop (5, adversarial, has no gold answer)")
	fs.StringVar(&f.conversations, "conversations", "", "the conversations asked, by number: 1-10 (the default), 6-10, 1,3")
	fs.IntVar(&f.questions, "questions", 0, "ask at most the first N questions of each conversation (0: all)")
}

// answerRun is a checked end-to-end evaluation.
type answerRun struct {
	opts locomo.AnswerOptions
}

// check returns the end-to-end evaluation the flags ask for, nil for
// none (then none of its flags may be given).
func (f *answerFlags) check(cmd *cobra.Command, compare bool) (*answerRun, error) {
	if f.model == "" {
		for _, name := range []string{"judge-model", "budget", "categories", "conversations", "questions"} {
			if cmd.Flags().Changed(name) {
				return nil, sgam.Errorf(sgam.Invalid, "--"+name, "is a flag of the answers' evaluation: give --answer-model too")
			}
		}
		return nil, nil
	}
	if compare {
		return nil, sgam.Errorf(sgam.Invalid, "--compare", "compares retrieval; it does not go with --answer-model")
	}
	r := &answerRun{opts: locomo.AnswerOptions{Budget: f.budget, Questions: f.questions}}
	if f.budget < recall.MinBudget || f.budget > recall.MaxBudget {
		return nil, sgam.Errorf(sgam.Invalid, "--budget", "must be between %d and %d tokens, not %d", recall.MinBudget, recall.MaxBudget, f.budget)
	}
	if f.questions < 0 {
		return nil, sgam.Errorf(sgam.Invalid, "--questions", "must be 0 (all) or more, not %d", f.questions)
	}
	var err error
	if r.opts.Categories, err = numbers(f.categories, 1, 4); err != nil || len(r.opts.Categories) == 0 {
		return nil, sgam.Errorf(sgam.Invalid, "--categories", "%q: give categories 1 to 4, as 1,2,4 or 1-4 (5, adversarial, has no gold answer to judge by)", f.categories)
	}
	if f.conversations != "" {
		if r.opts.Conversations, err = numbers(f.conversations, 1, 10); err != nil || len(r.opts.Conversations) == 0 {
			return nil, sgam.Errorf(sgam.Invalid, "--conversations", "%q: give conversations 1 to 10, as 1,3 or 6-10", f.conversations)
		}
	}
	cfg, _, err := llm.FromEnv(os.Getenv)
	if err != nil {
		return nil, sgam.Errorf(sgam.Invalid, "SGAM_LLM", "%v", err)
	}
	if cfg.BaseURL == "" {
		return nil, sgam.Errorf(sgam.Invalid, llm.EnvBaseURL, "--answer-model asks the endpoint at %s (and %s if it needs a key): set it", llm.EnvBaseURL, llm.EnvAPIKey)
	}
	// SGAM_LLM_MAX_TOKENS, when set, bounds answers and verdicts alike
	// (a reasoning model thinks first); else they are kept short.
	if cfg.MaxTokens > 0 {
		r.opts.AnswerTokens, r.opts.JudgeTokens = cfg.MaxTokens, cfg.MaxTokens
	}
	cfg.Model = f.model
	answerer, err := llm.New(cfg)
	if err != nil {
		return nil, llmError(err)
	}
	r.opts.Answerer, r.opts.Judge = answerer, answerer
	if f.judge != "" && f.judge != f.model {
		cfg.Model = f.judge
		judge, err := llm.New(cfg)
		if err != nil {
			return nil, llmError(err)
		}
		r.opts.Judge = judge
	}
	return r, nil
}

// numbers parses "1,2,4", "1-4" or "6-10,1" into distinct numbers of
// [lo, hi], in order.
func numbers(s string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(part), "-")
		from, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return nil, err
		}
		to := from
		if isRange {
			if to, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
				return nil, err
			}
		}
		if from < lo || to > hi || from > to {
			return nil, fmt.Errorf("%s: out of %d-%d", part, lo, hi)
		}
		for n := from; n <= to; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// evalLocomoAnswer runs the end-to-end evaluation on s: capture the
// conversations asked, embed them when an endpoint is configured, ask.
func (a *app) evalLocomoAnswer(s store.Store, convs []locomo.Conversation, r *answerRun, embedCfg llm.EmbedConfig, embed bool, p *phases) error {
	asked := locomo.Selected(convs, r.opts.Conversations)
	n, err := locomo.Capture(a.ctx, s, asked)
	if err != nil {
		return err
	}
	var cost *locomo.EmbedCost
	if embed {
		var emb llm.Embedder
		if emb, cost, err = a.embedLoCoMo(s, embedCfg, n, p); err != nil {
			return err
		}
		r.opts.Embedder, r.opts.Vectors = emb, s
	}
	r.opts.Progress = func(done, total int) { p.update("questions", done, total) }
	res, err := locomo.Answer(a.ctx, s, convs, r.opts)
	p.finish()
	if err != nil {
		return err
	}
	res.Episodes, res.Embedding = n, cost
	return a.show(res, func(w io.Writer) error {
		cats := make([]string, len(res.Categories))
		for i, c := range res.Categories {
			cats[i] = strconv.Itoa(c)
		}
		fmt.Fprintf(w, "LoCoMo end to end: %d questions (categories %s) of %d conversations, answered by %s, judged by %s, with recall's context within %d tokens (evidence %s), in %s\n",
			len(res.Graded), strings.Join(cats, ","), len(asked), res.Model, res.JudgeModel, res.Budget, res.Search,
			(time.Duration(res.TimeMS) * time.Millisecond).String())
		if cost != nil {
			fmt.Fprintf(w, "embedding: %d episodes, %d tokens (the server's count), in %s\n", cost.Episodes, cost.Tokens, (time.Duration(cost.TimeMS) * time.Millisecond).String())
		}
		fmt.Fprintln(w, "J is the fraction the judge called CORRECT; tokens and times are means per question (* some token counts are sgam's estimates)")
		fmt.Fprintln(w)
		for _, part := range []struct {
			title string
			r     *locomo.AnswerReport
		}{{"all conversations asked", res.All}, {"of conversations 1-5 (recall tuned on)", res.Tuned}, {"of conversations 6-10 (unseen)", res.Unseen}} {
			if part.r.Summary(locomo.All).N == 0 || part.r != res.All && part.r.Summary(locomo.All).N == res.All.Summary(locomo.All).N {
				continue // a half that is all or nothing of the run says nothing more
			}
			fmt.Fprintln(w, part.title+":")
			if err := part.r.Write(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
		return nil
	})
}
