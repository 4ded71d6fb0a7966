package locomo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
)

// End to end: recall's rendered context goes with the question to an
// answering model, and a judge model says whether its answer matches the
// gold one. This is how the memory layers sgam is compared with report
// LoCoMo (the "LLM-as-a-judge" score, J, of Mem0's paper, Chhikara et al.
// 2025, and of Zep's and others'). The prompts below are sgam's own
// wording of the same instructions: a short answer, dates worked out from
// the excerpts' times; a judge that is generous about wording and date
// formats and strict about the point.

// TextModel answers in plain text: an *llm.Client.
type TextModel interface {
	Text(ctx context.Context, r llm.TextRequest) (llm.TextResponse, error)
	Name() string
}

// AnswerSystem is the answering model's system prompt.
const AnswerSystem = `You answer a question about a long chat between two people. The memory context below holds what is known: excerpts of the chat, each with the date and time it was said, best match first (and sometimes facts). Use only the context.

Answer with a short phrase of a few words, not a sentence. When an excerpt places an event relative to when it was said ("yesterday", "last week", "next month"), work the date out from the excerpt's date and time and answer with that date. When the context does not hold the answer, give your best guess from it.`

// JudgeSystem is the judge model's system prompt.
const JudgeSystem = `You grade an answer to a question about a conversation, against the reference answer.

The answer is CORRECT when it says what the reference says about what the question asks. Other wording, more detail, or an answer that gives the reference's main point is CORRECT. A date, time or period is CORRECT when it names the same one as the reference, in any format, even if it is more or less precise ("May 2023" for "7 May 2023").

The answer is WRONG when it contradicts the reference, misses its main point, names another date or period, or says it does not know.

Reply with one word: CORRECT or WRONG.`

// answerUser is the answering model's user message.
func answerUser(context, question string) string {
	return "Memory context:\n" + context + "\n\nQuestion: " + question + "\nShort answer:"
}

// judgeUser is the judge model's user message.
func judgeUser(question, gold, answer string) string {
	if strings.TrimSpace(answer) == "" {
		answer = "(no answer)"
	}
	return "Question: " + question + "\nReference answer: " + gold + "\nAnswer to grade: " + answer + "\nGrade:"
}

// Verdict is what a judge's reply says.
type Verdict string

const (
	Correct Verdict = "correct"
	Wrong   Verdict = "wrong"
	// Unclear is a reply that says neither, or both: it counts as wrong.
	Unclear Verdict = "unclear"
)

// ParseVerdict reads a judge's reply: the verdict its first line that is
// not blank gives, CORRECT or WRONG (INCORRECT is WRONG), in any case and
// with any words around it ("Grade: correct."). A first line that gives
// neither, or both, is Unclear: a judge that echoes its instructions or
// the context ("The answer is CORRECT when ...") has given no verdict.
func ParseVerdict(reply string) Verdict {
	line := ""
	for l := range strings.Lines(reply) {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	found := Unclear
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) }) {
		v := Unclear
		switch strings.ToUpper(w) {
		case "CORRECT":
			v = Correct
		case "WRONG", "INCORRECT":
			v = Wrong
		}
		switch {
		case v == Unclear:
		case found == Unclear:
			found = v
		case found != v:
			return Unclear
		}
	}
	return found
}

// Max tokens of an answer and of a verdict, unless the caller sets its
// own (AnswerOptions): short answers are asked for, and a verdict is a
// word. A reasoning model that thinks first needs more.
const (
	DefaultAnswerTokens = 200
	DefaultJudgeTokens  = 50
)

// AnswerOptions configure an answer run.
type AnswerOptions struct {
	// Answerer answers the questions; Judge grades the answers (default
	// Answerer).
	Answerer, Judge TextModel
	// Budget bounds recall's rendered context, in recall's tokens
	// (default recall.DefaultBudget, 800). Recall cites up to
	// EvidenceLimit episodes (default 25), as many as the budget holds.
	Budget        int
	EvidenceLimit int
	// Categories are the question categories asked (default 1-4).
	Categories []int
	// Conversations are the numbers (1 to 10) of the conversations
	// asked (default all); Questions, when positive, asks at most the
	// first this many questions (of the categories) of each.
	Conversations []int
	Questions     int
	// AnswerTokens and JudgeTokens are the answers' max_tokens (default
	// DefaultAnswerTokens and DefaultJudgeTokens).
	AnswerTokens, JudgeTokens int
	// Progress, Clock, Embedder and Vectors are as RunOptions'.
	Progress func(done, total int)
	Clock    sgam.Clock
	Embedder llm.Embedder
	Vectors  sgam.VectorSearch
}

// Graded is one question's answer and verdict: what --json lists, so
// that every verdict can be read again.
type Graded struct {
	Conversation  string  `json:"conversation"`
	Category      int     `json:"category"`
	Question      string  `json:"question"`
	Gold          string  `json:"gold"`
	Answer        string  `json:"answer"`
	Verdict       Verdict `json:"verdict"`
	Judge         string  `json:"judge_reply"`
	ContextTokens int     `json:"context_tokens"`
	// Usage of the answering and the judging call, as the server counted.
	AnswerUsage llm.Usage `json:"answer_usage"`
	JudgeUsage  llm.Usage `json:"judge_usage"`
	RecallMS    float64   `json:"recall_ms"`
	AnswerMS    float64   `json:"answer_ms"`
	JudgeMS     float64   `json:"judge_ms"`
}

