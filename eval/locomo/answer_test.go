package locomo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store/sqlite"
)

const miniPath = "testdata/mini.json"

// miniAnswers are what the fake answering model says to each question of
// testdata/mini.json: right, wrong, and one the judge cannot make out.
var miniAnswers = map[string]string{
	"When did Ann go to the pottery class?":                              "7 May 2023",
	"What colour is Ann's bowl?":                                         "Blue",
	"What breed is Bob's puppy Rufus?":                                   "a poodle",
	"Where did Bob's sister Carla move, and what does Bob's puppy love?": "Lisbon; the beach",
	"Would Ann enjoy a ceramics museum?":                                 "Likely yes",
	"Which city did Dan visit?":                                          "Kyoto",
	"What was Dan's favourite part of the trip?":                         "the temples",
	"When did Cleo start learning the violin?":                           "mid February 2023",
}

// between is the text of s after before and up to after.
func between(s, before, after string) string {
	_, rest, _ := strings.Cut(s, before)
	out, _, _ := strings.Cut(rest, after)
	return out
}

// miniScript answers as miniAnswers says, and judges as a strict judge:
// CORRECT when the answer is the reference but for case, WRONG otherwise,
// and a reply of neither for the Lisbon question. It keeps every
// question's context, by question.
type miniScript struct {
	t        *testing.T
	mu       sync.Mutex
	contexts map[string]string
}

func (m *miniScript) reply(c llmtest.Call) llmtest.Reply {
	switch c.System {
	case locomo.AnswerSystem:
		q := between(c.User, "\n\nQuestion: ", "\nShort answer:")
		ctxt := between(c.User, "Memory context:\n", "\n\nQuestion: ")
		m.mu.Lock()
		m.contexts[q] = ctxt
		m.mu.Unlock()
		a, ok := miniAnswers[q]
		if !ok {
			m.t.Errorf("asked %q, which is no question of categories 1-4", q)
		}
		return llmtest.Reply{Content: a + "\n"}
	case locomo.JudgeSystem:
		gold := between(c.User, "Reference answer: ", "\n")
		got := between(c.User, "Answer to grade: ", "\nGrade:")
		switch {
		case strings.HasPrefix(gold, "Lisbon"):
			return llmtest.Reply{Content: "Partly."}
		case strings.EqualFold(gold, got):
			return llmtest.Reply{Content: "CORRECT"}
		}
		return llmtest.Reply{Content: "Wrong."}
	}
	m.t.Errorf("a call with system prompt %q", c.System)
	return llmtest.Reply{Status: 400}
}

func miniStore(t *testing.T, convs []locomo.Conversation) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "mini.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = locomo.Capture(t.Context(), s, convs)
	require.NoError(t, err)
	return s
}

func textModel(t *testing.T, url, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: url, Model: model, MaxAttempts: 1})
	require.NoError(t, err)
	return c
}

// TestAnswer runs the end-to-end evaluation on a small data set with a
// scripted model: each question of categories 1-4 goes with recall's
// context to the answering model, its answer and the gold one to the
// judge, and the verdicts are counted by category.
func TestAnswer(t *testing.T) {
	convs, err := locomo.Load(miniPath)
	require.NoError(t, err)
	s := miniStore(t, convs)
	script := &miniScript{t: t, contexts: map[string]string{}}
	fake := llmtest.NewText(t, script.reply, "answerer", "judge")
	res, err := locomo.Answer(t.Context(), s, convs, locomo.AnswerOptions{Answerer: textModel(t, fake.URL, "answerer"), Budget: 300})
	require.NoError(t, err)

	require.Equal(t, "answerer", res.Model)
	require.Equal(t, "answerer", res.JudgeModel, "the judge is the answering model by default")
	require.Equal(t, []int{1, 2, 3, 4}, res.Categories)
	require.Equal(t, 300, res.Budget)
	require.Equal(t, "lexical", res.Search)
	require.Len(t, res.Graded, 8, "the 8 questions of categories 1-4; category 5's is not asked")
	require.Equal(t, 16, fake.CallCount())
	for _, c := range fake.Calls() {
		require.Equal(t, "answerer", c.Model)
		require.Equal(t, "text", c.Mode)
	}

	// The context is recall's rendered block, within the budget, and
	// holds the turn that answers.
	ctxt := script.contexts["What colour is Ann's bowl?"]
	require.True(t, strings.HasPrefix(ctxt, "Question: What colour is Ann's bowl?\n"), ctxt)
	require.Contains(t, ctxt, "D1:3 | 2023-05-08T13:56:02Z | session session_1 | Ann: It is blue, with a little fish painted inside.")
	require.Contains(t, script.contexts["What breed is Bob's puppy Rufus?"], "[shares an image: a photo of a beagle on the sand]")
	for _, g := range res.Graded {
		require.Positive(t, g.ContextTokens)
		require.LessOrEqual(t, g.ContextTokens, 300)
		require.Equal(t, recall.Tokens(script.contexts[g.Question]), g.ContextTokens)
		require.Positive(t, g.AnswerUsage.PromptTokens)
		require.Positive(t, g.JudgeUsage.PromptTokens)
	}
	require.Equal(t, locomo.Graded{Conversation: "mini-1", Category: 4, Question: "What breed is Bob's puppy Rufus?", Gold: "beagle",
		Answer: "a poodle", Verdict: locomo.Wrong, Judge: "Wrong."}, strip(res.Graded[2]))
	require.Equal(t, locomo.Unclear, res.Graded[3].Verdict)

	all := res.All.Summary(locomo.All)
	require.Equal(t, 8, all.N)
	require.Equal(t, 5, all.Correct)
	require.Equal(t, 1, all.Unclear)
	require.InDelta(t, 5.0/8, all.J, 1e-12)
	single := res.All.Summary(4)
	require.Equal(t, 4, single.N)
	require.InDelta(t, 0.5, single.J, 1e-12) // blue, Kyoto; not poodle, temples
	require.InDelta(t, 1.0, res.All.Summary(2).J, 1e-12)
	require.InDelta(t, 0.0, res.All.Summary(1).J, 1e-12)
	require.Equal(t, all, res.Tuned.Summary(locomo.All), "both conversations are of the first five")
	require.Zero(t, res.Unseen.Summary(locomo.All).N)

	var buf bytes.Buffer
	require.NoError(t, res.All.Write(&buf))
	t.Log("\n" + buf.String())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 6)
	require.Regexp(t, `4 single-hop\s+4\s+0\.500\s+2\s+0\s`, lines[4])
	require.Regexp(t, `all\s+8\s+0\.625\s+5\s+1\s`, lines[5])

	js, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(js), `"verdict":"unclear"`)
	require.Contains(t, string(js), `"all":{"category":0,"name":"all","n":8,"correct":5,"unclear":1,"j":0.625`)
}

