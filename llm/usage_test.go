package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

// TestUsageIsChecked: a server's token counts are checked, never believed:
// a count it could not have spent (past the prompt's bytes, past
// max_tokens and the answer's bytes, negative, wrapped past int64) or none
// at all is replaced by sgam's estimate, and marked so; a plausible count
// is taken as it is.
func TestUsageIsChecked(t *testing.T) {
	for _, c := range []struct {
		name      string
		usage     string
		estimated bool
	}{
		{"plausible", `{"prompt_tokens":40,"completion_tokens":12}`, false},
		{"past int64", `{"prompt_tokens":9223372036854775807,"completion_tokens":1}`, true},
		{"wrapped", `{"prompt_tokens":9223372036854775808,"completion_tokens":1}`, true},
		{"negative", `{"prompt_tokens":-5,"completion_tokens":-5}`, true},
		{"more than the prompt holds", `{"prompt_tokens":100000,"completion_tokens":3}`, true},
		{"more than max_tokens", `{"prompt_tokens":40,"completion_tokens":9000}`, true},
		{"none", `null`, true},
		{"zero", `{"prompt_tokens":0,"completion_tokens":0}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
			fake.Fault(llmtest.Reply{Updates: []llmtest.Update{}, Usage: json.RawMessage(c.usage)})
			resp, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
			if c.name == "wrapped" && err != nil {
				// An SDK that refuses to decode the count is no answer: the
				// attempt fails, and is still bounded.
				require.LessOrEqual(t, llm.SaturatingAdd(resp.Usage.PromptTokens, resp.Usage.CompletionTokens), 4096)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.estimated, resp.Usage.Estimated)
			if !c.estimated {
				require.Equal(t, llm.Usage{PromptTokens: 40, CompletionTokens: 12}, resp.Usage)
				return
			}
			r := request()
			require.Positive(t, resp.Usage.PromptTokens)
			require.LessOrEqual(t, resp.Usage.PromptTokens, len(r.System)+len(r.User)+len(r.Schema))
			require.GreaterOrEqual(t, resp.Usage.CompletionTokens, 0)
			require.LessOrEqual(t, resp.Usage.CompletionTokens, len(resp.Raw))
		})
	}
}

func TestSaturatingAdd(t *testing.T) {
	require.Equal(t, 5, llm.SaturatingAdd(2, 3))
	require.Equal(t, llm.MaxTokenCount, llm.SaturatingAdd(llm.MaxTokenCount, 1))
	require.Equal(t, llm.MaxTokenCount, llm.SaturatingAdd(1<<62, 1<<62))
	require.Equal(t, 3, llm.SaturatingAdd(-7, 3), "a negative count is none")
	u := llm.Usage{PromptTokens: llm.MaxTokenCount, CompletionTokens: 1}.Add(llm.Usage{PromptTokens: 1})
	require.Equal(t, llm.MaxTokenCount, u.PromptTokens)
	require.Equal(t, llm.MaxTokenCount, llm.SaturatingAdd(llm.MaxTokenCount, llm.MaxTokenCount))
}

// TestMaxTokensIsSent: every request bounds its answer.
func TestMaxTokensIsSent(t *testing.T) {
	fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
	_, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
	require.NoError(t, err)
	_, err = client(t, fake, llm.JSONSchema, func(c *llm.Config) { c.MaxTokens = 300 }).Complete(context.Background(), request())
	require.NoError(t, err)
	var sent []int
	for _, c := range fake.Calls() {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		require.NoError(t, json.Unmarshal(c.BodyJSON, &body))
		sent = append(sent, body.MaxTokens)
	}
	require.Equal(t, []int{llm.DefaultMaxTokens, 300}, sent)
}

// TestAnswerTooLarge: an answer over MaxAnswerBytes, or cut at
// max_tokens, is refused and not retried (the same prompt gets the same
// answer); the answer is kept cut, and its tokens count. A body past what
// the client reads fails the same way, without being held.
func TestAnswerTooLarge(t *testing.T) {
	fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
	huge := `{"updates":[],"pad":"` + strings.Repeat("x", llm.MaxAnswerBytes+100) + `"}`
	fake.Fault(llmtest.Reply{Content: huge})
	resp, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindTooLarge, e.Kind)
	require.False(t, e.Retryable())
	require.Equal(t, 1, resp.Attempts)
	require.True(t, resp.RawCut)
	require.Len(t, resp.Raw, llm.MaxAnswerBytes)
	require.Positive(t, resp.Usage.CompletionTokens)

	fake.Fault(llmtest.Reply{Content: `{"updates":[`, FinishReason: "length"})
	resp, err = client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindTooLarge, e.Kind)
	require.Contains(t, err.Error(), "SGAM_LLM_MAX_TOKENS")
	require.Equal(t, `{"updates":[`, resp.Raw)

	// A body of 9 MiB: the client stops reading past its bound.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`))
		chunk := []byte(strings.Repeat("y", 1<<20))
		for range 9 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`"}}]}`))
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "m", MaxAttempts: 1})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), request())
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindTooLarge, e.Kind, err.Error())
}
