package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/llamatest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

func textClient(t *testing.T, fake *llmtest.TextServer, model string, tweak ...func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{BaseURL: fake.URL, Model: model, APIKey: fake.APIKey, MaxBackoff: 2 * time.Second}
	for _, f := range tweak {
		f(&cfg)
	}
	c, err := llm.New(cfg)
	require.NoError(t, err)
	return c
}

// TestTextAnswer: a text request carries the system and user messages
// and max_tokens and no response format, in every mode the client is
// configured for; the answer comes back trimmed, its <think> block
// removed, with the server's token counts.
func TestTextAnswer(t *testing.T) {
	for _, mode := range llm.Modes {
		t.Run(string(mode), func(t *testing.T) {
			fake := llmtest.NewText(t, func(c llmtest.Call) llmtest.Reply {
				require.Equal(t, "Answer briefly.", c.System)
				return llmtest.Reply{Content: "  7 May 2023\n", Think: "the excerpt is dated 8 May; yesterday is the 7th",
					Usage: json.RawMessage(`{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}`)}
			}, "answerer", "judge")
			fake.APIKey = "sk-test-secret"
			c := textClient(t, fake, "answerer", func(cfg *llm.Config) { cfg.Mode = mode })
			resp, err := c.Text(context.Background(), llm.TextRequest{System: "Answer briefly.", User: "When?", MaxTokens: 50})
			require.NoError(t, err)
			require.Equal(t, "7 May 2023", resp.Text)
			require.Contains(t, resp.Raw, "<think>")
			require.False(t, resp.Cut)
			require.Equal(t, llm.Usage{PromptTokens: 12, CompletionTokens: 5}, resp.Usage)
			require.Equal(t, 1, resp.Attempts)
			calls := fake.Calls()
			require.Len(t, calls, 1)
			require.Equal(t, "text", calls[0].Mode)
			require.Equal(t, "answerer", calls[0].Model)
			require.Equal(t, "When?", calls[0].User)
			var body struct {
				MaxTokens   int     `json:"max_tokens"`
				Temperature float64 `json:"temperature"`
			}
			require.NoError(t, json.Unmarshal(calls[0].BodyJSON, &body))
			require.Equal(t, 50, body.MaxTokens)
			require.Zero(t, body.Temperature)
		})
	}
}

func TestTextAnswerEdges(t *testing.T) {
	t.Run("max_tokens: the client's by default; an answer cut there is an answer", func(t *testing.T) {
		fake := llmtest.NewText(t, func(llmtest.Call) llmtest.Reply {
			return llmtest.Reply{Content: "Caroline went to the support group on", FinishReason: "length"}
		}, "m")
		resp, err := textClient(t, fake, "m", func(cfg *llm.Config) { cfg.MaxTokens = 33 }).Text(context.Background(), llm.TextRequest{System: "s", User: "u"})
		require.NoError(t, err)
		require.True(t, resp.Cut)
		require.Equal(t, "Caroline went to the support group on", resp.Text)
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		require.NoError(t, json.Unmarshal(fake.Calls()[0].BodyJSON, &body))
		require.Equal(t, 33, body.MaxTokens)
	})
	t.Run("a 503 is retried, a 400 is not", func(t *testing.T) {
		fake := llmtest.NewText(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Content: "Paris"} }, "m")
		fake.Fault(llmtest.Reply{Status: 503})
		c := textClient(t, fake, "m")
		resp, err := c.Text(context.Background(), llm.TextRequest{System: "s", User: "u"})
		require.NoError(t, err)
		require.Equal(t, "Paris", resp.Text)
		require.Equal(t, 2, resp.Attempts)

		fake.Fault(llmtest.Reply{Status: 400})
		_, err = c.Text(context.Background(), llm.TextRequest{System: "s", User: "u"})
		var e *llm.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, llm.KindStatus, e.Kind)
		require.NotContains(t, err.Error(), "json_schema", "a text request suggests no JSON mode")
	})
	t.Run("an unfinished think block leaves no answer; an echoed key is cut", func(t *testing.T) {
		fake := llmtest.NewText(t, func(c llmtest.Call) llmtest.Reply {
			if c.User == "echo" {
				return llmtest.Reply{Content: "your key is sk-test-secret"}
			}
			return llmtest.Reply{Content: "<think>so the answer", FinishReason: "length"}
		}, "m")
		fake.APIKey = "sk-test-secret"
		c := textClient(t, fake, "m")
		resp, err := c.Text(context.Background(), llm.TextRequest{System: "s", User: "u"})
		require.NoError(t, err)
		require.Empty(t, resp.Text)
		require.True(t, resp.Cut)
		resp, err = c.Text(context.Background(), llm.TextRequest{System: "s", User: "echo"})
		require.NoError(t, err)
		require.Equal(t, "your key is [redacted]", resp.Text)
	})
}

// TestTextRealServer: llama.cpp's llama-server takes a text request (no
// response format, max_tokens) and answers text with its own token
// counts, cut at max_tokens.
func TestTextRealServer(t *testing.T) {
	srv := llamatest.Chat(t)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: srv.Model})
	require.NoError(t, err)
	resp, err := c.Text(context.Background(), llm.TextRequest{System: "You answer in one word.", User: "What colour is the sky on a clear day?", MaxTokens: 8})
	require.NoError(t, err)
	t.Logf("%q, %+v", resp.Raw, resp.Usage)
	require.NotEmpty(t, resp.Text)
	require.False(t, resp.Usage.Estimated, "the server's counts")
	require.LessOrEqual(t, resp.Usage.CompletionTokens, 8)
	require.Equal(t, resp.Usage.CompletionTokens == 8, resp.Cut, "cut exactly when it reached max_tokens")
}
