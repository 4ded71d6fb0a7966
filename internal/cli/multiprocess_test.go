package cli_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/sqlite"
)

// TestSQLiteSeveralProcesses runs, for a bounded time, a server, three CLI
// writer loops and a CLI reader loop as separate OS processes on one SQLite
// file, with HTTP writers and readers against the server. Every process
// must succeed every time, every acknowledged write must be stored, and the
// file must pass sgam check and PRAGMA integrity_check. (A process that
// closed a descriptor of the -shm file dropped SQLite's locks on it, and the
// next process rebuilt the WAL-index under the live one: disk I/O errors,
// a malformed database, and writes reported failed that were committed.)
func TestSQLiteSeveralProcesses(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "shared.db")
	const tenant = "acme"
	r := sgamRun(t, "", "--db", db, "init")
	require.Equal(t, 0, r.code, r.stderr)

	server := exec.Command(os.Args[0], "--db", db, "--tenant", tenant, "serve", "--dev", "--addr", "127.0.0.1:0", "--expire-every", "0", "--rate-limit", "0")
	server.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	logs, err := server.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, server.Start())
	defer server.Process.Kill()
	addrc := make(chan string, 1)
	serverErrors := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if a, ok := line["addr"].(string); ok {
				addrc <- a
			}
			if line["level"] == "ERROR" {
				select {
				case serverErrors <- sc.Text():
				default:
				}
			}
		}
		close(serverErrors)
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(time.Minute):
		t.Fatal("the server did not announce its address")
	}

	// The same bounded time for every loop; each loop finishes the call it
	// is in.
	deadline := time.Now().Add(6 * time.Second)
	var mu sync.Mutex
	var failures []string
	acked := map[sgam.Key]string{} // acknowledged writes, by key: the value
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	ack := func(subject, attribute, value string) {
		mu.Lock()
		acked[sgam.Key{Tenant: tenant, Subject: subject, Attribute: attribute}] = value
		mu.Unlock()
	}
	cli := func(args ...string) (int, string) {
		c := exec.Command(os.Args[0], append([]string{"--db", db, "--tenant", tenant}, args...)...)
		c.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
		out, _ := c.CombinedOutput()
		return c.ProcessState.ExitCode(), string(out)
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			subject := fmt.Sprintf("cli%d", w)
			for i := 0; time.Now().Before(deadline); i++ {
				attr, value := fmt.Sprintf("a%d", i), fmt.Sprintf(`"v%d"`, i)
				code, out := cli("assert", subject, attr, value, "--valid-from", "2026-06-01T09:00:00Z", "--source", "e1")
				if code != 0 {
					fail("assert %s.%s: exit %d: %s", subject, attr, code, out)
					continue
				}
				ack(subject, attr, value)
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(deadline) {
			for _, args := range [][]string{{"get", "cli0", "a0"}, {"state", "http0"}, {"history", "cli1", "a1"}} {
				if code, out := cli(args...); code != 0 {
					fail("%s: exit %d: %s", strings.Join(args, " "), code, out)
				}
			}
		}
	})
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 2 {
		wg.Go(func() {
			subject := fmt.Sprintf("http%d", w)
			for i := 0; time.Now().Before(deadline); i++ {
				attr, value := fmt.Sprintf("a%d", i%50), fmt.Sprintf("%d", i)
				body := fmt.Sprintf(`{"subject":%q,"attribute":%q,"value":%s,"valid_from":"2026-06-01T09:%02d:%02dZ","source":"e2"}`,
					subject, attr, value, i/3000, i/50%60)
				res, err := client.Post("http://"+addr+"/v1/facts", "application/json", strings.NewReader(body))
				if err != nil {
					fail("POST /v1/facts: %v", err)
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					fail("POST /v1/facts: %d %s", res.StatusCode, b)
					continue
				}
				ack(subject, attr, value)
			}
		})
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				res, err := client.Get(fmt.Sprintf("http://%s/v1/subjects/cli%d/attributes/a%d", addr, i%3, i%20))
				if err != nil {
					fail("GET: %v", err)
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					fail("GET: %d %s", res.StatusCode, b)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, server.Process.Signal(syscall.SIGTERM))
	require.NoError(t, server.Wait(), "the server exits cleanly")
	for line := range serverErrors {
		fail("server logged: %s", line)
	}
	require.Empty(t, failures, "every process succeeds every time")
	require.Greater(t, len(acked), 20, "the loops made progress")
	t.Logf("%d acknowledged writes", len(acked))

	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{MustExist: true})
	require.NoError(t, err)
	for k, want := range acked {
		f, err := st.Get(ctx, k, sgam.At{})
		require.NoError(t, err)
		require.NotNil(t, f, "acknowledged write %s is stored", k)
		require.JSONEq(t, want, string(f.Value), k.String())
	}
	v, err := st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, v, "check is clean")
	require.NoError(t, st.Close())

	raw, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	defer raw.Close()
	var integrity string
	require.NoError(t, raw.QueryRow("PRAGMA integrity_check").Scan(&integrity))
	require.Equal(t, "ok", integrity)
}
