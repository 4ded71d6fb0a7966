package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestControlBytesAreEscaped: an episode whose content sets the
// terminal's title (ESC ] 0 ; … BEL), clears its screen (ESC [ 2 J) or
// hides a C1 CSI is printed with those escaped, in every text output;
// JSON output says the same content exactly.
func TestControlBytesAreEscaped(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	const content = "Mira lives in Oslo.\x1b]0;pwned\x07\x1b[2J\r\u009b31m done"
	r := sgamRun(t, "", "--db", db, "--tenant", "acme", "episode", "add", "--id", "e1", "--content", content)
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "assert", "mira", "city", `"Oslo\u001b[2J"`, "--valid-from", "2026-06-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	for _, args := range [][]string{
		{"episode", "show", "e1"},
		{"episode", "list"},
		{"recall", "Where does Mira live?"},
		{"get", "mira", "city"},
		{"history", "mira", "city"},
		{"trace", "1"},
	} {
		r := sgamRun(t, "", append([]string{"--db", db, "--tenant", "acme"}, args...)...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b"} {
			require.NotContains(t, r.stdout, bad, "%v", args)
		}
		require.Contains(t, r.stdout, "Oslo", "%v", args)
	}
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "--json", "episode", "show", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "\u009b")
	var shown struct {
		Content string `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Equal(t, content, shown.Content, "the JSON holds the content exactly")
	require.True(t, strings.HasPrefix(shown.Content, "Mira"))
}
