// Package llmtest is a scripted fake of an OpenAI-compatible chat
// completions server, for tests: it checks every request (model, messages,
// the response format asked for, a schema that never has a tenant or
// source field), answers what the test scripted for the episode in the
// prompt, counts calls, and injects faults: error statuses with
// Retry-After, slow answers, malformed JSON, <think> blocks.
//
// It serves /v1/embeddings too (embed.go), with deterministic vectors of
// the words of each text, counted apart from the chat calls, and GET
// /v1/models, the listing (Listed, ModelsStatus).
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request the server received.
type Call struct {
	Model string
	// Mode is json_schema, json_object or tools: what the request asked.
	Mode     string
	System   string
	User     string
	Schema   json.RawMessage // the schema asked for (json_object: none)
	Header   http.Header
	BodyJSON json.RawMessage // the whole request body
}

// Episode returns the content of the episode the prompt is about: the text
// between the prompt's "<episode" line and "</episode>" (see
// extract.Prompt), or "" when there is none.
func (c Call) Episode() string {
	_, rest, ok := strings.Cut(c.User, "<episode")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, ">\n")
	if !ok {
		return ""
	}
	body, _, ok := strings.Cut(rest, "\n</episode>")
	if !ok {
		return ""
	}
	return body
}

// Reply is a scripted answer.
type Reply struct {
	// Updates is answered as {"updates": Updates}, unless Content is set.
	Updates []Update
	// Content is answered as it is (malformed JSON, say).
	Content string
	// Think is put before the answer as a <think> block.
	Think string
	// Status, when set, answers an HTTP error with this status, and
	// RetryAfter as its Retry-After header when set.
	Status     int
	RetryAfter string
	// Delay holds the answer back.
	Delay time.Duration
	// Usage, when set, is answered as the usage object, as it is (a
	// server's count, right or wrong); by default the fake counts a
	// quarter of the bytes of the prompt and of the answer.
	Usage json.RawMessage
	// FinishReason is answered as the choice's finish_reason (default
	// "stop"; "length" is an answer cut at max_tokens).
	FinishReason string
}

// Update is one MemoryUpdate as a model writes it. Fields are in the order
// the schema asks; Extra adds fields the schema does not have (a smuggled
// "tenant", say).
type Update struct {
	Evidence     string
	Subject      string
	Attribute    string
	CurrentValue *string
	Change       string
	Value        *string
	ValidFrom    *string
	Extra        map[string]any
}

// MarshalJSON writes the fields in schema order, then Extra's.
func (u Update) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	field := func(name string, v any) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		j, _ := json.Marshal(v)
		b.Write(k)
		b.WriteByte(':')
		b.Write(j)
	}
	field("evidence", u.Evidence)
	field("subject", u.Subject)
	field("attribute", u.Attribute)
	field("current_value", u.CurrentValue)
	field("change", u.Change)
	field("value", u.Value)
	field("valid_from", u.ValidFrom)
	for k, v := range u.Extra {
		field(k, v)
	}
	return []byte("{" + b.String() + "}"), nil
}

// S makes a *string of s, for Update's nullable fields.
func S(s string) *string { return &s }

// Script answers a call. It runs on the server's goroutines, several at
// once.
type Script func(Call) Reply

// ByEpisode answers by the episode content in the prompt: the reply keyed
// by it exactly, else an empty list of updates.
func ByEpisode(replies map[string]Reply) Script {
	return func(c Call) Reply {
		if r, ok := replies[c.Episode()]; ok {
			return r
		}
		return Reply{Updates: []Update{}}
	}
}

