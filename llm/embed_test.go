package llm_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

func embedder(t *testing.T, fake *llmtest.Server, tweak ...func(*llm.EmbedConfig)) *llm.EmbedClient {
	t.Helper()
	cfg := llm.EmbedConfig{BaseURL: fake.URL, Model: "embed-m", APIKey: fake.APIKey}
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := llm.NewEmbedder(cfg)
	require.NoError(t, err)
	return e
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestEmbed(t *testing.T) {
	fake := llmtest.New(t, "chat-m", nil)
	fake.APIKey = "sk-embed-secret"
	e := embedder(t, fake)
	require.Equal(t, "embed-m", e.Model())
	texts := []string{"Mira renews her passport in July.", "Lunch was good today.", "The passport office opens at nine."}
	vecs, tokens, err := e.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, vecs, 3)
	require.Positive(t, tokens)
	for i, v := range vecs {
		require.Equal(t, llmtest.Embedding("embed-m", texts[i], 64), v, "in input order")
	}
	// The fake's vectors put texts that share words near each other.
	q := llmtest.Embedding("embed-m", "when is the passport renewal?", 64)
	require.Greater(t, cosine(q, vecs[0]), cosine(q, vecs[1]))
	require.Greater(t, cosine(q, vecs[2]), cosine(q, vecs[1]))

	calls := fake.EmbedCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "embed-m", calls[0].Model)
	require.Equal(t, "Bearer sk-embed-secret", calls[0].Header.Get("Authorization"))
	require.Zero(t, fake.CallCount(), "no chat call")

	none, tokens, err := e.Embed(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, none)
	require.Zero(t, tokens)
	_, _, err = e.Embed(context.Background(), []string{"a", ""})
	require.ErrorContains(t, err, "texts[1] is empty")
	require.Equal(t, 1, fake.EmbedCallCount(), "refused before sending")
}

func TestEmbedBatches(t *testing.T) {
	fake := llmtest.New(t, "chat-m", nil)
	e := embedder(t, fake)
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = fmt.Sprintf("text number %d", i)
	}
	vecs, _, err := e.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, vecs, 150)
	require.Equal(t, llmtest.Embedding("embed-m", texts[149], 64), vecs[149])
	var sizes []int
	for _, c := range fake.EmbedCalls() {
		sizes = append(sizes, len(c.Input))
	}
	require.Equal(t, []int{64, 64, 22}, sizes, "at most 64 texts a request")

	// Long texts: at most 512 KiB a request, and each cut to 32 KiB on a
	// rune boundary.
	long := strings.Repeat("é", 20<<10) // 40 KiB
	texts = make([]string, 20)
	for i := range texts {
		texts[i] = long
	}
	before := fake.EmbedCallCount()
	vecs, _, err = e.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, vecs, 20)
	calls := fake.EmbedCalls()[before:]
	require.Len(t, calls, 2)
	require.Len(t, calls[0].Input, 16)
	sent := calls[0].Input[0]
	require.Equal(t, llm.MaxEmbedTextBytes, len(sent))
	require.True(t, utf8.ValidString(sent))
	require.True(t, strings.HasPrefix(long, sent))
	require.Equal(t, "ab", llm.CutText("abé", 3), "never half a rune")
	require.Equal(t, "abé", llm.CutText("abé", 4))
}

func TestEmbedDimensions(t *testing.T) {
	fake := llmtest.New(t, "chat-m", nil)
	e := embedder(t, fake, func(c *llm.EmbedConfig) { c.Dimensions = 16 })
	require.Equal(t, "embed-m@16", e.Model(), "a shortened model is a space of its own")
	vecs, _, err := e.Embed(context.Background(), []string{"a b c"})
	require.NoError(t, err)
	require.Len(t, vecs[0], 16)
	require.Equal(t, 16, fake.EmbedCalls()[0].Dimensions)

	fake.FaultEmbed(llmtest.EmbedReply{Dims: 8})
	_, _, err = e.Embed(context.Background(), []string{"a b c"})
	require.ErrorContains(t, err, "8 dimensions")
	require.ErrorContains(t, err, "16")
}

func TestEmbedBadAnswers(t *testing.T) {
	fake := llmtest.New(t, "chat-m", nil)
	e := embedder(t, fake)
	check := func(rep llmtest.EmbedReply, want string) {
		t.Helper()
		fake.FaultEmbed(rep)
		before := fake.EmbedCallCount()
		_, _, err := e.Embed(context.Background(), []string{"one", "two", "three"})
		var le *llm.Error
		require.ErrorAs(t, err, &le)
		require.Equal(t, llm.KindMalformed, le.Kind)
		require.False(t, le.Retryable())
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, err, "embeddings")
		require.Equal(t, before+1, fake.EmbedCallCount(), "an unusable answer is not asked again")
	}
	check(llmtest.EmbedReply{Vectors: 2}, "2 vectors for 3 texts")
	check(llmtest.EmbedReply{Body: `{"object":"list","model":"embed-m","usage":{"prompt_tokens":1,"total_tokens":1},"data":[
		{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":1,"embedding":[1,0,0]},{"object":"embedding","index":2,"embedding":[1,0]}]}`},
		"the vector of text 1 has 3 dimensions")
	check(llmtest.EmbedReply{Body: `{"object":"list","model":"embed-m","usage":{"prompt_tokens":1,"total_tokens":1},"data":[
		{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":2,"embedding":[1,0]}]}`},
		"indices must be 0 to 2")
	check(llmtest.EmbedReply{Body: `{"object":"list","model":"embed-m","usage":{"prompt_tokens":1,"total_tokens":1},"data":[
		{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":1,"embedding":[1e300,0]},{"object":"embedding","index":2,"embedding":[1,0]}]}`},
		"must be finite")
	check(llmtest.EmbedReply{Body: `{"object":"list","model":"embed-m","usage":{"prompt_tokens":1,"total_tokens":1},"data":[
		{"object":"embedding","index":0,"embedding":[]},{"object":"embedding","index":1,"embedding":[1]},{"object":"embedding","index":2,"embedding":[1]}]}`},
		"the vector of text 0 is empty")
}

