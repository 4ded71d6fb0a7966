package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/cli"
)

// TestContentFileErrorsNameIt: the text of --content-file that breaks a
// rule names --content-file, not --content.
func TestContentFileErrorsNameIt(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	big := filepath.Join(dir, "big.txt")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", sgam.DefaultMaxContentBytes+1)), 0o644))
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("caf\xe9"), 0o644))
	for _, c := range []struct {
		args  []string
		stdin string
		says  string
	}{
		{[]string{"--content-file", big}, "", "--content-file: is more than 1048576 bytes"},
		{[]string{"--content-file", "-"}, strings.Repeat("x", sgam.DefaultMaxContentBytes+1), "--content-file: is more than 1048576 bytes"},
		{[]string{"--content-file", bad}, "", "--content-file: is not valid UTF-8"},
		{[]string{"--content-file", "-"}, "a\x00b", "--content-file: contains the character U+0000"},
		{[]string{"--content-file", filepath.Join(dir, "missing.txt")}, "", "--content-file: open"},
	} {
		r := sgamRun(t, c.stdin, append([]string{"--db", db, "episode", "add"}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.says, c.args)
	}
	r := sgamRun(t, "", "--db", db, "episode", "add", "--content", strings.Repeat("x", sgam.DefaultMaxContentBytes+1))
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "sgam: --content: is 1048577 bytes")
	r = sgamRun(t, "hello", "--db", db, "episode", "add", "--id", "e1", "--content-file", "-")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestImportErrorsNameTheLine: an import's error names the line and the
// field of the input, never a flag of the command line.
func TestImportErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	r := sgamRun(t, "", "--db", src, "assert", "mira", "city", `"Oslo"`, "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	dump := filepath.Join(dir, "dump.jsonl")
	r = sgamRun(t, "", "--db", src, "export", "--out", dump)
	require.Equal(t, 0, r.code, r.stderr)
	raw, err := os.ReadFile(dump)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 3, "header, episode, fact")
	for i, c := range []struct {
		line     int
		old, new string // the edit of that line
		says     string
	}{
		{3, `"source":"e1"`, `"source":"bad id"`, `line 3: source: "bad id" may hold only`},
		{3, `"subject":"mira"`, `"subject":"mira","subject":"kai"`, "line 3: subject: is given twice"},
		{3, `"value":"Oslo"`, `"value":{"a":1,"a":2}`, `line 3: value: holds the key "a" twice`},
		{3, `"value":"Oslo"`, `"value":"Os\ud800lo"`, "line 3: value: holds"},
		{3, `"subject":"mira"`, `"subject":"mi\u202era"`, "line 3: subject:"},
		{2, `"content":""`, `"content":"caf\ud800"`, "line 2: content:"},
	} {
		edited := append([]string(nil), lines...)
		edited[c.line-1] = strings.Replace(edited[c.line-1], c.old, c.new, 1)
		bad := filepath.Join(dir, "bad.jsonl")
		require.NoError(t, os.WriteFile(bad, []byte(strings.Join(edited, "\n")+"\n"), 0o644))
		r := sgamRun(t, "", "--db", filepath.Join(dir, "dst"+string(rune('a'+i))+".db"), "import", bad)
		require.Equal(t, cli.ExitUsage, r.code, "%s: %s", c.says, r.stderr)
		require.Contains(t, r.stderr, c.says)
		require.NotContains(t, r.stderr, "--source")
		require.NotContains(t, r.stderr, "SUBJECT")
	}
	// A fact whose episode is missing names the line too.
	noEpisode := filepath.Join(dir, "noep.jsonl")
	require.NoError(t, os.WriteFile(noEpisode, []byte(lines[0]+"\n"+lines[2]+"\n"), 0o644))
	r = sgamRun(t, "", "--db", filepath.Join(dir, "dstz.db"), "import", noEpisode)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "line 2: source:")
}

// TestNegativeValues: a negative number is a VALUE (or another positional
// argument), not a flag, wherever it stands; flags around it still work.
func TestNegativeValues(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	run := func(args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", "acme"}, args...)...)
	}
	r := run("assert", "mira", "balance", "-5", "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("assert", "--source", "e2", "mira", "balance", "-2.5e3", "--valid-from", "2026-02-01T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("--json", "history", "mira", "balance")
	require.Equal(t, 0, r.code, r.stderr)
	var hist []sgam.Fact
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &hist))
	var values []string
	for _, f := range hist {
		values = append(values, string(f.Value))
	}
	require.Contains(t, values, "-5")
	require.Contains(t, values, "-2.5e3")
	// -1e400 is a value, refused for its range, naming VALUE.
	r = run("assert", "mira", "balance", "-1e400", "--valid-from", "2026-03-01T00:00:00Z", "--source", "e3")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "sgam: VALUE: holds the number -1e400, beyond the range")
	// "--" still works, and a subject may be a negative number too.
	r = run("assert", "--valid-from", "2026-01-01T00:00:00Z", "--source", "e1", "--", "-7", "balance", "-1")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("get", "-7", "balance")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "-1")
	// An unknown flag is still one.
	r = run("assert", "mira", "balance", "1", "-x")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "unknown shorthand flag: 'x'")
}

// TestSubjectFormatCharacters: a subject with a bidirectional or
// zero-width character is refused naming SUBJECT.
func TestSubjectFormatCharacters(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	for _, s := range []string{"mi\u202era", "mi\u200bra", "\ufeffmira"} {
		r := sgamRun(t, "", "--db", db, "assert", s, "city", `"Oslo"`, "--source", "e1")
		require.Equal(t, cli.ExitUsage, r.code, "%q", s)
		require.Contains(t, r.stderr, "sgam: SUBJECT:")
		require.Contains(t, r.stderr, "format character")
	}
}
