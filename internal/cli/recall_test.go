package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/cli"
)

// TestRecallCommand: the passport story through sgam recall, at the
// instants given and asked, and a second tenant with the same words that
// sees only its own.
func TestRecallCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	as := func(tenant string, args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", tenant}, args...)...)
	}
	for _, w := range [][]string{
		{"acme", "episode", "add", "--id", "e1", "--occurred-at", "2026-06-01T09:00:00Z", "--content", "Mira: my passport deadline is July 15."},
		{"acme", "assert", "mira", "passport_deadline", `"2026-07-15"`, "--valid-from", "2026-06-01T09:00:00Z", "--source", "e1"},
		{"acme", "episode", "add", "--id", "e2", "--occurred-at", "2026-06-03T10:00:00Z", "--content", "Mira: correction, the deadline is June 30."},
		{"acme", "assert", "mira", "passport_deadline", `"2026-06-30"`, "--valid-from", "2026-06-03T10:00:00Z", "--source", "e2"},
		{"globex", "episode", "add", "--id", "g1", "--occurred-at", "2026-06-01T09:00:00Z", "--content", "Mira: my passport deadline is September 9."},
		{"globex", "assert", "mira", "passport_deadline", `"2026-09-09"`, "--valid-from", "2026-06-01T09:00:00Z", "--source", "g1"},
	} {
		r := as(w[0], w[1:]...)
		require.Equal(t, 0, r.code, r.stderr)
	}

	r := as("acme", "recall", "When is Mira's passport deadline?")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `- mira passport_deadline = "2026-06-30"`)
	require.Contains(t, r.stdout, "sources e2")
	require.NotContains(t, r.stdout, `= "2026-07-15"`)
	require.NotContains(t, r.stdout, "Evidence", "the fact answers and quotes its source: nothing more is cited")

	r = as("acme", "recall", "When is Mira's passport deadline?", "--evidence", "always")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `Mira: my passport deadline is July 15. (superseded: mira.passport_deadline "2026-07-15" replaced 2026-06-03 by e2)`,
		"the replaced quote says so")
	r = as("acme", "recall", "When is Mira's passport deadline?", "--evidence", "none")
	require.Equal(t, 0, r.code, r.stderr, "none needs no --evidence-limit -1")

	r = as("acme", "--json", "recall", "When is Mira's passport deadline?", "--as-of", "2026-06-02T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	var c struct {
		AsOf  string `json:"as_of"`
		Facts []struct {
			Value   json.RawMessage `json:"value"`
			Sources []string        `json:"sources"`
			Status  string          `json:"status"`
		} `json:"facts"`
		Evidence []struct {
			EpisodeID string `json:"episode_id"`
		} `json:"evidence"`
		Rendered string `json:"rendered"`
		Tokens   int    `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &c))
	require.Equal(t, "2026-06-02T00:00:00Z", c.AsOf)
	require.Len(t, c.Facts, 1)
	require.Equal(t, `"2026-07-15"`, string(c.Facts[0].Value))
	require.Equal(t, []string{"e1"}, c.Facts[0].Sources)
	require.Equal(t, "current", c.Facts[0].Status)

	r = as("acme", "recall", "When is Mira's passport deadline?", "--known-at", "2026-06-01T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "- none: no value of passport_deadline of mira has been recorded, as believed at those instants",
		"the CLI's clock is the wall clock: at that known_at nothing was recorded yet")

	r = as("globex", "--json", "recall", "When is Mira's passport deadline?", "--evidence", "always", "--evidence-limit", "20")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &c))
	require.Len(t, c.Facts, 1)
	require.Equal(t, `"2026-09-09"`, string(c.Facts[0].Value))
	for _, e := range c.Evidence {
		require.Equal(t, "g1", e.EpisodeID)
	}

	r = as("acme", "recall", "x", "--budget", "5")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--budget")
	r = as("acme", "recall", "x", "--evidence-limit", "-3")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--evidence-limit")
	r = as("acme", "recall", "x", "--evidence", "sometimes")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--evidence:")
	r = as("acme", "recall", "x", "--subject", "mira", "--subject=")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--subject[1]: is required")
	// 0 is the library's "default": given as a flag, it is refused.
	for _, flag := range []string{"--budget", "--evidence-limit", "--hops"} {
		r = as("acme", "recall", "x", flag, "0")
		require.Equal(t, cli.ExitUsage, r.code, flag)
		require.Contains(t, r.stderr, flag+": is 0")
	}

	r = as("acme", "reindex")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "reindexed 3 episodes\n", r.stdout)
	r = as("acme", "reindex", "--only", "globex")
	require.Equal(t, "reindexed 1 episodes\n", r.stdout)
}

// TestRecallRevokedCommand is issue 26's support conversation through sgam
// recall: the none line names the episode that revoked the preference and
// quotes it; --evidence always marks the stale statement below it.
func TestRecallRevokedCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	as := func(tenant string, args ...string) result {
		return sgamRun(t, "", append([]string{"--db", db, "--tenant", tenant}, args...)...)
	}
	for _, w := range [][]string{
		{"acme", "episode", "add", "--id", "e1", "--session", "s1", "--occurred-at", "2026-06-01T09:00:00Z", "--content", "Hi, I'm Mira. I prefer concise answers."},
		{"acme", "assert", "mira", "answer_style", `"concise"`, "--valid-from", "2026-06-01T09:00:00Z", "--source", "e1"},
		{"acme", "episode", "add", "--id", "e6", "--session", "s2", "--occurred-at", "2026-06-05T09:00:00Z", "--content", "I no longer want concise answers; detail is fine."},
		{"acme", "retract", "mira", "answer_style", "--at", "2026-06-05T09:00:00Z", "--source", "e6"},
		{"globex", "episode", "add", "--id", "g1", "--occurred-at", "2026-06-01T09:00:00Z", "--content", "Mira prefers concise answers, and no longer wants them."},
	} {
		r := as(w[0], w[1:]...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	q := "Does Mira still prefer concise answers?"
	r := as("acme", "recall", q)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `- none: no value of answer_style of mira since 2026-06-05 (revoked by e6: "I no longer want concise answers; detail is fine.")`)
	require.NotContains(t, r.stdout, "- e1 |")

	r = as("acme", "recall", q, "--evidence", "always", "--evidence-limit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "- e6 |")
	require.Contains(t, r.stdout, `(superseded: mira.answer_style "concise" revoked 2026-06-05 by e6)`)
	require.Less(t, strings.Index(r.stdout, "- e6 |"), strings.Index(r.stdout, "- e1 |"))

	r = as("globex", "recall", q, "--evidence", "always")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "superseded")
	require.NotContains(t, r.stdout, "e6")
}