// AnswerResults are the figures of an answer run: every conversation
// asked together, and conversations 1-5 and 6-10 apart, as Results.
type AnswerResults struct {
	Model      string        `json:"model"`
	JudgeModel string        `json:"judge_model"`
	Budget     int           `json:"budget"`
	Categories []int         `json:"categories"`
	Search     string        `json:"search"`
	Episodes   int           `json:"episodes"`
	Embedding  *EmbedCost    `json:"embedding,omitempty"`
	All        *AnswerReport `json:"all"`
	Tuned      *AnswerReport `json:"tuned"`
	Unseen     *AnswerReport `json:"unseen"`
	Graded     []Graded      `json:"questions"`
	TimeMS     int64         `json:"time_ms"`
}

// Selected are the conversations of numbers nums (1 for the first), in
// the data set's order; all of them when nums is empty.
func Selected(convs []Conversation, nums []int) []Conversation {
	if len(nums) == 0 {
		return convs
	}
	var out []Conversation
	for i, c := range convs {
		if slices.Contains(nums, i+1) {
			out = append(out, c)
		}
	}
	return out
}

func pick(c Conversation, categories []int, limit int) []Question {
	var out []Question
	for _, q := range c.Questions {
		if limit > 0 && len(out) >= limit {
			break
		}
		for _, cat := range categories {
			if q.Category == cat {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// Answer asks the questions of the data set's conversations convs (all
// of them: the halves are by their place) that opts selects, end to end:
// recall's context within the budget, the answering model's answer, the
// judge's verdict. The selected conversations' episodes must be captured
// (and embedded, with an Embedder) already. A call that fails, after the
// client's retries, ends the run with an error naming the question.
func Answer(ctx context.Context, s Store, convs []Conversation, opts AnswerOptions) (*AnswerResults, error) {
	start := time.Now()
	if opts.Answerer == nil {
		return nil, fmt.Errorf("locomo: no answering model")
	}
	if opts.Judge == nil {
		opts.Judge = opts.Answerer
	}
	if opts.Budget == 0 {
		opts.Budget = recall.DefaultBudget
	}
	if opts.EvidenceLimit == 0 {
		opts.EvidenceLimit = TurnKs[len(TurnKs)-1]
	}
	if len(opts.Categories) == 0 {
		opts.Categories = []int{1, 2, 3, 4}
	}
	if opts.AnswerTokens == 0 {
		opts.AnswerTokens = DefaultAnswerTokens
	}
	if opts.JudgeTokens == 0 {
		opts.JudgeTokens = DefaultJudgeTokens
	}
	clock := opts.Clock
	if clock == nil {
		clock = sgam.SystemClock{}
	}
	r := recall.New(s).WithClock(clock)
	r.WithEmbedder(opts.Embedder, opts.Vectors)
	res := &AnswerResults{Model: opts.Answerer.Name(), JudgeModel: opts.Judge.Name(), Budget: opts.Budget, Categories: opts.Categories,
		All: &AnswerReport{}, Tuned: &AnswerReport{}, Unseen: &AnswerReport{}, Graded: []Graded{}}
	asked := func(i int) bool { return len(opts.Conversations) == 0 || slices.Contains(opts.Conversations, i+1) }
	total := 0
	for i, c := range convs {
		if asked(i) {
			total += len(pick(c, opts.Categories, opts.Questions))
		}
	}
	done := 0
	for ci, c := range convs {
		if !asked(ci) {
			continue
		}
		for _, q := range pick(c, opts.Categories, opts.Questions) {
			g, search, err := answerOne(ctx, r, c, q, opts)
			if err != nil {
				return nil, fmt.Errorf("locomo: %s: %q: %w", c.ID, q.Text, err)
			}
			res.Search = search
			res.Graded = append(res.Graded, g)
			res.All.Add(g)
			if ci < 5 {
				res.Tuned.Add(g)
			} else {
				res.Unseen.Add(g)
			}
			done++
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
		}
	}
	res.TimeMS = time.Since(start).Milliseconds()
	return res, nil
}

func answerOne(ctx context.Context, r *recall.Recaller, c Conversation, q Question, opts AnswerOptions) (Graded, string, error) {
	g := Graded{Conversation: c.ID, Category: q.Category, Question: q.Text, Gold: q.Answer}
	t0 := time.Now()
	ctxt, err := r.Recall(ctx, recall.Query{Tenant: TenantOf(c), Question: q.Text, EvidenceLimit: opts.EvidenceLimit,
		TokenBudget: opts.Budget, Hops: recall.None})
	if err != nil {
		return g, "", fmt.Errorf("recall: %w", err)
	}
	g.ContextTokens = ctxt.Tokens
	t1 := time.Now()
	ans, err := opts.Answerer.Text(ctx, llm.TextRequest{System: AnswerSystem, User: answerUser(ctxt.Rendered, q.Text), MaxTokens: opts.AnswerTokens})
	if err != nil {
		return g, "", fmt.Errorf("answering model %s: %w", opts.Answerer.Name(), err)
	}
	g.Answer, g.AnswerUsage = ans.Text, ans.Usage
	t2 := time.Now()
	verdict, err := opts.Judge.Text(ctx, llm.TextRequest{System: JudgeSystem, User: judgeUser(q.Text, q.Answer, ans.Text), MaxTokens: opts.JudgeTokens})
	if err != nil {
		return g, "", fmt.Errorf("judge model %s: %w", opts.Judge.Name(), err)
	}
	t3 := time.Now()
	g.Judge, g.JudgeUsage, g.Verdict = verdict.Text, verdict.Usage, ParseVerdict(verdict.Text)
	g.RecallMS, g.AnswerMS, g.JudgeMS = ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2))
	return g, ctxt.Search, nil
}
