package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/llamatest"
	"github.com/sgam-dev/sgam/llm"
)

// TestDoctorRealServer: the doctor against llama.cpp's llama-server with
// real models: the server holds answers to a strict schema (its grammar
// refuses the value the probe asks for), json_object answers JSON, usage
// is the server's count, embeddings have the model's 384 dimensions.
func TestDoctorRealServer(t *testing.T) {
	chat, emb := llamatest.Chat(t), llamatest.Embed(t)
	r, f := diagnose(t, &llm.Config{BaseURL: chat.URL, Model: chat.Model},
		&llm.EmbedConfig{BaseURL: emb.URL, Model: emb.Model})
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("%s", b)
	require.True(t, r.Usable(), "%s", b)
	for _, c := range []string{llm.CheckReachable, llm.CheckKey, llm.CheckModel, llm.CheckJSONSchema, llm.CheckUsage, llm.CheckEmbeddings} {
		require.Equal(t, llm.Pass, f[c].Verdict, "%s: %+v", c, f[c])
	}
	require.Contains(t, f[llm.CheckEmbeddings].Detail, "384 dimensions")
	// The small model may or may not keep to a schema it only reads in
	// the prompt: json_object is not the configured mode, so it informs.
	require.Contains(t, []llm.Verdict{llm.Pass, llm.Warn}, f[llm.CheckJSONObject].Verdict)
}
