package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/llm/llmtest"
)

const passportSchemaFile = `
attributes:
  passport_deadline: {memory: task, type: date, description: "when the passport must be renewed"}
`

// The passport story as an ingest file: e0, extracted late in the demo, is
// the third line.
const passportJSONL = `{"tenant":"demo","episode_id":"e1","session":"s1","content":"Mira: my passport renewal deadline is July 15.","occurred_at":"2026-06-01T09:00:00Z","subjects":["mira"]}
{"tenant":"demo","episode_id":"e2","session":"s1","content":"Mira: correction, the deadline is June 30, not July 15.","occurred_at":"2026-06-03T10:00:00Z"}
{"tenant":"demo","episode_id":"e0","content":"Consulate letter to Mira, extracted late: renew by August 1.","occurred_at":"2026-05-30T08:00:00Z"}
`

func passportFake(t *testing.T) *llmtest.Server {
	up := func(evidence, value string) llmtest.Reply {
		return llmtest.Reply{Updates: []llmtest.Update{{Evidence: evidence, Subject: "mira", Attribute: "passport_deadline", Change: "new", Value: llmtest.S(value)}}}
	}
	fake := llmtest.New(t, "fake-model", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira: my passport renewal deadline is July 15.":               up("deadline is July 15", "2026-07-15"),
		"Mira: correction, the deadline is June 30, not July 15.":      up("the deadline is June 30", "2026-06-30"),
		"Consulate letter to Mira, extracted late: renew by August 1.": up("renew by August 1", "2026-08-01"),
	}))
	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	t.Setenv("SGAM_LLM_MODEL", fake.Model)
	return fake
}

