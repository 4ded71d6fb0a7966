package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// EmbedCall is one request the server's /v1/embeddings received.
type EmbedCall struct {
	Model      string
	Input      []string
	Dimensions int // asked for; 0 when none
	Header     http.Header
}

// EmbedReply is a scripted answer of /v1/embeddings (FaultEmbed).
type EmbedReply struct {
	// Status, when set, answers an HTTP error with this status, and
	// RetryAfter as its Retry-After header when set.
	Status     int
	RetryAfter string
	// Vectors, when set, answers this many vectors, whatever the count of
	// texts (a server that lost one).
	Vectors int
	// Dims, when set, answers vectors of this dimension.
	Dims int
	// Body, when set, is answered as it is (JSON with a null in a
	// vector, say).
	Body string
	// Delay holds the answer back.
	Delay time.Duration
}

// Embedding is the vector the fake answers for text under model: a
// hashed bag of its lowercase words (letters and digits), each word adding
// ±1 to one of dims dimensions by its hash with the model's name, then
// scaled to length 1. Texts that share words are near; another model puts
// the same words elsewhere. A text without a word gets a dimension of its
// own hash.
func Embedding(model, text string, dims int) []float32 {
	v := make([]float64, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		words = []string{text}
	}
	for _, w := range words {
		h := fnv.New64a()
		h.Write([]byte(model + "\x00" + w))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(dims)] += sign
	}
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 { // every word cancelled out
		v[0], sum = 1, 1
	}
	out := make([]float32, dims)
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(sum))
	}
	return out
}

// FaultEmbed makes the next len(replies) embedding requests answer these
// replies, in order.
func (s *Server) FaultEmbed(replies ...EmbedReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFaults = append(s.embedFaults, replies...)
}

// EmbedCalls returns every embedding request received so far (as
// CallCount, not those whose key was refused).
func (s *Server) EmbedCalls() []EmbedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbedCall(nil), s.embedCalls...)
}

// EmbedCallCount returns how many embedding requests were received.
func (s *Server) EmbedCallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.embedCalls)
}

// EmbedInputCount returns how many texts the embedding requests carried.
func (s *Server) EmbedInputCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.embedCalls {
		n += len(c.Input)
	}
	return n
}

type embedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embedRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.refuse(w, "body is not JSON: %v", err)
		return
	}
	var input []string
	if err := json.Unmarshal(req.Input, &input); err != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			s.refuse(w, "input is neither a string nor a list of strings: %s", req.Input)
			return
		}
		input = []string{one}
	}
	switch {
	case req.Model == "":
		s.refuse(w, "no model")
		return
	case len(input) == 0:
		s.refuse(w, "no input")
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float":
		s.refuse(w, "encoding_format %q: only float is served", req.EncodingFormat)
		return
	}
	for i, t := range input {
		if t == "" {
			s.refuse(w, "input[%d] is empty", i)
			return
		}
	}
	s.mu.Lock()
	s.embedCalls = append(s.embedCalls, EmbedCall{Model: req.Model, Input: input, Dimensions: req.Dimensions, Header: r.Header.Clone()})
	if s.EmbedModel != "" && req.Model != s.EmbedModel {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("model %q not found", req.Model), "type": "invalid_request_error"}})
		return
	}
	var rep EmbedReply
	if len(s.embedFaults) > 0 {
		rep, s.embedFaults = s.embedFaults[0], s.embedFaults[1:]
	}
	dims := s.EmbedDims
	s.mu.Unlock()

	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case rep.Status != 0:
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		w.WriteHeader(rep.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("scripted %d", rep.Status), "type": "server_error"}})
		return
	case rep.Body != "":
		_, _ = w.Write([]byte(rep.Body))
		return
	}
	switch {
	case rep.Dims > 0:
		dims = rep.Dims
	case req.Dimensions > 0:
		dims = req.Dimensions
	case dims <= 0:
		dims = 64
	}
	n := len(input)
	if rep.Vectors > 0 {
		n = rep.Vectors
	}
	data := make([]any, n)
	words := 0
	for i := range n {
		text := input[i%len(input)]
		words += len(strings.Fields(text))
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Embedding(req.Model, text, dims)}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": words, "total_tokens": words},
	})
}
