package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/internal/cli"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

const miniLocomo = "../../eval/locomo/testdata/mini.json"

// noModels clears the model and embedding configuration a developer's
// environment may hold.
func noModels(t *testing.T) {
	for _, v := range []string{"SGAM_LLM_BASE_URL", "SGAM_LLM_MODEL", "SGAM_LLM_API_KEY", "SGAM_LLM_API_KEY_FILE", "SGAM_LLM_MAX_TOKENS",
		"SGAM_EMBED_BASE_URL", "SGAM_EMBED_MODEL", "SGAM_EMBED_API_KEY", "SGAM_EMBED_API_KEY_FILE", "SGAM_EMBED_DIMENSIONS"} {
		t.Setenv(v, "")
	}
}

// TestEvalLocomoEmbedCompare: with an embedding endpoint, the command
// says what embedding the episodes cost, and --compare prints lexical and
// fused figures side by side; --compare without an endpoint is refused.
func TestEvalLocomoEmbedCompare(t *testing.T) {
	noModels(t)
	r := sgamRun(t, "", "eval", "locomo", miniLocomo)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "LoCoMo: 2 conversations, 12 episodes captured in")
	require.Contains(t, r.stdout, "8 questions (categories 1-4); evidence lexical\n")
	require.NotContains(t, r.stdout, "embedding:")

	r = sgamRun(t, "", "eval", "locomo", miniLocomo, "--compare")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--compare")
	require.Contains(t, r.stderr, "SGAM_EMBED_BASE_URL")

	fake := llmtest.New(t, "chat", nil)
	t.Setenv("SGAM_EMBED_BASE_URL", fake.URL)
	t.Setenv("SGAM_EMBED_MODEL", "fake-embed")
	r = sgamRun(t, "", "eval", "locomo", miniLocomo, "--compare")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	t.Log("\n" + r.stdout)
	require.Contains(t, r.stdout, "evidence lexical+vector (fake-embed)\n")
	require.Regexp(t, `embedding: 12 episodes, \d+ tokens \(the server's count\), in \S+ \([\d.]+ ms an episode\)`, r.stdout)
	require.Contains(t, r.stdout, "lexical against lexical+vector (fake-embed), categories 1-4:")
	require.Regexp(t, `all\s+lexical\s+8\s`, r.stdout)

	r = sgamRun(t, "", "--json", "eval", "locomo", miniLocomo, "--compare")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var res struct {
		Search    string
		Embedding *locomo.EmbedCost
		Lexical   *struct{ Search string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "lexical+vector (fake-embed)", res.Search)
	require.Equal(t, 12, res.Embedding.Episodes)
	require.Equal(t, "lexical", res.Lexical.Search)
}

// TestEvalLocomoAnswer: --answer-model asks the configured endpoint's
// model each question with recall's context, and the judge model whether
// the answer is right; flags of the answers' evaluation need it.
func TestEvalLocomoAnswer(t *testing.T) {
	noModels(t)
	fake := llmtest.NewText(t, func(c llmtest.Call) llmtest.Reply {
		switch {
		case c.System == locomo.AnswerSystem && c.Model == "answerer":
			if strings.Contains(c.User, "Question: Which city did Dan visit?\nShort answer:") {
				return llmtest.Reply{Content: "Kyoto"}
			}
			return llmtest.Reply{Content: "I do not know"}
		case c.System == locomo.JudgeSystem && c.Model == "judge":
			if strings.Contains(c.User, "Reference answer: Kyoto\nAnswer to grade: Kyoto\n") {
				return llmtest.Reply{Content: "CORRECT"}
			}
			return llmtest.Reply{Content: "WRONG"}
		}
		t.Errorf("unexpected call: %s %q", c.Model, c.System)
		return llmtest.Reply{Status: 400}
	}, "answerer", "judge")

	r := sgamRun(t, "", "eval", "locomo", miniLocomo, "--answer-model", "answerer")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "SGAM_LLM_BASE_URL")

	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	r = sgamRun(t, "", "eval", "locomo", miniLocomo, "--answer-model", "answerer", "--judge-model", "judge", "--budget", "200")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	t.Log("\n" + r.stdout)
	require.Contains(t, r.stdout, "LoCoMo end to end: 8 questions (categories 1,2,3,4) of 2 conversations, answered by answerer, judged by judge, "+
		"with recall's context within 200 tokens (evidence lexical), in ")
	require.Regexp(t, `4 single-hop\s+4\s+0\.250\s+1\s+0\s`, r.stdout)
	require.Regexp(t, `all\s+8\s+0\.125\s+1\s+0\s`, r.stdout)
	require.NotContains(t, r.stdout, "unseen", "no question of conversations 6-10 was asked")
	require.Equal(t, 16, fake.CallCount())

	r = sgamRun(t, "", "--json", "eval", "locomo", miniLocomo, "--answer-model", "answerer", "--judge-model", "judge",
		"--conversations", "2", "--questions", "1", "--categories", "4")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var res struct {
		Model      string
		JudgeModel string `json:"judge_model"`
		Budget     int
		Questions  []locomo.Graded
		All        struct{ All locomo.AnswerSummary }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "judge", res.JudgeModel)
	require.Equal(t, 800, res.Budget, "the default budget")
	require.Len(t, res.Questions, 1)
	require.Equal(t, "Which city did Dan visit?", res.Questions[0].Question)
	require.Equal(t, locomo.Correct, res.Questions[0].Verdict)
	require.Equal(t, 1.0, res.All.All.J)

	for _, tc := range []struct{ args []string }{
		{[]string{"--budget", "300"}},
		{[]string{"--judge-model", "judge"}},
		{[]string{"--questions", "2"}},
		{[]string{"--answer-model", "answerer", "--categories", "1,5"}},
		{[]string{"--answer-model", "answerer", "--conversations", "11"}},
		{[]string{"--answer-model", "answerer", "--budget", "10"}},
	} {
		r := sgamRun(t, "", append([]string{"eval", "locomo", miniLocomo}, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", tc.args, r.stdout)
		name := tc.args[len(tc.args)-2]
		require.Contains(t, r.stderr, name, tc.args)
	}
}
