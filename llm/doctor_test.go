package llm_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

// answers is a fake model that keeps to the probe's schema as a server
// that constrains output would: teal in every mode.
func answers(content string) llmtest.Script {
	return func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Content: content} }
}

func findings(t *testing.T, r llm.Report) map[string]llm.Finding {
	t.Helper()
	out := map[string]llm.Finding{}
	for _, f := range r.Findings {
		require.NotContains(t, out, f.Check, "one finding per check")
		out[f.Check] = f
	}
	return out
}

func diagnose(t *testing.T, chat *llm.Config, embed *llm.EmbedConfig) (llm.Report, map[string]llm.Finding) {
	t.Helper()
	r, err := llm.Diagnose(t.Context(), chat, embed)
	require.NoError(t, err)
	return r, findings(t, r)
}

func TestDoctorHealthyServer(t *testing.T) {
	fake := llmtest.New(t, "m", answers(`{"color":"teal"}`))
	fake.APIKey = "sk-doctor-secret-key"
	fake.EmbedModel = "emb"
	r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m", APIKey: fake.APIKey}, &llm.EmbedConfig{BaseURL: fake.URL, Model: "emb", APIKey: fake.APIKey})
	require.True(t, r.Usable(), "%+v", r)
	for _, c := range []string{llm.CheckReachable, llm.CheckKey, llm.CheckModel, llm.CheckJSONSchema, llm.CheckJSONObject, llm.CheckThink, llm.CheckUsage, llm.CheckEmbeddings} {
		require.Equal(t, llm.Pass, f[c].Verdict, "%s: %+v", c, f[c])
	}
	require.Contains(t, f[llm.CheckEmbeddings].Detail, "64 dimensions")
	require.Contains(t, f[llm.CheckKey].Detail, "a key was sent")
	b, _ := json.Marshal(r)
	require.NotContains(t, string(b), fake.APIKey)
	// Each mode was probed once, and the json_schema probe asked for a
	// value outside the enum: only a constraining server keeps to it.
	calls := fake.Calls()
	require.Len(t, calls, 2)
	require.Equal(t, "json_schema", calls[0].Mode)
	require.Contains(t, calls[0].User, `"red"`)
	require.Equal(t, "json_object", calls[1].Mode)
}

func TestDoctorServerIgnoresTheSchema(t *testing.T) {
	// Ollama's /v1 and others take response_format and answer what the
	// model says: here what the prompt asked for, outside the enum.
	fake := llmtest.New(t, "m", func(c llmtest.Call) llmtest.Reply {
		if c.Mode == "json_schema" {
			return llmtest.Reply{Content: `{"color":"red"}`}
		}
		return llmtest.Reply{Content: `{"color":"teal"}`}
	})
	r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
	require.False(t, r.Usable())
	js := f[llm.CheckJSONSchema]
	require.Equal(t, llm.Fail, js.Verdict)
	require.Contains(t, js.Detail, `it answered color "red", not one of "teal", "mauve"`)
	require.Contains(t, js.Fix, "SGAM_LLM_MODE=json_object")
	require.Equal(t, llm.Pass, f[llm.CheckJSONObject].Verdict)

	// Configured for json_object, the same server serves: json_schema only
	// informs.
	r, f = diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m", Mode: llm.JSONObject}, nil)
	require.True(t, r.Usable(), "%+v", r)
	require.Equal(t, llm.Warn, f[llm.CheckJSONSchema].Verdict)
	require.Empty(t, f[llm.CheckJSONSchema].Fix)
}

func TestDoctorServerRefusesJSONSchema(t *testing.T) {
	// DeepSeek answers 400 to response_format json_schema.
	fake := llmtest.New(t, "m", func(c llmtest.Call) llmtest.Reply {
		if c.Mode == "json_schema" {
			return llmtest.Reply{Status: http.StatusBadRequest}
		}
		return llmtest.Reply{Content: "```json\n{\"color\":\"teal\"}\n```"}
	})
	r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
	require.False(t, r.Usable())
	require.Equal(t, llm.Fail, f[llm.CheckJSONSchema].Verdict)
	require.Contains(t, f[llm.CheckJSONSchema].Detail, "the server refuses json_schema requests")
	require.Contains(t, f[llm.CheckJSONSchema].Fix, "json_object")
	require.Equal(t, llm.Pass, f[llm.CheckJSONObject].Verdict, "a fenced answer is read: %+v", f[llm.CheckJSONObject])
}

func TestDoctorThinkAndUsage(t *testing.T) {
	fake := llmtest.New(t, "m", func(c llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Content: `{"color":"mauve"}`, Think: "The schema allows teal or mauve.", Usage: json.RawMessage(`{}`)}
	})
	r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
	require.True(t, r.Usable(), "no usage is a warning: %+v", r)
	require.Equal(t, llm.Pass, f[llm.CheckThink].Verdict)
	require.Contains(t, f[llm.CheckThink].Detail, "<think> block")
	require.Equal(t, llm.Warn, f[llm.CheckUsage].Verdict)
	require.Contains(t, f[llm.CheckUsage].Detail, "estimate")
}