func TestIngest(t *testing.T) {
	fake := passportFake(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	file := filepath.Join(dir, "story.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(passportJSONL), 0o600))
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(passportSchemaFile), 0o600))
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "schema", "apply", schema, "--default").code)

	r := sgamRun(t, "", "--db", db, "ingest", file, "--workers", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "captured 3 episodes (3 new, 0 already there), 3 queued")
	require.Contains(t, r.stdout, "extracted 3 of 3 episodes: 3 facts written, 0 pending review, 0 failed; 3 model calls")
	require.Equal(t, 3, fake.CallCount())

	get := func(args ...string) string {
		r := sgamRun(t, "", append([]string{"--db", db, "--tenant", "demo", "get", "mira", "passport_deadline"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}
	require.Contains(t, get(), `"2026-06-30"`)
	require.Contains(t, get("--as-of", "2026-06-02T00:00:00Z"), `"2026-07-15"`)
	require.Contains(t, get("--as-of", "2026-05-31T00:00:00Z"), `"2026-08-01"`)

	// Again: nothing new is captured, no model is called.
	r = sgamRun(t, "", "--db", db, "ingest", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "captured 3 episodes (0 new, 3 already there), 0 queued")
	require.Equal(t, 3, fake.CallCount())

	// The records, through episode show.
	r = sgamRun(t, "", "--db", db, "--tenant", "demo", "--json", "episode", "show", "e2")
	require.Equal(t, 0, r.code, r.stderr)
	var shown struct {
		Content     string `json:"content"`
		Extractions []struct {
			Status   string `json:"status"`
			Model    string `json:"model"`
			Accepted []struct {
				Outcome string `json:"outcome"`
			} `json:"accepted"`
		} `json:"extractions"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Len(t, shown.Extractions, 1)
	require.Equal(t, "done", shown.Extractions[0].Status)
	require.Equal(t, "fake-model", shown.Extractions[0].Model)
	r = sgamRun(t, "", "--db", db, "--tenant", "demo", "episode", "show", "e2")
	require.Contains(t, r.stdout, "extraction")
	require.Contains(t, r.stdout, "written")

	// Re-extraction where nothing changed costs nothing.
	r = sgamRun(t, "", "--db", db, "--tenant", "demo", "reextract", "--since", "2026-01-01T00:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "0 model calls, 0 tokens")
	require.Equal(t, 3, fake.CallCount())

	// Another tenant sees nothing.
	r = sgamRun(t, "", "--db", db, "--tenant", "other", "get", "mira", "passport_deadline")
	require.NotContains(t, r.stdout, "2026")
	r = sgamRun(t, "", "--db", db, "--tenant", "other", "episode", "show", "e2")
	require.Equal(t, 1, r.code)
	require.Equal(t, 0, sgamRun(t, "", "--db", db, "check").code)
}

func TestIngestBadLines(t *testing.T) {
	passportFake(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	lines := strings.Join([]string{
		`{"episode_id":"ok1","content":"nothing to remember here"}`,
		`{"episode_id":"dup","content":"x","content":"y"}`,
		`{"episode_id":"bad","contents":"typo"}`,
		`not json`,
		`{"episode_id":"when","content":"x","occurred_at":"yesterday"}`,
		`{"episode_id":"subj","content":"x","subjects":["ok", ""]}`,
		`{"episode_id":"ok2","content":"nor here"}`,
	}, "\n")
	r := sgamRun(t, lines, "--db", db, "--tenant", "acme", "ingest", "-")
	require.Equal(t, 2, r.code, r.stderr)
	for _, want := range []string{"line 2", "line 3.contents", "line 4", "line 5.occurred_at", "line 6.subjects[1]"} {
		require.Contains(t, r.stderr, want)
	}
	require.Contains(t, r.stderr, "captured 2 episodes")
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "episode", "list")
	require.Contains(t, r.stdout, "ok1")
	require.Contains(t, r.stdout, "ok2")
}

// TestIngestAgainWithoutIDs: lines with no episode_id and no
// idempotency_key are keyed by their text, so a second run captures
// nothing; a field name in other case is refused, not read.
func TestIngestAgainWithoutIDs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	lines := "{\"content\":\"plain line\"}\n{\"content\":\"with time\",\"occurred_at\":\"2026-01-01T00:00:00Z\"}\n"
	r := sgamRun(t, lines, "--db", db, "--tenant", "acme", "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "captured 2 episodes (2 new, 0 already there)")
	r = sgamRun(t, lines, "--db", db, "--tenant", "acme", "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "captured 2 episodes (0 new, 2 already there)")
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "--json", "episode", "list")
	require.Equal(t, 2, strings.Count(r.stdout, `"episode_id"`), r.stdout)

	r = sgamRun(t, `{"EPISODE_ID":"i3","content":"x"}`, "--db", db, "--tenant", "acme", "ingest", "-", "--no-extract")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "line 1.EPISODE_ID: is not a field: field names are case-sensitive")
}

func TestIngestWithoutModel(t *testing.T) {
	t.Setenv("SGAM_LLM_BASE_URL", "")
	t.Setenv("SGAM_LLM_MODEL", "")
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	line := `{"episode_id":"e1","content":"Mira lives in Oslo."}`
	// Captured all the same; the extraction waits, and ingest says why
	// and how to configure a model.
	r := sgamRun(t, line, "--db", db, "ingest", "-")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "captured 1 episodes (1 new, 0 already there), 1 queued for extraction")
	require.Contains(t, r.stderr, "no model is configured, so the 1 queued extractions wait")
	require.Contains(t, r.stderr, "SGAM_LLM_BASE_URL")
	require.Contains(t, r.stderr, "--no-extract")

	r = sgamRun(t, line, "--db", db, "ingest", "-", "--no-wait")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "1 queued for extraction")
	r = sgamRun(t, "", "--db", db, "ingest", "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "queued 1")

	r = sgamRun(t, `{"episode_id":"e2","content":"x"}`, "--db", db, "ingest", "-", "--no-extract")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "0 queued")
	r = sgamRun(t, "", "--db", db, "remember", "Mira lives in Oslo.")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no model is configured")
}

func TestRememberAndDryRun(t *testing.T) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(map[string]llmtest.Reply{
		"Mira lives in Oslo now.": {Updates: []llmtest.Update{
			{Evidence: "lives in Oslo", Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S("Oslo")},
			{Evidence: "lives in Bergen", Subject: "mira", Attribute: "city", Change: "new", Value: llmtest.S("Bergen")},
		}},
	}))
	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	t.Setenv("SGAM_LLM_MODEL", "m")
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, "", "--db", db, "--tenant", "acme", "remember", "Mira lives in Oslo now.", "--subject", "mira", "--id", "r1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `written   mira.city = "Oslo"`)
	require.Contains(t, r.stdout, "rejected  updates[1] ungrounded: evidence:")

	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "extract", "--episode", "r1", "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "<episode id=\"r1\"")
	require.Contains(t, r.stdout, "nothing written")
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "--json", "episode", "show", "r1")
	var shown struct {
		Extractions []json.RawMessage `json:"extractions"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Len(t, shown.Extractions, 1, "a dry run records nothing")
	require.Equal(t, 1, fake.CallCount(), "the dry run's prompt is the one answered before")
}

func TestIngestFailedExtraction(t *testing.T) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	t.Setenv("SGAM_LLM_MODEL", "m")
	fake.Fault(llmtest.Reply{Status: 400}) // a request the server refuses: no retry mends it
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, `{"episode_id":"e1","content":"Mira lives in Oslo."}`, "--db", db, "--tenant", "acme", "ingest", "-", "--workers", "1")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 failed")
	require.Contains(t, r.stderr, "sgam ingest retry")
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "ingest", "status")
	require.Contains(t, r.stdout, "failed 1")

	// Retried, it runs again (and the server answers this time).
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "ingest", "retry")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 failed extractions queued again")
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "reextract", "--episode", "e1", "--workers", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 2, fake.CallCount())
}

// TestRememberPastTheBudget: a spent budget is unavailable (exit 1, not an
// internal failure), the episode is captured and queued, and the CLI adds
// the hint the library leaves out: how to raise the budget from here.
func TestRememberPastTheBudget(t *testing.T) {
	fake := llmtest.New(t, "m", llmtest.ByEpisode(nil))
	t.Setenv("SGAM_LLM_BASE_URL", fake.URL)
	t.Setenv("SGAM_LLM_MODEL", "m")
	db := filepath.Join(t.TempDir(), "t.db")
	r := sgamRun(t, "", "--db", db, "--tenant", "acme", "remember", "Mira lives in Oslo.", "--id", "r1")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "budget", "set", "--tokens-per-day", "1")
	require.Equal(t, 0, r.code, r.stderr)
	r = sgamRun(t, "", "--db", db, "--tenant", "acme", "remember", "Mira moved to Bergen.", "--id", "r2")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "sgam: unavailable: extract: episode r2 was captured and not extracted now")
	require.Contains(t, r.stderr, "hint: the operator raises it with 'sgam budget set --tokens-per-day N'")
	require.Equal(t, 1, fake.CallCount(), "no call past the budget")
}
