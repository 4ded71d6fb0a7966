package locomo

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/words"
)

// What an answering model would see: besides ranking (Report), a run asks
// each question as an agent would, ContextLimit evidence episodes at most,
// under each evidence mode at each of ContextBudgets, and says of every
// rendered context its tokens, its turn recall@10 (of the evidence it
// shows), and, for categories 1, 2 and 4, whose answers are short strings,
// whether it holds the gold answer (words.Holds): a model-free proxy of
// what a model could answer from it.

// ContextLimit is the evidence limit the contexts are asked with.
const ContextLimit = 10

// ContextBudgets are the token budgets the contexts are rendered within;
// recall.MaxBudget is the row without a budget worth the name.
var ContextBudgets = []int{recall.MaxBudget, 800, 400}

// ContextModes are the evidence modes the contexts are asked with.
var ContextModes = []string{recall.EvidenceAuto, recall.EvidenceAlways}

// ContextFigures are the figures of the contexts of one mode and budget.
type ContextFigures struct {
	Evidence string `json:"evidence"`
	Budget   int    `json:"budget"`
	// N counts the questions (categories 1-4); TurnRecall10 is their mean
	// turn recall@10 of the evidence shown.
	N            int     `json:"n"`
	TurnRecall10 float64 `json:"turn_recall_10"`
	// Answerable counts the questions of categories 1, 2 and 4;
	// AnswerInContext the fraction of them whose context holds the answer.
	Answerable      int     `json:"answerable"`
	AnswerInContext float64 `json:"answer_in_context"`
	// The rendered context's tokens (recall.Tokens), over every question.
	TokensMean float64 `json:"tokens_mean"`
	TokensP50  int     `json:"tokens_p50"`
}

// contexts accumulates ContextFigures per mode and budget.
type contexts struct {
	rows []*contextRow
}

type contextRow struct {
	mode     string
	budget   int
	recall   float64
	n, asked int
	held     int
	tokens   []int
}

func (c *contexts) row(mode string, budget int) *contextRow {
	for _, r := range c.rows {
		if r.mode == mode && r.budget == budget {
			return r
		}
	}
	r := &contextRow{mode: mode, budget: budget}
	c.rows = append(c.rows, r)
	return r
}

// add records one question's context asked under mode within budget.
func (c *contexts) add(mode string, budget int, q Question, ctxt *recall.Context) {
	r := c.row(mode, budget)
	cited := make([]string, len(ctxt.Evidence))
	for i, e := range ctxt.Evidence {
		cited[i] = e.EpisodeID
	}
	r.n++
	r.recall += TurnRecall(q.Evidence, cited, 10)
	r.tokens = append(r.tokens, ctxt.Tokens)
	if q.Category != 3 {
		r.asked++
		if words.Holds(ctxt.Rendered, q.Answer) {
			r.held++
		}
	}
}

// figures returns the rows, in the order they were first added.
func (c *contexts) figures() []ContextFigures {
	out := make([]ContextFigures, 0, len(c.rows))
	for _, r := range c.rows {
		f := ContextFigures{Evidence: r.mode, Budget: r.budget, N: r.n, Answerable: r.asked}
		if r.n > 0 {
			f.TurnRecall10 = r.recall / float64(r.n)
			sum := 0
			for _, t := range r.tokens {
				sum += t
			}
			f.TokensMean = float64(sum) / float64(r.n)
			sorted := slices.Sorted(slices.Values(r.tokens))
			f.TokensP50 = sorted[(len(sorted)-1)/2]
		}
		if r.asked > 0 {
			f.AnswerInContext = float64(r.held) / float64(r.asked)
		}
		out = append(out, f)
	}
	return out
}

// WriteContexts prints the context figures of each part of a run, a row
// per evidence mode and budget.
func WriteContexts(w io.Writer, res *Results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversations\tevidence\tbudget\tturn R@10\tanswer in context\ttokens mean\tp50\t")
	for _, part := range []struct {
		name string
		rows []ContextFigures
	}{{"all", res.Contexts.All}, {"1-5 (tuned on)", res.Contexts.Tuned}, {"6-10 (unseen)", res.Contexts.Unseen}} {
		for _, f := range part.rows {
			budget := fmt.Sprint(f.Budget)
			if f.Budget == recall.MaxBudget {
				budget = "none"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.0f\t%d\t\n", part.name, f.Evidence, budget, f.TurnRecall10, f.AnswerInContext, f.TokensMean, f.TokensP50)
		}
	}
	return tw.Flush()
}