func TestDoctorEmbeddings(t *testing.T) {
	fake := llmtest.New(t, "m", answers(`{"color":"teal"}`))
	t.Run("the dimension asked for", func(t *testing.T) {
		fake.FaultEmbed(llmtest.EmbedReply{Dims: 48})
		r, f := diagnose(t, nil, &llm.EmbedConfig{BaseURL: fake.URL, Model: "emb", Dimensions: 32})
		require.False(t, r.Usable())
		require.Equal(t, llm.Fail, f[llm.CheckEmbeddings].Verdict)
		require.Contains(t, f[llm.CheckEmbeddings].Detail, "48 dimensions")
	})
	t.Run("one vector for everything", func(t *testing.T) {
		same := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]},{"object":"embedding","index":1,"embedding":[0.6,0.8]}],"model":"emb","usage":{"prompt_tokens":4,"total_tokens":4}}`
		fake.FaultEmbed(llmtest.EmbedReply{Body: same})
		_, f := diagnose(t, nil, &llm.EmbedConfig{BaseURL: fake.URL, Model: "emb"})
		require.Equal(t, llm.Fail, f[llm.CheckEmbeddings].Verdict)
		require.Contains(t, f[llm.CheckEmbeddings].Detail, "the same vector")
	})
	t.Run("a name the server does not list", func(t *testing.T) {
		fake.Listed = []string{"m", "emb"}
		r, f := diagnose(t, nil, &llm.EmbedConfig{BaseURL: fake.URL, Model: "emb-typo"})
		require.True(t, r.Usable(), "a warning: %+v", r)
		require.Equal(t, llm.Warn, f[llm.CheckEmbeddings].Verdict)
		require.Contains(t, f[llm.CheckEmbeddings].Detail, `not "emb-typo"`)
		require.Contains(t, f[llm.CheckEmbeddings].Fix, "SGAM_EMBED_MODEL")
		fake.Listed = nil
	})
	t.Run("unknown model", func(t *testing.T) {
		fake.EmbedModel = "emb"
		_, f := diagnose(t, nil, &llm.EmbedConfig{BaseURL: fake.URL, Model: "other"})
		require.Equal(t, llm.Fail, f[llm.CheckEmbeddings].Verdict)
		require.Contains(t, f[llm.CheckEmbeddings].Detail, "404")
	})
}

func TestDoctorCannotAsk(t *testing.T) {
	t.Run("refused key", func(t *testing.T) {
		fake := llmtest.New(t, "m", answers(`{"color":"teal"}`))
		fake.APIKey = "sk-right-key"
		r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m", APIKey: "sk-wrong-secret"}, nil)
		require.False(t, r.Usable())
		require.Equal(t, llm.Pass, f[llm.CheckReachable].Verdict)
		require.Equal(t, llm.Fail, f[llm.CheckKey].Verdict)
		require.Contains(t, f[llm.CheckKey].Fix, "SGAM_LLM_API_KEY")
		require.Equal(t, llm.Skip, f[llm.CheckJSONSchema].Verdict)
		b, _ := json.Marshal(r)
		require.NotContains(t, string(b), "sk-wrong-secret")
		require.Zero(t, fake.CallCount(), "no probe after the key was refused")
	})
	t.Run("nothing listens", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		r, f := diagnose(t, &llm.Config{BaseURL: url + "/v1", Model: "m"}, nil)
		require.False(t, r.Usable())
		require.Equal(t, llm.Fail, f[llm.CheckReachable].Verdict)
		require.Contains(t, f[llm.CheckReachable].Fix, "SGAM_LLM_BASE_URL")
	})
	t.Run("still loading", func(t *testing.T) {
		fake := llmtest.New(t, "m", answers(`{"color":"teal"}`))
		fake.ModelsStatus = http.StatusServiceUnavailable
		_, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
		require.Equal(t, llm.Fail, f[llm.CheckReachable].Verdict)
		require.Contains(t, f[llm.CheckReachable].Fix, "load")
	})
	t.Run("no listing, another name", func(t *testing.T) {
		fake := llmtest.New(t, "m", answers(`{"color":"teal"}`))
		fake.ModelsStatus = http.StatusNotFound
		r, f := diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
		require.True(t, r.Usable())
		require.Equal(t, llm.Skip, f[llm.CheckModel].Verdict)
		fake.ModelsStatus, fake.Listed = 0, []string{"other-model"}
		r, f = diagnose(t, &llm.Config{BaseURL: fake.URL, Model: "m"}, nil)
		require.True(t, r.Usable(), "a name the listing lacks warns: llama-server serves any")
		require.Equal(t, llm.Warn, f[llm.CheckModel].Verdict)
		require.True(t, strings.Contains(f[llm.CheckModel].Detail, `"other-model"`))
	})
	t.Run("bad configuration", func(t *testing.T) {
		_, err := llm.Diagnose(t.Context(), &llm.Config{BaseURL: "localhost:8080", Model: "m"}, nil)
		require.Error(t, err)
	})
}
