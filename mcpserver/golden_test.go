package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
	"github.com/sgam-dev/sgam/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite the answers of testdata/*.txtar with what the server answers now")

// TestGolden replays each testdata/*.txtar over both transports, on the
// wire: its "client" section is the JSON-RPC a client sends, one message a
// line; its "stdio" section the exact lines ServeStdio answers them with,
// and its "http" section the exact answer of HTTPHandler to each line
// POSTed on its own: the status code, then the body (none for 202). Each
// transport starts on a fresh store of tenant acme, role write, with no
// schema.
//
// Nothing is normalised: the store's clock and the tools' default instant
// are fixed (goldenNow), fact ids count from 1 in a fresh store, the
// episode ids of remember and forget_value are derived from the call, and
// stdio is fed in lockstep (a line, then its answer) so that answers come
// in the order of the lines. A test that starts to differ on a rerun has
// found something that varies; do not paper over it.
//
// go test ./mcpserver -run TestGolden -update rewrites the answers.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			ar := parseTxtar(b)
			client, ok := ar.get("client")
			require.True(t, ok, "%s has no client section", path)
			lines := strings.Split(strings.TrimSuffix(client, "\n"), "\n")
			for _, tr := range []struct {
				section string
				run     func(*testing.T, mcpserver.Config, []string) []string
			}{{"stdio", goldenStdio}, {"http", goldenHTTP}} {
				got := strings.Join(tr.run(t, goldenConfig(t), lines), "\n") + "\n"
				if *update {
					ar.set(tr.section, got)
					continue
				}
				want, ok := ar.get(tr.section)
				if !ok {
					t.Errorf("%s has no %s section: run go test -run TestGolden -update", path, tr.section)
					continue
				}
				diffLines(t, path, tr.section, want, got)
			}
			if *update {
				require.NoError(t, os.WriteFile(path, ar.format(), 0o644))
			}
		})
	}
}

// goldenNow is the store's transaction time and the tools' now.
var goldenNow = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return goldenNow }

// faultSubject is a subject whose reads fail with an error that has no
// code: a fault of the server, which a tool answers only as "internal
// error".
const faultSubject = "fault-injected"

type faultyStore struct{ *sqlite.Store }

func (s faultyStore) History(ctx context.Context, k sgam.Key) ([]sgam.Fact, error) {
	if k.Subject == faultSubject {
		return nil, errors.New("disk on fire at /var/lib/sgam/memory.db")
	}
	return s.Store.History(ctx, k)
}

// TestInternalErrorIsLogged: what internal.txtar's "internal error" leaves
// out is in the server's log, with the tool.
func TestInternalErrorIsLogged(t *testing.T) {
	var log bytes.Buffer
	cfg := goldenConfig(t)
	cfg.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	var out bytes.Buffer
	in := strings.NewReader(stdioInitialize + "\n" + stdioInitialized + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"history","arguments":{"subject":"` + faultSubject + `","attribute":"city"}}}` + "\n")
	require.NoError(t, mcpserver.ServeStdio(context.Background(), cfg, in, &out))
	require.Contains(t, out.String(), `"text":"internal error"`)
	require.NotContains(t, out.String(), "disk on fire")
	require.Contains(t, log.String(), `"tool":"history"`)
	require.Contains(t, log.String(), "disk on fire at /var/lib/sgam/memory.db")
}

func goldenConfig(t *testing.T) mcpserver.Config {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqlite.Options{Clock: fixedClock{}})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return mcpserver.Config{Store: faultyStore{st}, Tenant: "acme", Role: sgam.RoleWrite, Clock: fixedClock{}, Version: "golden",
		Logger: slog.New(slog.DiscardHandler)}
}

// goldenStdio sends lines to ServeStdio one at a time, each once the
// answer to the one before has come (a notification has none), then ends
// the input, and returns every line ServeStdio wrote.
func goldenStdio(t *testing.T, cfg mcpserver.Config, lines []string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	served := make(chan error, 1)
	go func() {
		served <- mcpserver.ServeStdio(ctx, cfg, inR, outW)
		outW.Close()
	}()
	answers := make(chan string)
	go func() {
		defer close(answers)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				answers <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	var got []string
	next := func(after string) {
		t.Helper()
		select {
		case a, ok := <-answers:
			require.True(t, ok, "ServeStdio ended before answering %s", after)
			got = append(got, a)
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %s; answers so far:\n%s", after, strings.Join(got, "\n"))
		}
	}
	for _, line := range lines {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
		if answered(line) {
			next(line)
		}
	}
	require.NoError(t, inW.Close())
	for a := range answers { // anything more, up to the end
		got = append(got, a)
	}
	require.NoError(t, <-served)
	return got
}

// answered reports whether a line is answered: all are but a notification
// (a message with a method and no id) and a blank line.
func answered(line string) bool {
	var m map[string]json.RawMessage
	if strings.TrimSpace(line) == "" {
		return false
	}
	if json.Unmarshal([]byte(line), &m) != nil {
		return true
	}
	_, method := m["method"]
	_, id := m["id"]
	return !method || id
}

// goldenHTTP POSTs each line on its own to HTTPHandler, as a client of
// protocol version 2025-06-18 does after initializing, and returns each
// answer as one line: the status code, then the body without its final
// line ending, if any.
func goldenHTTP(t *testing.T, cfg mcpserver.Config, lines []string) []string {
	t.Helper()
	h := mcpserver.HTTPHandler(func(*http.Request) (mcpserver.Config, error) { return cfg, nil }, 8<<20)
	var got []string
	for _, line := range lines {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(line))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		answer := strconv.Itoa(rec.Code)
		if body := strings.TrimSuffix(rec.Body.String(), "\n"); body != "" {
			answer += " " + body
		}
		got = append(got, answer)
	}
	return got
}

// diffLines reports the lines of got that differ from want.
func diffLines(t *testing.T, path, section, want, got string) {
	t.Helper()
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var report strings.Builder
	for i := range max(len(w), len(g)) {
		wl, gl := "(none)", "(none)"
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&report, "line %d:\n want %s\n  got %s\n", i+1, wl, gl)
		}
	}
	t.Errorf("%s: the %s answers differ (go test -run TestGolden -update rewrites them):\n%s", path, section, report.String())
}

// txtar is a txtar archive (the format of golang.org/x/tools/txtar, which
// this module does not require): a comment, then files, each after a
// marker line "-- name --".
type txtar struct {
	comment string
	files   []txtarFile
}

type txtarFile struct{ name, data string }

func parseTxtar(b []byte) txtar {
	var ar txtar
	for line := range strings.Lines(string(b)) {
		if name, ok := txtarMarker(line); ok {
			ar.files = append(ar.files, txtarFile{name: name})
		} else if n := len(ar.files); n > 0 {
			ar.files[n-1].data += line
		} else {
			ar.comment += line
		}
	}
	return ar
}

// txtarMarker returns the name of a marker line.
func txtarMarker(line string) (string, bool) {
	name, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "-- ")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, " --")
	name = strings.TrimSpace(name)
	return name, ok && name != ""
}

func (ar *txtar) get(name string) (string, bool) {
	for _, f := range ar.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

func (ar *txtar) set(name, data string) {
	for i, f := range ar.files {
		if f.name == name {
			ar.files[i].data = data
			return
		}
	}
	ar.files = append(ar.files, txtarFile{name: name, data: data})
}

func (ar *txtar) format() []byte {
	var b bytes.Buffer
	b.WriteString(ar.comment)
	for _, f := range ar.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
