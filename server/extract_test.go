package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/server"
)

func TestEpisodeExtraction(t *testing.T) { eachStore(t, testEpisodeExtraction) }

func testEpisodeExtraction(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira lives in Oslo.": {Updates: []llmtest.Update{{Evidence: "lives in Oslo", Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S("Oslo")}}},
	}))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) { c.Extractor = extract.New(c.Store, model) })

	// now: extracted before the answer.
	code, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira lives in Oslo.","subjects":["mira"],"extract":"now"}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, false, body["queued"])
	require.Equal(t, []any{"mira"}, body["subjects"])
	x := body["extraction"].(map[string]any)
	require.Equal(t, "done", x["status"])
	acc := x["accepted"].([]any)[0].(map[string]any)
	require.Equal(t, "written", acc["outcome"])
	code, body = e.do("GET", "/v1/subjects/mira/attributes/city", "acme-read", "")
	require.Equal(t, 200, code, body)
	require.Equal(t, "Oslo", body["fact"].(map[string]any)["value"])

	// background (the default with a model): queued with the capture.
	code, body = e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e2","content":"Mira likes tea."}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, true, body["queued"])
	require.Nil(t, body["extraction"])
	code, body = e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e3","content":"x","extract":"none"}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, false, body["queued"])

	// The records of an episode; another tenant's id is a 404.
	code, body = e.do("GET", "/v1/episodes/e1/extractions", "acme-read", "")
	require.Equal(t, 200, code, body)
	require.Len(t, body["extractions"], 1)
	code, body = e.do("GET", "/v1/episodes/e1/extractions", "globex-admin", "")
	require.Equal(t, 404, code, body)

	// Bad input, by name.
	code, body = e.do("POST", "/v1/episodes", "acme-write", `{"content":"x","extract":"later"}`)
	require.Equal(t, 400, code)
	_, field := errorOf(t, body)
	require.Equal(t, "extract", field)
	code, body = e.do("POST", "/v1/episodes", "acme-write", `{"content":"x","subjects":["a","a"]}`)
	require.Equal(t, 400, code)
	_, field = errorOf(t, body)
	require.Equal(t, "subjects[1]", field)

	// Without a model, now is refused and the default captures only.
	bare := newEnvWith(t, open, nil, nil)
	code, body = bare.do("POST", "/v1/episodes", "acme-write", `{"content":"x","extract":"now"}`)
	require.Equal(t, 400, code, body)
	code, body = bare.do("POST", "/v1/episodes", "acme-write", `{"content":"x"}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, false, body["queued"])
}

func TestExtractNowKeepsToTheBudget(t *testing.T) { eachStore(t, testExtractNowKeepsToTheBudget) }

func testExtractNowKeepsToTheBudget(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) { c.Extractor = extract.New(c.Store, model) })
	code, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"hello","extract":"now"}`)
	require.Equal(t, 200, code, body)
	require.NoError(t, e.store.SetBudget(context.Background(), "acme", 1))
	code, body = e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e2","content":"again","extract":"now"}`)
	require.Equal(t, 503, code, body)
	_, field := errorOf(t, body)
	require.Equal(t, "extract", field)
	require.Equal(t, 1, fake.CallCount(), "no call past the budget")
	code, _ = e.do("GET", "/v1/episodes/e2", "acme-read", "")
	require.Equal(t, 200, code, "the episode was captured")
	queued, err := e.store.QueuedExtractions(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, queued, 1, "and queued: the workers extract it once the budget allows")
	require.Equal(t, "e2", queued[0].EpisodeID)
}