func TestEmbedRetries(t *testing.T) {
	fake := llmtest.New(t, "chat-m", nil)
	e := embedder(t, fake)
	fake.FaultEmbed(llmtest.EmbedReply{Status: 429, RetryAfter: "0"}, llmtest.EmbedReply{Status: 503, RetryAfter: "0"})
	vecs, _, err := e.Embed(context.Background(), []string{"hello"})
	require.NoError(t, err)
	require.Len(t, vecs, 1)
	require.Equal(t, 3, fake.EmbedCallCount(), "a 429 and a 503 are asked again")

	fake.FaultEmbed(llmtest.EmbedReply{Status: 500, RetryAfter: "0"}, llmtest.EmbedReply{Status: 500, RetryAfter: "0"})
	_, _, err = embedder(t, fake, func(c *llm.EmbedConfig) { c.MaxRetries = 1 }).Embed(context.Background(), []string{"hello"})
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, 500, le.Status)
	require.True(t, le.Retryable(), "a later try may succeed")
	require.Equal(t, 2, le.Attempts)
	require.ErrorContains(t, err, "embeddings server answered 500")
	require.NotContains(t, err.Error(), "the request used mode", "no chat mode to blame")

	// A refused key is not retried, and not echoed.
	fake.APIKey = "sk-right"
	before := fake.EmbedCallCount()
	_, _, err = embedder(t, fake, func(c *llm.EmbedConfig) { c.APIKey = "sk-wrong-secret" }).Embed(context.Background(), []string{"hello"})
	require.ErrorAs(t, err, &le)
	require.Equal(t, 401, le.Status)
	require.False(t, le.Retryable())
	require.NotContains(t, err.Error(), "sk-wrong-secret")
	require.Equal(t, before, fake.EmbedCallCount(), "the fake counts only authorized requests")

	fake.APIKey = ""
	fake.EmbedModel = "other"
	_, _, err = e.Embed(context.Background(), []string{"hello"})
	require.ErrorAs(t, err, &le)
	require.Equal(t, 404, le.Status)
}

func TestEmbedConfig(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	_, ok, err := llm.EmbedConfigFromEnv(get)
	require.NoError(t, err)
	require.False(t, ok, "nothing set: no embeddings")
	env[llm.EnvEmbedBaseURL] = "http://x/v1"
	_, ok, err = llm.EmbedConfigFromEnv(get)
	require.ErrorContains(t, err, llm.EnvEmbedModel)
	require.False(t, ok)
	env[llm.EnvEmbedModel] = "nomic-embed-text"
	env[llm.EnvEmbedDimensions] = "256"
	cfg, ok, err := llm.EmbedConfigFromEnv(get)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, llm.EmbedConfig{BaseURL: "http://x/v1", Model: "nomic-embed-text", Dimensions: 256}, cfg)
	env[llm.EnvEmbedDimensions] = "many"
	_, _, err = llm.EmbedConfigFromEnv(get)
	require.ErrorContains(t, err, llm.EnvEmbedDimensions)
	delete(env, llm.EnvEmbedDimensions)

	f := t.TempDir() + "/key"
	require.NoError(t, writeFile(f, "sk-embed-in-a-file\n"))
	env[llm.EnvEmbedAPIKeyFile] = f
	cfg, _, err = llm.EmbedConfigFromEnv(get)
	require.NoError(t, err)
	require.Equal(t, "sk-embed-in-a-file", cfg.APIKey)
	env[llm.EnvEmbedAPIKey] = "sk-too"
	_, _, err = llm.EmbedConfigFromEnv(get)
	require.ErrorContains(t, err, "not both")

	_, err = llm.NewEmbedder(llm.EmbedConfig{Model: "m"})
	require.ErrorContains(t, err, llm.EnvEmbedBaseURL)
	_, err = llm.NewEmbedder(llm.EmbedConfig{BaseURL: "localhost:11434", Model: "m"})
	require.ErrorContains(t, err, "http://")
	_, err = llm.NewEmbedder(llm.EmbedConfig{BaseURL: "http://x/v1"})
	require.ErrorContains(t, err, llm.EnvEmbedModel)
	_, err = llm.NewEmbedder(llm.EmbedConfig{BaseURL: "http://x/v1", Model: "m", APIKey: "a\nb"})
	require.ErrorContains(t, err, "line break")
	require.NotContains(t, err.Error(), "a\nb")
}
