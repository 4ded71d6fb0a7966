package cli_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeDev starts `sgam serve --dev` on a free port, calls it, and stops
// it with SIGTERM: it warns loudly about dev mode and exits cleanly.
func TestServeDev(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	child := exec.Command(os.Args[0], "--db", db, "--tenant", "acme", "serve", "--dev", "--addr", "127.0.0.1:0")
	child.Env = append(os.Environ(), "SGAM_CLI_CHILD=1")
	errs, err := child.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill()
	sc := bufio.NewScanner(errs)
	var addr string
	warned := false
	for addr == "" && sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		if msg, _ := line["msg"].(string); strings.HasPrefix(msg, "DEV MODE") {
			warned = true
		}
		if a, ok := line["addr"].(string); ok {
			addr = a
		}
	}
	require.True(t, warned, "dev mode is announced")
	require.NotEmpty(t, addr)
	res, err := http.Post("http://"+addr+"/v1/episodes", "application/json", strings.NewReader(`{"episode_id":"e1","content":"hi"}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.NoError(t, child.Process.Signal(syscall.SIGTERM))
	for sc.Scan() {
	}
	require.NoError(t, child.Wait(), "a graceful shutdown exits 0")
}
