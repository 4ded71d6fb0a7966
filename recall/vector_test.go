package recall_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/recall"
)

// TestVectorEvidence: with an embedder, the episodes nearest the question
// by their stored vectors are fused with the lexical ranking (here the
// question is all stop words, so only the vectors can find anything);
// another tenant's identical episode and vector are never cited; a
// forgotten episode's vector goes with it; an endpoint that fails leaves
// recall lexical, saying so.
func TestVectorEvidence(t *testing.T) {
	w := newWorld(t)
	fake := llmtest.New(t, "chat", nil)
	emb, err := llm.NewEmbedder(llm.EmbedConfig{BaseURL: fake.URL, Model: "fake-embed", MaxRetries: -1})
	require.NoError(t, err)
	w.clock.Set(ts(t, "2026-06-01T09:00:00Z"))
	for _, e := range []sgam.Episode{
		{Tenant: "acme", ID: "v1", Session: "s", Content: "what about it then", OccurredAt: ts(t, "2026-06-01T09:00:00Z")},
		{Tenant: "acme", ID: "v2", Session: "s", Content: "zebras graze in the north", OccurredAt: ts(t, "2026-06-01T09:01:00Z")},
		{Tenant: "globex", ID: "g1", Session: "s", Content: "what about it then", OccurredAt: ts(t, "2026-06-01T09:00:00Z")},
	} {
		_, err := w.store.AddEpisode(w.ctx, e)
		require.NoError(t, err)
		vecs, _, err := emb.Embed(w.ctx, []string{e.Content})
		require.NoError(t, err)
		_, err = w.store.PutEmbeddings(w.ctx, emb.Model(), []sgam.EpisodeVector{{Tenant: e.Tenant, EpisodeID: e.ID, Vector: vecs[0]}})
		require.NoError(t, err)
	}
	w.clock.Set(ts(t, "2026-06-02T00:00:00Z"))
	r := recall.New(w.store).WithClock(w.clock).WithEmbedder(emb, w.store)
	ask := func(tenant, q string) *recall.Context {
		t.Helper()
		c, err := r.Recall(w.ctx, recall.Query{Tenant: tenant, Question: q})
		require.NoError(t, err)
		return c
	}
	lexical := w.recall(recall.Query{Tenant: "acme", Question: "what about it?"})
	require.Empty(t, lexical.Evidence, "stop words only: nothing to search for by words")
	require.Equal(t, "lexical", lexical.Search)

	c := ask("acme", "what about it?")
	require.Equal(t, "lexical+vector (fake-embed)", c.Search)
	require.NotEmpty(t, c.Evidence)
	require.Equal(t, "v1", c.Evidence[0].EpisodeID, "the nearest vector")
	for _, e := range c.Evidence {
		require.NotEqual(t, "g1", e.EpisodeID)
	}
	both := ask("acme", "zebras")
	require.Equal(t, "v2", both.Evidence[0].EpisodeID, "in both rankings, first")

	_, err = w.store.Forget(w.ctx, sgam.ForgetRequest{Tenant: "acme", Episode: "v1"})
	require.NoError(t, err)
	c = ask("acme", "what about it?")
	for _, e := range c.Evidence {
		require.NotEqual(t, "v1", e.EpisodeID, "forgotten, vector and all")
	}

	// A tenant with nothing embedded under the model is searched by words,
	// and the answer says why.
	_, err = w.store.AddEpisode(w.ctx, sgam.Episode{Tenant: "initech", ID: "i1", Content: "zebras again", OccurredAt: ts(t, "2026-06-01T09:00:00Z")})
	require.NoError(t, err)
	c = ask("initech", "zebras")
	require.Equal(t, "lexical", c.Search)
	require.Len(t, c.Warnings, 1)
	require.Contains(t, c.Warnings[0], "no episode of this tenant has a vector of model fake-embed yet")
	require.Equal(t, "i1", c.Evidence[0].EpisodeID)

	fake.FaultEmbed(llmtest.EmbedReply{Status: 400})
	c = ask("acme", "zebras")
	require.Equal(t, "lexical", c.Search)
	require.Len(t, c.Warnings, 1)
	require.Contains(t, c.Warnings[0], "lexical only")
	require.Equal(t, "v2", c.Evidence[0].EpisodeID)
}
