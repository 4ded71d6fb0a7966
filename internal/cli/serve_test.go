package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/cli"
)

// TestServeDev starts `sgam serve --dev` on a free port, calls it, and stops
// it with SIGTERM: it warns loudly about dev mode, runs expiry once at
// start (--expire-every defaults to 1h) and exits cleanly.
func TestServeDev(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	child := exec.Command(os.Args[0], "--db", db, "--tenant", "acme", "serve", "--dev", "--addr", "127.0.0.1:0")
	child.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	errs, err := child.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill()
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				line = map[string]any{"not_json": sc.Text()}
			}
			lines <- line
		}
	}()
	var addr string
	warned, expired := false, false
	timeout := time.After(time.Minute)
	for addr == "" || !expired {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the server ended early")
			require.NotContains(t, line, "not_json", "every log line is JSON")
			msg, _ := line["msg"].(string)
			if strings.HasPrefix(msg, "DEV MODE") {
				warned = true
			}
			if a, ok := line["addr"].(string); ok {
				addr = a
			}
			if msg == "expiry" {
				expired = true
				require.Equal(t, float64(0), line["episodes_deleted"], "no schema: nothing expires")
			}
		case <-timeout:
			t.Fatalf("no address or no expiry run logged (addr %q, expiry %v)", addr, expired)
		}
	}
	require.True(t, warned, "dev mode is announced")
	res, err := http.Post("http://"+addr+"/v1/episodes", "application/json", strings.NewReader(`{"episode_id":"e1","content":"hi"}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	res, err = http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	var metrics strings.Builder
	_, err = bufio.NewReader(res.Body).WriteTo(&metrics)
	res.Body.Close()
	require.NoError(t, err)
	require.Contains(t, metrics.String(), `sgam_store_operation_duration_seconds_count{operation="AddEpisode",outcome="ok"} 1`)
	require.Contains(t, metrics.String(), `sgam_expiry_runs_total{outcome="ok"} 1`)

	// A long write is in flight when SIGTERM arrives: it finishes, whole.
	const n = 3000 // about 0.3 MB; half a second to replay, several under -race (the timeout is 30 s)
	var script strings.Builder
	for i := range n {
		fmt.Fprintf(&script, `{"op":"assert","subject":"s%d","attribute":"a","value":%d,"valid_from":"2026-06-01T09:00:00Z","source":"e1"}`+"\n", i, i)
	}
	replayed := make(chan map[string]any, 1)
	go func() {
		res, err := http.Post("http://"+addr+"/v1/replay", "application/x-ndjson", strings.NewReader(script.String()))
		if err != nil {
			replayed <- map[string]any{"error": err.Error()}
			return
		}
		defer res.Body.Close()
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		body["status"] = res.StatusCode
		replayed <- body
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, child.Process.Signal(syscall.SIGTERM))
	var order []string
	for line := range lines {
		if msg, _ := line["msg"].(string); strings.HasPrefix(msg, "shutting down") || line["route"] == "POST /v1/replay" {
			order = append(order, msg)
		}
	}
	require.NoError(t, child.Wait(), "a graceful shutdown exits 0")
	require.Equal(t, []string{"shutting down: finishing requests in flight", "request"}, order,
		"the replay was in flight at SIGTERM and finished after it")
	body := <-replayed
	require.Equal(t, 200, body["status"], body)
	require.Equal(t, float64(n), body["lines"])
	require.Equal(t, float64(0), body["failed"])
	r := sgamRun(t, "", "--db", db, "--tenant", "acme", "get", fmt.Sprintf("s%d", n-1), "a")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprint(n-1), "the last write of the replay is stored")
}

// TestServeExpireEveryFlag: --expire-every is 0 (off) or at least a second.
func TestServeExpireEveryFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	for _, v := range []string{"10ms", "-1h"} {
		r := sgamRun(t, "", "--db", db, "serve", "--dev", "--addr", "127.0.0.1:0", "--expire-every", v)
		require.Equal(t, cli.ExitUsage, r.code, v)
		require.Contains(t, r.stderr, "--expire-every", v)
	}
	r := sgamRun(t, "", "serve", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "--expire-every")
	require.Contains(t, r.stdout, "sgam_store_operation_duration_seconds")
}

// TestServeRecallConcurrencyFlag: --recall-concurrency is a count of
// recalls, 0 for no bound; a negative one is refused by name.
func TestServeRecallConcurrencyFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, "", "--db", db, "serve", "--dev", "--addr", "127.0.0.1:0", "--recall-concurrency", "-1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "sgam: --recall-concurrency: must not be negative")
	r = sgamRun(t, "", "serve", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "--recall-concurrency")
}

// TestServeDevListensOnlyOnLoopback: --dev serves without keys, so it
// refuses an --addr that is not loopback unless --dev-allow-remote is
// given too.
func TestServeDevListensOnlyOnLoopback(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		r := sgamRun(t, "", "--db", db, "serve", "--dev", "--addr", addr)
		require.Equal(t, cli.ExitUsage, r.code, addr)
		require.Contains(t, r.stderr, "sgam: --addr:", addr)
		require.Contains(t, r.stderr, "--dev-allow-remote", addr)
	}
	r := sgamRun(t, "", "--db", db, "serve", "--dev-allow-remote", "--addr", "127.0.0.1:0")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "sgam: --dev-allow-remote: only goes with --dev")
	// Loopback addresses serve (until the context ends), and so does any
	// address with --dev-allow-remote.
	for _, args := range [][]string{{"--addr", "127.0.0.1:0"}, {"--addr", "[::1]:0"}, {"--addr", "localhost:0"},
		{"--addr", "0.0.0.0:0", "--dev-allow-remote"}} {
		// Serve until it says it serves (the store's migrations may take a
		// while on a loaded machine), then stop it.
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- cli.Main(ctx, append([]string{"--db", db, "serve", "--dev", "--expire-every", "0"}, args...), strings.NewReader(""), &out, &errb)
		}()
		var code int
		select {
		case code = <-done:
		case <-waitFor(ctx, &errb, `"msg":"serving"`):
			cancel()
			code = <-done
		}
		cancel()
		if strings.Contains(errb.String(), "cannot listen") && args[1] == "[::1]:0" {
			continue // no IPv6 here
		}
		require.Equal(t, 0, code, "%v: %s", args, errb.String())
		require.Contains(t, errb.String(), `"msg":"serving"`, args)
		require.Contains(t, errb.String(), "DEV MODE", args)
	}
	r = sgamRun(t, "", "serve", "--help")
	require.Contains(t, r.stdout, "--dev-allow-remote")
}

// waitFor returns a channel closed once w holds text, or after a minute
// (the caller's checks then fail with what w holds); it stops looking when
// ctx ends.
func waitFor(ctx context.Context, w *syncBuffer, text string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
			if strings.Contains(w.String(), text) {
				return
			}
		}
	}()
	return ch
}
