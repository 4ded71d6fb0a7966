package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TextServer is a fake of a server answering plain text chat completions
// (llm.Client.Text: an evaluation's questions and a judge's verdicts): it
// refuses a request that asks for JSON (a response_format, tools) or
// lacks a system and a user message or max_tokens, as Server refuses one
// that does not ask for JSON. A call's Mode is "text"; a reply's Content
// is the answer's text (Updates are not used), and Think, Status,
// RetryAfter, Delay, Usage and FinishReason work as Server's. It serves
// several models, as one server with an answering model and a judge
// does, and /v1/embeddings and GET /v1/models as Server does.
type TextServer struct {
	*Server
	// Models are the models a request may name; Models[0] is Server.Model.
	Models []string
}

// NewText starts a fake of plain text answers serving script, for the
// models named (at least one), closed when the test ends.
func NewText(t testing.TB, script Script, models ...string) *TextServer {
	if len(models) == 0 {
		t.Fatal("llmtest: NewText needs a model")
	}
	s := &TextServer{Server: &Server{Model: models[0], t: t, script: script, Listed: models}, Models: models}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveText))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

type textRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	MaxTokens      *int            `json:"max_tokens"`
}

func (s *TextServer) serveText(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		if s.authorized(w, r) {
			s.serveModels(w)
		}
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		if s.authorized(w, r) {
			s.serveEmbeddings(w, r)
		}
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
		s.refuse(w, "%s %s: only POST /v1/chat/completions and /v1/embeddings, and GET /v1/models, are served", r.Method, r.URL.Path)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	_, c, ok := readCall(s.Server, w, r, s.checkText)
	if !ok {
		return
	}

	rep, ok := s.reply(w, r, c)
	if !ok {
		return
	}
	writeCompletion(w, c, rep, rep.Content, "")
}

// checkText validates a plain text request as a strict server would.
func (s *TextServer) checkText(req textRequest) (Call, error) {
	c := Call{Model: req.Model, Mode: "text"}
	switch {
	case !slices.Contains(s.Models, req.Model):
		return c, fmt.Errorf("model %q, want one of %q", req.Model, s.Models)
	case len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user":
		return c, fmt.Errorf("want a system and a user message, got %d messages", len(req.Messages))
	case req.Messages[1].Content == "":
		return c, fmt.Errorf("the user message is empty")
	case len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null":
		return c, fmt.Errorf("a text request with a response_format %s", req.ResponseFormat)
	case len(req.Tools) > 0 && string(req.Tools) != "null" || len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null":
		return c, fmt.Errorf("a text request with tools")
	case req.MaxTokens == nil || *req.MaxTokens <= 0:
		return c, fmt.Errorf("no max_tokens: an answer could run away")
	}
	c.System, c.User = req.Messages[0].Content, req.Messages[1].Content
	return c, nil
}
