package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
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
	resp, text := e.raw("POST", "/v1/episodes", "acme-write", `{"episode_id":"e2","content":"again","extract":"now"}`)
	require.Equal(t, 503, resp.StatusCode, text)
	require.NoError(t, json.Unmarshal([]byte(text), &body))
	_, field := errorOf(t, body)
	require.Equal(t, "extract", field)
	after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "a spent budget says when to try again: when it resets")
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	require.InDelta(t, time.Until(midnight).Seconds(), after, 5)
	require.Equal(t, 1, fake.CallCount(), "no call past the budget")
	code, _ = e.do("GET", "/v1/episodes/e2", "acme-read", "")
	require.Equal(t, 200, code, "the episode was captured")
	queued, err := e.store.QueuedExtractions(context.Background(), 10, false)
	require.NoError(t, err)
	require.Len(t, queued, 1, "and queued: the workers extract it once the budget allows")
	require.Equal(t, "e2", queued[0].EpisodeID)
}

// waitRecord polls until episode id of acme has a record that ends its
// extraction, and returns the records.
func waitRecord(t *testing.T, st sgam.Store, id string) []sgam.Extraction {
	t.Helper()
	var recs []sgam.Extraction
	require.Eventually(t, func() bool {
		var err error
		recs, err = st.Extractions(context.Background(), "acme", id)
		require.NoError(t, err)
		return len(recs) > 0 && recs[len(recs)-1].Status != sgam.ExtractionFailed
	}, 30*time.Second, 20*time.Millisecond)
	return recs
}

// TestExtractNowOutlivesTheRequest: a model slower than the server's
// request timeout, and a client that goes away during the call. Neither
// is a 500: the answer is 202 with the episode queued, the extraction
// goes on and commits, once, and its commit clears the episode's queue
// entry, so no worker extracts it again. (The episode was captured with no
// queue entry and the request failed with 500: no worker ever extracted
// it.)
func TestExtractNowOutlivesTheRequest(t *testing.T) { eachStore(t, testExtractNowOutlivesTheRequest) }

func testExtractNowOutlivesTheRequest(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", func(c llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Delay: 1500 * time.Millisecond, Updates: []llmtest.Update{
			{Evidence: "lives in Oslo", Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S("Oslo")}}}
	})
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", Timeout: 10 * time.Second})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) {
		c.Extractor = extract.New(c.Store, model)
		c.Timeout = 500 * time.Millisecond
	})
	// Slower than the request's timeout.
	code, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira lives in Oslo.","extract":"now"}`)
	require.Equal(t, 202, code, body)
	require.Equal(t, true, body["queued"])
	require.Equal(t, "e1", body["episode_id"])
	require.Nil(t, body["extraction"])
	queued, err := e.store.QueuedExtractions(context.Background(), 10, false)
	require.NoError(t, err)
	require.Len(t, queued, 1, "captured with its queue entry")
	recs := waitRecord(t, e.store, "e1")
	require.Len(t, recs, 1)
	require.Equal(t, sgam.ExtractionDone, recs[0].Status)

	// A client that goes away during the call.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/episodes", strings.NewReader(`{"episode_id":"e2","content":"Mira lives in Oslo.","extract":"now"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.keys["acme-write"])
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	recs = waitRecord(t, e.store, "e2")
	require.Len(t, recs, 1)

	require.Equal(t, 2, fake.CallCount(), "each episode asked once")
	queued, err = e.store.QueuedExtractions(context.Background(), 10, false)
	require.NoError(t, err)
	require.Empty(t, queued, "the commits cleared the entries: no worker extracts them again")
	require.NotContains(t, e.logs.String(), "internal error")
	require.NotContains(t, e.logs.String(), `"status":500`)
}

// TestExtractNowShutdown: a server that stops while an immediate
// extraction outlives its request gives the episode to the workers at
// once (due now, no record), and a worker then extracts it.
func TestExtractNowShutdown(t *testing.T) { eachStore(t, testExtractNowShutdown) }

func testExtractNowShutdown(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira lives in Oslo.": {Updates: []llmtest.Update{{Evidence: "lives in Oslo", Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S("Oslo")}}},
	}))
	fake.Fault(llmtest.Reply{Delay: time.Minute})
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m", Timeout: 2 * time.Minute})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) {
		c.Extractor = extract.New(c.Store, model)
		c.Timeout = 300 * time.Millisecond
	})
	code, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira lives in Oslo.","extract":"now"}`)
	require.Equal(t, 202, code, body)
	due, err := e.store.QueuedExtractions(context.Background(), 10, true)
	require.NoError(t, err)
	require.Empty(t, due, "held from the workers while the server extracts it")

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	e.srv.Close(expired)
	due, err = e.store.QueuedExtractions(context.Background(), 10, true)
	require.NoError(t, err)
	require.Len(t, due, 1, "given to the workers")
	recs, err := e.store.Extractions(context.Background(), "acme", "e1")
	require.NoError(t, err)
	require.Empty(t, recs, "an interrupted attempt is no failure")

	// What a worker does with it.
	_, err = extract.New(e.store, model).Extract(context.Background(), "acme", "e1", extract.Options{})
	require.NoError(t, err)
	recs, err = e.store.Extractions(context.Background(), "acme", "e1")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, sgam.ExtractionDone, recs[0].Status)
	left, err := e.store.QueuedExtractions(context.Background(), 10, false)
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestExtractNowModelFaultIsNoInputError: a model answer over 1 MiB is the
// model's fault: 200 with the failed record (its answer cut, its tokens
// counted), never a 400 that blames the caller's input.
func TestExtractNowModelFaultIsNoInputError(t *testing.T) {
	eachStore(t, testExtractNowModelFaultIsNoInputError)
}

func testExtractNowModelFaultIsNoInputError(t *testing.T, open opener) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	fake.Fault(llmtest.Reply{Content: `{"updates":[],"pad":"` + strings.Repeat("x", 1<<21) + `"}`})
	model, err := llm.New(llm.Config{BaseURL: fake.URL, Model: "m"})
	require.NoError(t, err)
	e := newEnvWith(t, open, nil, func(c *server.Config) { c.Extractor = extract.New(c.Store, model) })
	code, body := e.do("POST", "/v1/episodes", "acme-write", `{"episode_id":"e1","content":"Mira lives in Oslo.","extract":"now"}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, false, body["queued"], "no retry mends it")
	x := body["extraction"].(map[string]any)
	require.Equal(t, "failed", x["status"])
	require.Equal(t, true, x["raw_output_cut"])
	require.Equal(t, true, x["gave_up"])
	require.Greater(t, x["tokens_out"], float64(0))
	require.Equal(t, 1, fake.CallCount())
}
