package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/store"
)

// Capture a message with a model extracting its facts at once, then
// recall what the memory knows for a question.
func ExampleIngester_Capture() {
	ctx := context.Background()

	// A stand-in for a model server: any OpenAI-compatible chat
	// completions endpoint will do (OpenAI, vLLM, llama.cpp, Ollama).
	// This one answers every request with the same memory update, in the
	// JSON the extraction asks for (extract.OutputSchema).
	model := fakeModel(`{"updates":[{
		"evidence": "I moved to Bergen",
		"subject": "mira", "attribute": "city",
		"current_value": null, "change": "new", "value": "Bergen",
		"valid_from": "2026-02-01"}]}`)
	defer model.Close()

	dir, err := os.MkdirTemp("", "sgam-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clock := &sgam.ManualClock{}
	clock.Set(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, filepath.Join(dir, "memory.db"), store.Options{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// The model client, the extractor that asks it, and the ingester in
	// front of both.
	client, err := llm.New(llm.Config{BaseURL: model.URL + "/v1", Model: "example-model"})
	if err != nil {
		log.Fatal(err)
	}
	in := ingest.New(st, extract.New(st, client).WithClock(clock))
	defer in.Close(ctx)

	// ModeNow extracts while the caller waits (ModeBackground leaves it
	// to the workers of package queue). The model proposes; sgam checks
	// that the quote is the episode's words and that it states the value,
	// and the ledger writes the fact with the episode as its source.
	res, err := in.Capture(ctx, sgam.Episode{Tenant: "acme", ID: "e1", Session: "chat-1",
		Content: "Hi, it's Mira. I moved to Bergen on February 1."}, ingest.ModeNow)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("extraction:", res.Record.Status)
	for _, a := range res.Record.Accepted {
		fmt.Printf("  %s.%s = %s from %s: %s\n", a.Subject, a.Attribute, a.Value, a.ValidFrom.Format(time.DateOnly), a.Outcome)
	}

	// Recall answers a question with the facts of the subjects it names,
	// at the instants it asks about (now, here), and the episodes that
	// support them; answer.Rendered is the same as a block for a prompt.
	answer, err := recall.New(st).WithClock(clock).Recall(ctx, recall.Query{Tenant: "acme", Question: "Where does Mira live?"})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range answer.Facts {
		fmt.Printf("fact: %s.%s = %s (%s), source %v\n", f.Subject, f.Attribute, f.Value, f.Status, f.Sources)
	}
	for _, e := range answer.Evidence {
		fmt.Printf("evidence: %s\n", e.EpisodeID)
	}
	// Output:
	// extraction: done
	//   mira.city = "Bergen" from 2026-02-01: written
	// fact: mira.city = "Bergen" (current), source [e1]
	// evidence: e1
}

// fakeModel serves answer as the reply of every chat completion request,
// in the OpenAI wire format.
func fakeModel(answer string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "example", "object": "chat.completion", "created": 0, "model": "example-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960},
		})
	}))
}