// Server is the fake. Its URL is the base URL to configure (".../v1").
type Server struct {
	URL string
	// Model is the model name requests must ask for.
	Model string
	// APIKey, when set, must come as the bearer token; when empty, no
	// Authorization header may come.
	APIKey string

	// EmbedDims is the dimension of the vectors /v1/embeddings answers
	// when a request asks for none (default 64).
	EmbedDims int
	// EmbedModel, when set, is the model embedding requests must ask for
	// (any other is answered 404, as a server that does not have it
	// would); when empty, any model is served.
	EmbedModel string
	// ErrorMessage is the message of a scripted error status (default
	// "scripted STATUS"): servers often quote the request in theirs.
	ErrorMessage string
	// Listed, when set, is what GET /v1/models lists (default Model, and
	// EmbedModel when set); ModelsStatus, when set, answers that listing
	// with this HTTP error status instead (503: a server still loading,
	// 404: one without the listing).
	Listed       []string
	ModelsStatus int

	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	script Script
	faults []Reply
	calls  []Call

	embedFaults []EmbedReply
	embedCalls  []EmbedCall
}

// New starts a fake serving script, closed when the test ends.
func New(t testing.TB, model string, script Script) *Server {
	s := &Server{Model: model, t: t, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Fault makes the next len(replies) calls answer these replies, in order,
// whatever the script says.
func (s *Server) Fault(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, replies...)
}

// Calls returns every call received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount returns how many calls were received.
func (s *Server) CallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Strict     bool            `json:"strict"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

func (s *Server) refuse(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.t.Errorf("llmtest: bad request: %s", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		if s.authorized(w, r) {
			s.serveModels(w)
		}
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/embeddings" {
		s.refuse(w, "%s %s: only POST /v1/chat/completions and /v1/embeddings, and GET /v1/models, are served", r.Method, r.URL.Path)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	if r.URL.Path == "/v1/embeddings" {
		s.serveEmbeddings(w, r)
		return
	}
	req, c, ok := readCall(s, w, r, s.check)
	if !ok {
		return
	}

	rep, ok := s.reply(w, r, c)
	if !ok {
		return
	}
	content := rep.Content
	if content == "" {
		updates := rep.Updates
		if updates == nil {
			updates = []Update{}
		}
		b, _ := json.Marshal(map[string]any{"updates": updates})
		content = string(b)
	}
	tool := ""
	if c.Mode == "tools" {
		tool = req.Tools[0].Function.Name
	}
	writeCompletion(w, c, rep, content, tool)
}

// reply records c and returns the reply that answers it: the next fault,
// else the script's. It waits out the reply's Delay, and answers a
// scripted error status itself: ok is false then, or when the request
// went away while it waited.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, c Call) (rep Reply, ok bool) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	fault := len(s.faults) > 0
	if fault {
		rep, s.faults = s.faults[0], s.faults[1:]
	}
	s.mu.Unlock()
	if !fault {
		// Outside the lock: a script that takes its time (a test's hook)
		// holds up its own call, not the others.
		rep = s.script(c)
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return rep, false
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Status != 0 {
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		w.WriteHeader(rep.Status)
		msg := fmt.Sprintf("scripted %d", rep.Status)
		if s.ErrorMessage != "" {
			msg = s.ErrorMessage
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}})
		return rep, false
	}
	return rep, true
}

// writeCompletion answers content as a chat completion of c: after rep's
// <think> block, as the call of tool when it is set, with rep's usage
// (by default a quarter of the bytes of the prompt and of the answer) and
// finish reason.
func writeCompletion(w http.ResponseWriter, c Call, rep Reply, content, tool string) {
	if rep.Think != "" {
		content = "<think>" + rep.Think + "</think>\n" + content
	}
	msg := map[string]any{"role": "assistant", "content": content}
	if tool != "" {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": tool, "arguments": content}}}
	}
	prompt := (len(c.System) + len(c.User)) / 4
	var usage any = map[string]any{"prompt_tokens": prompt, "completion_tokens": len(content) / 4, "total_tokens": prompt + len(content)/4}
	if rep.Usage != nil {
		usage = rep.Usage
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": c.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage,
	})
}

// serveModels answers GET /v1/models as OpenAI does.
func (s *Server) serveModels(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	status, listed := s.ModelsStatus, s.Listed
	s.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("scripted %d", status), "type": "server_error"}})
		return
	}
	if listed == nil {
		listed = []string{s.Model}
		if s.EmbedModel != "" {
			listed = append(listed, s.EmbedModel)
		}
	}
	data := make([]any, len(listed))
	for i, m := range listed {
		data[i] = map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "llmtest"}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// authorized checks the bearer token as a real server does, and answers
// when it is refused.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	switch {
	case s.APIKey == "" && auth != "":
		s.refuse(w, "an Authorization header came, and no key was configured")
		return false
	case s.APIKey != "" && auth != "Bearer "+s.APIKey:
		// What a real server answers; not a fault of the code under test.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
		return false
	}
	return true
}

// check validates a request as a strict server would, and returns it as a
// Call.
func (s *Server) check(req chatRequest) (Call, error) {
	c := Call{Model: req.Model}
	if req.Model != s.Model {
		return c, fmt.Errorf("model %q, want %q", req.Model, s.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		return c, fmt.Errorf("want a system and a user message, got %d messages", len(req.Messages))
	}
	c.System, c.User = req.Messages[0].Content, req.Messages[1].Content
	switch {
	case len(req.Tools) > 0:
		c.Mode = "tools"
		f := req.Tools[0].Function
		if !strings.Contains(string(req.ToolChoice), f.Name) {
			return c, fmt.Errorf("tool_choice %s does not force the tool %s", req.ToolChoice, f.Name)
		}
		if !f.Strict {
			return c, fmt.Errorf("the tool is not strict")
		}
		c.Schema = f.Parameters
	case req.ResponseFormat == nil:
		return c, fmt.Errorf("no response_format and no tools")
	case req.ResponseFormat.Type == "json_schema":
		c.Mode = "json_schema"
		js := req.ResponseFormat.JSONSchema
		if js == nil || !js.Strict {
			return c, fmt.Errorf("json_schema without strict: true")
		}
		c.Schema = js.Schema
	case req.ResponseFormat.Type == "json_object":
		c.Mode = "json_object"
		if !strings.Contains(c.System, "JSON Schema") {
			return c, fmt.Errorf("json_object mode without the schema in the prompt")
		}
		return c, nil
	default:
		return c, fmt.Errorf("response_format type %q", req.ResponseFormat.Type)
	}
	var sch any
	if err := json.Unmarshal(c.Schema, &sch); err != nil {
		return c, fmt.Errorf("schema: %v", err)
	}
	return c, checkStrict(sch, "$")
}

// checkStrict enforces what strict structured output requires of a
// schema, and that it has no field for the tenant or the source: the model
// never chooses them.
func checkStrict(v any, at string) error {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			if v["additionalProperties"] != false {
				return fmt.Errorf("%s: an object without additionalProperties: false", at)
			}
			req, _ := v["required"].([]any)
			if len(req) != len(props) {
				return fmt.Errorf("%s: every property must be required in strict mode", at)
			}
			for name, p := range props {
				if name == "tenant" || name == "tenant_id" || name == "source" || name == "source_episode" {
					return fmt.Errorf("%s: the schema has a %q field", at, name)
				}
				if err := checkStrict(p, at+"."+name); err != nil {
					return err
				}
			}
		}
		if items, ok := v["items"]; ok {
			return checkStrict(items, at+"[]")
		}
	}
	return nil
}

// readCall reads a request body of type R, checks it as a strict server
// would and records its headers and body on the call; a body that fails
// is refused here (ok false).
func readCall[R any](s *Server, w http.ResponseWriter, r *http.Request, check func(R) (Call, error)) (req R, c Call, ok bool) {
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.refuse(w, "body is not JSON: %v", err)
		return req, c, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.refuse(w, "body: %v", err)
		return req, c, false
	}
	c, err := check(req)
	if err != nil {
		s.refuse(w, "%v", err)
		return req, c, false
	}
	c.Header, c.BodyJSON = r.Header.Clone(), body
	return req, c, true
}