// strip is g without its measures (tokens and times).
func strip(g locomo.Graded) locomo.Graded {
	g.ContextTokens, g.AnswerUsage, g.JudgeUsage, g.RecallMS, g.AnswerMS, g.JudgeMS = 0, llm.Usage{}, llm.Usage{}, 0, 0, 0
	return g
}

func TestAnswerSelects(t *testing.T) {
	convs, err := locomo.Load(miniPath)
	require.NoError(t, err)
	s := miniStore(t, convs)
	script := &miniScript{t: t, contexts: map[string]string{}}
	fake := llmtest.NewText(t, script.reply, "answerer", "judge")
	opts := locomo.AnswerOptions{Answerer: textModel(t, fake.URL, "answerer"), Judge: textModel(t, fake.URL, "judge"),
		Categories: []int{4, 2}, Conversations: []int{2}, Questions: 2}
	var progress []int
	opts.Progress = func(done, total int) {
		require.Equal(t, 2, total)
		progress = append(progress, done)
	}
	res, err := locomo.Answer(t.Context(), s, convs, opts)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, progress)
	require.Equal(t, "judge", res.JudgeModel)
	var asked []string
	for _, g := range res.Graded {
		asked = append(asked, g.Question)
	}
	require.Equal(t, []string{"Which city did Dan visit?", "What was Dan's favourite part of the trip?"}, asked,
		"conversation 2's first two questions of categories 2 and 4")
	calls := fake.Calls()
	require.Len(t, calls, 4)
	require.Equal(t, []string{"answerer", "judge", "answerer", "judge"}, []string{calls[0].Model, calls[1].Model, calls[2].Model, calls[3].Model})
	require.Equal(t, []locomo.Conversation{convs[1]}, locomo.Selected(convs, []int{2}))
	require.Equal(t, convs, locomo.Selected(convs, nil))

	// A failed call ends the run, naming the question.
	fake.Fault(llmtest.Reply{Status: 400})
	_, err = locomo.Answer(context.Background(), s, convs, opts)
	require.ErrorContains(t, err, `mini-2: "Which city did Dan visit?": answering model answerer: model server answered 400`)
}

func TestParseVerdict(t *testing.T) {
	for reply, want := range map[string]locomo.Verdict{
		"CORRECT": locomo.Correct, "correct.": locomo.Correct, "Grade: CORRECT": locomo.Correct, "\n  Correct\nbecause": locomo.Correct,
		"WRONG": locomo.Wrong, "Incorrect": locomo.Wrong, "wrong, it says June": locomo.Wrong, "WRONG: it is not correct.": locomo.Unclear,
		"": locomo.Unclear, "Partly.": locomo.Unclear, "CORRECTLY": locomo.Unclear,
		"D17:10 | 2023-05-25 | session_17\nThe answer is CORRECT when it says": locomo.Unclear,
	} {
		require.Equal(t, want, locomo.ParseVerdict(reply), reply)
	}
}
