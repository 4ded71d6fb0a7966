package locomo

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// AnswerReport accumulates graded answers into per-category figures. The
// zero value is ready to use; it is not safe for concurrent use.
type AnswerReport struct {
	cats map[int]*answerBucket
}

type answerBucket struct {
	n, correct, unclear                    int
	contextTokens                          int
	answerIn, answerOut, judgeIn, judgeOut int
	estimated                              bool
	recallMS, answerMS, judgeMS            float64
}

// Add records one graded question.
func (r *AnswerReport) Add(g Graded) {
	if r.cats == nil {
		r.cats = map[int]*answerBucket{}
	}
	b := r.cats[g.Category]
	if b == nil {
		b = &answerBucket{}
		r.cats[g.Category] = b
	}
	b.n++
	switch g.Verdict {
	case Correct:
		b.correct++
	case Unclear:
		b.unclear++
	}
	b.contextTokens += g.ContextTokens
	b.answerIn += g.AnswerUsage.PromptTokens
	b.answerOut += g.AnswerUsage.CompletionTokens
	b.judgeIn += g.JudgeUsage.PromptTokens
	b.judgeOut += g.JudgeUsage.CompletionTokens
	b.estimated = b.estimated || g.AnswerUsage.Estimated || g.JudgeUsage.Estimated
	b.recallMS += g.RecallMS
	b.answerMS += g.AnswerMS
	b.judgeMS += g.JudgeMS
}

// AnswerSummary is the figures of one category, or of every category
// asked (Category 0, "all"). Means are per question.
type AnswerSummary struct {
	Category int    `json:"category"`
	Name     string `json:"name"`
	N        int    `json:"n"`
	Correct  int    `json:"correct"`
	// Unclear counts the judge's replies that were neither CORRECT nor
	// WRONG, counted wrong.
	Unclear int `json:"unclear"`
	// J is the fraction judged correct.
	J float64 `json:"j"`
	// ContextTokens is recall's rendered context (recall's o200k count);
	// the others are the servers' counts (Estimated: some were sgam's).
	ContextTokens          float64 `json:"context_tokens"`
	AnswerPromptTokens     float64 `json:"answer_prompt_tokens"`
	AnswerCompletionTokens float64 `json:"answer_completion_tokens"`
	JudgeTokens            float64 `json:"judge_tokens"`
	Estimated              bool    `json:"estimated,omitempty"`
	RecallMS               float64 `json:"recall_ms"`
	AnswerMS               float64 `json:"answer_ms"`
	JudgeMS                float64 `json:"judge_ms"`
}

// Categories are the categories with questions, in order.
func (r *AnswerReport) Categories() []int {
	var out []int
	for c := range r.cats {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Summary returns the figures of a category, or of all for All.
func (r *AnswerReport) Summary(category int) AnswerSummary {
	s := AnswerSummary{Category: category, Name: CategoryName(category)}
	cats := []int{category}
	if category == All {
		s.Name, cats = "all", r.Categories()
	}
	var t answerBucket
	for _, c := range cats {
		b := r.cats[c]
		if b == nil {
			continue
		}
		t.n += b.n
		t.correct += b.correct
		t.unclear += b.unclear
		t.contextTokens += b.contextTokens
		t.answerIn += b.answerIn
		t.answerOut += b.answerOut
		t.judgeIn += b.judgeIn
		t.judgeOut += b.judgeOut
		t.estimated = t.estimated || b.estimated
		t.recallMS += b.recallMS
		t.answerMS += b.answerMS
		t.judgeMS += b.judgeMS
	}
	s.N, s.Correct, s.Unclear, s.Estimated = t.n, t.correct, t.unclear, t.estimated
	if t.n == 0 {
		return s
	}
	n := float64(t.n)
	s.J = float64(t.correct) / n
	s.ContextTokens = float64(t.contextTokens) / n
	s.AnswerPromptTokens, s.AnswerCompletionTokens = float64(t.answerIn)/n, float64(t.answerOut)/n
	s.JudgeTokens = float64(t.judgeIn+t.judgeOut) / n
	s.RecallMS, s.AnswerMS, s.JudgeMS = t.recallMS/n, t.answerMS/n, t.judgeMS/n
	return s
}

// Summaries returns each category's figures, then all's.
func (r *AnswerReport) Summaries() []AnswerSummary {
	var out []AnswerSummary
	for _, c := range r.Categories() {
		out = append(out, r.Summary(c))
	}
	return append(out, r.Summary(All))
}

// MarshalJSON writes {"categories": [...], "all": {...}}.
func (r *AnswerReport) MarshalJSON() ([]byte, error) {
	rows := r.Summaries()
	return json.Marshal(struct {
		Categories []AnswerSummary `json:"categories"`
		All        AnswerSummary   `json:"all"`
	}{append([]AnswerSummary{}, rows[:len(rows)-1]...), rows[len(rows)-1]})
}

// Write prints the table: a row per category asked, and "all".
func (r *AnswerReport) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "category\tn\tJ\tcorrect\tunclear\tcontext tokens\tanswer tokens in/out\tjudge tokens\trecall ms\tanswer ms\tjudge ms\t")
	for _, s := range r.Summaries() {
		label := s.Name
		if s.Category != All {
			label = fmt.Sprintf("%d %s", s.Category, s.Name)
		}
		if s.N == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t\t\t\t\t\t\t\t\t\n", label)
			continue
		}
		est := ""
		if s.Estimated {
			est = "*"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%d\t%d\t%.0f\t%.0f / %.0f%s\t%.0f%s\t%.1f\t%.0f\t%.0f\t\n", label, s.N, s.J, s.Correct, s.Unclear,
			s.ContextTokens, s.AnswerPromptTokens, s.AnswerCompletionTokens, est, s.JudgeTokens, est, s.RecallMS, s.AnswerMS, s.JudgeMS)
	}
	return tw.Flush()
}
