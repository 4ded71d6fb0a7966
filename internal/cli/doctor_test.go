package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm/llmtest"
)

// TestDoctor: sgam doctor against the scripted fake: exit 0 with every
// verdict ok, 1 with the fix when the server ignores the schema, 2 with no
// configuration or a bad one; the key is never printed.
func TestDoctor(t *testing.T) {
	schemaHeld := true
	fake := llmtest.New(t, "fake-model", func(c llmtest.Call) llmtest.Reply {
		if c.Mode == "json_schema" && !schemaHeld {
			return llmtest.Reply{Content: `{"color":"red"}`}
		}
		return llmtest.Reply{Content: `{"color":"teal"}`}
	})
	fake.APIKey = "sk-doctor-never-printed"
	fake.EmbedModel = "emb"
	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	t.Setenv("SGAM_LLM_MODEL", fake.Model)
	t.Setenv("SGAM_LLM_API_KEY", fake.APIKey)
	t.Setenv("SGAM_EMBED_BASE_URL", fake.URL)
	t.Setenv("SGAM_EMBED_MODEL", "emb")
	t.Setenv("SGAM_EMBED_API_KEY", fake.APIKey)

	r := sgamRun(t, "", "doctor")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, `model server `+fake.URL+`, model "fake-model", mode json_schema`)
	require.Regexp(t, `(?m)^  ok\s+json_schema\s+the server held the answer to the schema`, r.stdout)
	require.Regexp(t, `(?m)^  ok\s+embeddings\s+64 dimensions`, r.stdout)
	require.Contains(t, r.stdout, "sgam can work with these endpoints")
	require.NotContains(t, r.stdout+r.stderr, fake.APIKey)

	r = sgamRun(t, "", "--json", "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Findings []struct {
			Check, Verdict string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Findings, 8)

	schemaHeld = false
	r = sgamRun(t, "", "doctor")
	require.Equal(t, 1, r.code, r.stdout)
	require.Regexp(t, `(?m)^  fail\s+json_schema\s+the server did not hold the answer to the schema`, r.stdout)
	require.Contains(t, r.stdout, "fix: set SGAM_LLM_MODE=json_object")
	require.Contains(t, r.stdout, "sgam cannot work with these endpoints as configured: 1 check failed")
	r = sgamRun(t, "", "doctor", "--llm-mode", "json_object")
	require.Equal(t, 0, r.code, "the fix works: %s", r.stdout)

	r = sgamRun(t, "", "doctor", "--llm-base-url", "localhost:1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--llm-base-url")

	for _, v := range []string{"SGAM_LLM_BASE_URL", "SGAM_LLM_MODEL", "SGAM_EMBED_BASE_URL", "SGAM_EMBED_MODEL"} {
		t.Setenv(v, "")
	}
	r = sgamRun(t, "", "doctor")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "nothing to check")
}
