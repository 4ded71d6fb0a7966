package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

const schema = `{"type":"object","additionalProperties":false,"required":["updates"],"properties":{"updates":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["evidence","subject"],"properties":{"evidence":{"type":"string"},"subject":{"type":"string"}}}}}}`

func request() llm.Request {
	return llm.Request{System: "Extract.", User: "<episode id=\"e1\">\nhello\n</episode>", SchemaName: "memory_updates", Schema: []byte(schema)}
}

func client(t *testing.T, fake *llmtest.Server, mode llm.Mode, tweak ...func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{BaseURL: fake.URL, Model: fake.Model, APIKey: fake.APIKey, Mode: mode, MaxBackoff: 5 * time.Second}
	for _, f := range tweak {
		f(&cfg)
	}
	c, err := llm.New(cfg)
	require.NoError(t, err)
	return c
}

func TestModes(t *testing.T) {
	for _, mode := range llm.Modes {
		t.Run(string(mode), func(t *testing.T) {
			fake := llmtest.New(t, "m1", llmtest.ByEpisode(map[string]llmtest.Reply{
				"hello": {Updates: []llmtest.Update{{Evidence: "hello", Subject: "mira"}}},
			}))
			fake.APIKey = "sk-test-secret"
			resp, err := client(t, fake, mode).Complete(context.Background(), request())
			require.NoError(t, err)
			require.Contains(t, resp.JSON, `"evidence":"hello"`)
			require.Equal(t, 1, resp.Attempts)
			require.Positive(t, resp.Usage.PromptTokens)
			require.Positive(t, resp.Usage.CompletionTokens)
			calls := fake.Calls()
			require.Len(t, calls, 1)
			require.Equal(t, string(mode), calls[0].Mode)
			if mode != llm.JSONObject {
				// The schema goes as written: its property order is the
				// order the model fills the fields in.
				require.Less(t, strings.Index(string(calls[0].Schema), `"evidence"`), strings.Index(string(calls[0].Schema), `"subject"`))
			}
		})
	}
}

func TestThinkAndFencesAreStripped(t *testing.T) {
	fake := llmtest.New(t, "m1", func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Think: "the user says hello, so {\"no\": 1}", Content: "```json\n{\"updates\":[]}\n```"}
	})
	resp, err := client(t, fake, llm.JSONObject).Complete(context.Background(), request())
	require.NoError(t, err)
	require.Equal(t, `{"updates":[]}`, resp.JSON)
	require.Contains(t, resp.Raw, "<think>")

	require.Equal(t, "<think>unfinished", llm.Clean("<think>unfinished"))
	require.Equal(t, "{}", llm.Clean("<think>a</think><think>b</think>\n{}"))
	require.Equal(t, "```yaml\na: 1\n```", llm.Clean("```yaml\na: 1\n```"))
}

func TestRetries(t *testing.T) {
	t.Run("429 with Retry-After", func(t *testing.T) {
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		fake.Fault(llmtest.Reply{Status: 429, RetryAfter: "1"})
		start := time.Now()
		resp, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
		require.NoError(t, err)
		require.Equal(t, 2, resp.Attempts)
		require.GreaterOrEqual(t, time.Since(start), time.Second, "Retry-After: 1 is honoured")
	})
	t.Run("500 then 503", func(t *testing.T) {
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		fake.Fault(llmtest.Reply{Status: 500, RetryAfter: "0"}, llmtest.Reply{Status: 503, RetryAfter: "0"})
		resp, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
		require.NoError(t, err)
		require.Equal(t, 3, resp.Attempts)
	})
	t.Run("400 is not retried and names the mode", func(t *testing.T) {
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		fake.Fault(llmtest.Reply{Status: 400})
		_, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, 400, e.Status)
		require.False(t, e.Retryable())
		require.Equal(t, 1, fake.CallCount())
		require.Contains(t, err.Error(), "the request used mode json_schema")
	})
	t.Run("gives up after MaxAttempts", func(t *testing.T) {
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		fake.Fault(llmtest.Reply{Status: 502, RetryAfter: "0"}, llmtest.Reply{Status: 502, RetryAfter: "0"})
		_, err := client(t, fake, llm.JSONSchema, func(c *llm.Config) { c.MaxAttempts = 2 }).Complete(context.Background(), request())
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, 2, e.Attempts)
		require.Equal(t, 2, fake.CallCount())
	})
	t.Run("a server that dies mid-answer", func(t *testing.T) {
		// The first attempt's connection is closed before any answer (as
		// when llama-server is killed while it generates): retried, and
		// the prompt's estimate counted for it, as for a timeout.
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		dying := true
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dying {
				// The prompt was taken in, then the server died.
				dying = false
				_, _ = io.Copy(io.Discard, r.Body)
				conn, _, err := w.(http.Hijacker).Hijack()
				require.NoError(t, err)
				conn.Close()
				return
			}
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimSuffix(fake.URL, "/v1")+r.URL.Path, r.Body)
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		}))
		t.Cleanup(proxy.Close)
		c, err := llm.New(llm.Config{BaseURL: proxy.URL + "/v1", Model: "m1", MaxBackoff: time.Second})
		require.NoError(t, err)
		resp, err := c.Complete(context.Background(), request())
		require.NoError(t, err)
		require.Equal(t, 2, resp.Attempts)
		require.Equal(t, 1, fake.CallCount())
		require.True(t, resp.Usage.Estimated, "the dead attempt's prompt is estimated: %+v", resp)
		require.Greater(t, resp.Usage.PromptTokens, llm.EstimateTokens(len(request().System)+len(request().User)), "two prompts counted")
	})
	t.Run("a Retry-After beyond MaxBackoff fails at once", func(t *testing.T) {
		fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
		fake.Fault(llmtest.Reply{Status: 429, RetryAfter: "3600"})
		_, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
		require.ErrorContains(t, err, "asks to wait 1h0m0s")
		require.Equal(t, 1, fake.CallCount())
	})
}

func TestTimeout(t *testing.T) {
	fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
	fake.Fault(llmtest.Reply{Delay: 2 * time.Second})
	resp, err := client(t, fake, llm.JSONSchema, func(c *llm.Config) { c.Timeout = 200 * time.Millisecond }).Complete(context.Background(), request())
	require.NoError(t, err, "the second attempt answers at once")
	require.Equal(t, 2, resp.Attempts)

	fake.Fault(llmtest.Reply{Delay: 2 * time.Second}, llmtest.Reply{Delay: 2 * time.Second})
	_, err = client(t, fake, llm.JSONSchema, func(c *llm.Config) { c.Timeout = 200 * time.Millisecond; c.MaxAttempts = 2 }).Complete(context.Background(), request())
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindTimeout, e.Kind)
}

// TestCanceled: a caller's context that is cancelled ends the request
// with KindCanceled (nothing to retry: the caller went away); one whose
// deadline passes ends it with KindTimeout, which a later attempt under a
// new deadline may beat, and counts the prompt's estimated tokens (the
// server may have spent them).
func TestCanceled(t *testing.T) {
	fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
	fake.Fault(llmtest.Reply{Delay: 5 * time.Second}, llmtest.Reply{Delay: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := client(t, fake, llm.JSONSchema).Complete(ctx, request())
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindCanceled, e.Kind)
	require.False(t, e.Retryable())

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp, err := client(t, fake, llm.JSONSchema).Complete(ctx, request())
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.KindTimeout, e.Kind)
	require.True(t, e.Retryable())
	require.Equal(t, 1, resp.Attempts)
	require.Positive(t, resp.Usage.PromptTokens)
	require.True(t, resp.Usage.Estimated)
}

func TestKeysStayOut(t *testing.T) {
	// An OpenAI key in the environment is never sent to a server sgam was
	// not given a key for (the fake refuses any Authorization header).
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	fake := llmtest.New(t, "m1", llmtest.ByEpisode(nil))
	_, err := client(t, fake, llm.JSONSchema).Complete(context.Background(), request())
	require.NoError(t, err)

	// A refused key is not echoed in the error.
	fake.APIKey = "sk-right"
	_, err = client(t, fake, llm.JSONSchema, func(c *llm.Config) { c.APIKey = "sk-wrong-secret" }).Complete(context.Background(), request())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "sk-wrong-secret")
}

func TestConfig(t *testing.T) {
	_, err := llm.New(llm.Config{Model: "m"})
	require.ErrorContains(t, err, "SGAM_LLM_BASE_URL")
	_, err = llm.New(llm.Config{BaseURL: "localhost:11434", Model: "m"})
	require.ErrorContains(t, err, "http://")
	_, err = llm.New(llm.Config{BaseURL: "http://x/v1"})
	require.ErrorContains(t, err, "SGAM_LLM_MODEL")
	_, err = llm.New(llm.Config{BaseURL: "http://x/v1", Model: "m", Mode: "xml"})
	require.ErrorContains(t, err, `"xml"`)

	env := map[string]string{llm.EnvBaseURL: "http://x/v1", llm.EnvModel: "m", llm.EnvMode: "tools"}
	cfg, ok, err := llm.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, llm.Tools, cfg.Mode)
	_, ok, err = llm.FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.False(t, ok)

	f := t.TempDir() + "/key"
	require.NoError(t, writeFile(f, "sk-in-a-file\n"))
	env[llm.EnvAPIKeyFile] = f
	cfg, _, err = llm.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "sk-in-a-file", cfg.APIKey)
	env[llm.EnvAPIKey] = "sk-too"
	_, _, err = llm.FromEnv(func(k string) string { return env[k] })
	require.ErrorContains(t, err, "not both")
	require.False(t, errors.Is(err, context.Canceled))
}

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o600) }

// TestEchoedKeyCut: a server that quotes the Authorization header back,
// in an error or in its answer, does not get the key into sgam's errors
// or the answers it keeps in extraction records.
func TestEchoedKeyCut(t *testing.T) {
	const key = "sk-SECRETKEY-abc123xyz"
	status := http.StatusUnauthorized
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		auth, _ := json.Marshal(r.Header.Get("Authorization"))
		w.WriteHeader(status)
		if status != http.StatusOK {
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, auth[1:len(auth)-1])
			return
		}
		content, _ := json.Marshal(`{"updates":[{"evidence":"` + r.Header.Get("Authorization") + `","subject":"mira"}]}`)
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, content)
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: key, Mode: llm.JSONSchema, MaxBackoff: time.Second})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), request())
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
	require.Contains(t, err.Error(), "Incorrect API key provided: Bearer [redacted]")

	status = http.StatusOK
	ans, err := c.Complete(context.Background(), request())
	require.NoError(t, err)
	require.NotContains(t, ans.Raw, key)
	require.Contains(t, ans.Raw, "Bearer [redacted]")
}
