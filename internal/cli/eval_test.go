package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam/internal/cli"
	"github.com/sgam-dev/sgam/llm/llmtest"
)

const passport = "../../eval/scenarios/passport.yaml"

// copyScenario copies a shipped scenario and its cassette into a new
// directory, with edit applied to the scenario's text.
func copyScenario(t *testing.T, path string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	out := filepath.Join(dir, filepath.Base(path))
	require.NoError(t, os.WriteFile(out, []byte(edit(string(text))), 0o644))
	cas := strings.TrimSuffix(path, ".yaml") + ".cassette.yaml"
	if data, err := os.ReadFile(cas); err == nil {
		require.NoError(t, os.WriteFile(strings.TrimSuffix(out, ".yaml")+".cassette.yaml", data, 0o644))
	}
	return out
}

func TestEvalRunThresholdsSetExitStatus(t *testing.T) {
	r := sgamRun(t, "", "eval", "run", passport)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "passport  replay  1.00 / 1.00 / 1.00")
	require.Contains(t, r.stdout, "thresholds of the scenarios: 8 of 8 hold")

	r = sgamRun(t, "", "eval", "run", passport, "--max", "stale=0", "--min", "extraction.f1=0.9")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "run: extraction.f1 ≥ 0.900: 1, ok")

	r = sgamRun(t, "", "eval", "run", passport, "--min", "checkpoints.passed=100")
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stdout, "run: checkpoints.passed ≥ 100: 7, FAILED")
	require.Contains(t, r.stderr, "thresholds failed")

	r = sgamRun(t, "", "eval", "run", passport, "--max", "nonsense=1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, `"nonsense" is not a metric`)

	// A scenario's own threshold fails the run too.
	strict := copyScenario(t, passport, func(s string) string {
		return strings.Replace(s, "min: {extraction.f1: 1,", "min: {checkpoints.passed: 8, extraction.f1: 1,", 1)
	})
	r = sgamRun(t, "", "--json", "eval", "run", strict)
	require.Equal(t, cli.ExitFailure, r.code, r.stderr)
	var sum struct {
		Scenarios []struct {
			Thresholds []struct {
				Metric string
				OK     bool
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Contains(t, sum.Scenarios[0].Thresholds, struct {
		Metric string
		OK     bool
	}{"checkpoints.passed", false})
}

func TestEvalInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.yaml")
	r := sgamRun(t, "", "eval", "init", path)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = sgamRun(t, "", "eval", "check", path)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "ok: my-agent, 8 steps, 2 tenants, no cassette")
	r = sgamRun(t, "", "eval", "init", path)
	require.Equal(t, cli.ExitUsage, r.code, "an existing file is not overwritten")
}

func TestEvalBrokenScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`name: broken
start: 2026-06-01
tenants:
  acme: {}
steps:
  - episode:
      episode_id: e1
      contnt: hello
`), 0o644))
	for _, cmd := range []string{"check", "run"} {
		r := sgamRun(t, "", "eval", cmd, path)
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, path+":6: steps[0].episode: content is required")
		require.Contains(t, r.stderr, path+":8: steps[0].episode.contnt: is not a field here")
	}
}

// TestEvalRecordThenReplay records a scenario from a fake model through
// the command line, replays it without one, and names the episode whose
// prompt changed.
func TestEvalRecordThenReplay(t *testing.T) {
	path := copyScenario(t, passport, func(s string) string { return s })
	cas := strings.TrimSuffix(path, ".yaml") + ".cassette.yaml"
	require.NoError(t, os.Remove(cas))

	r := sgamRun(t, "", "eval", "run", path)
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "has no cassette")

	answers := map[string]llmtest.Reply{
		"Mira: my passport renewal deadline is July 15.": {Updates: []llmtest.Update{{Evidence: "deadline is July 15", Subject: "mira",
			Attribute: "passport_deadline", Change: "new", Value: llmtest.S("2026-07-15")}}},
		"Mira: correction, the deadline is June 30, not July 15.": {Updates: []llmtest.Update{{Evidence: "the deadline is June 30",
			Subject: "mira", Attribute: "passport_deadline", CurrentValue: llmtest.S("2026-07-15"), Change: "update", Value: llmtest.S("2026-06-30")}}},
		"Consulate letter to Mira: renew your passport by August 1.": {Updates: []llmtest.Update{{Evidence: "renew your passport by August 1",
			Subject: "mira", Attribute: "passport_deadline", Change: "update", Value: llmtest.S("2026-08-01")}}},
	}
	srv := llmtest.New(t, "fake", llmtest.ByEpisode(answers))
	t.Setenv("SGAM_LLM_BASE_URL", srv.URL)
	t.Setenv("SGAM_LLM_MODEL", "fake")
	rec := sgamRun(t, "", "--json", "eval", "run", path, "--record")
	require.Equal(t, cli.ExitOK, rec.code, rec.stderr)
	require.Equal(t, 3, srv.CallCount())

	t.Setenv("SGAM_LLM_BASE_URL", "")
	t.Setenv("SGAM_LLM_MODEL", "")
	rep := sgamRun(t, "", "--json", "eval", "run", path)
	require.Equal(t, cli.ExitOK, rep.code, rep.stderr)
	require.Equal(t, 3, srv.CallCount())
	require.Equal(t, metricsOf(t, rec.stdout), metricsOf(t, rep.stdout))

	text, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(text), "not July 15.", "not July 15!", 1)), 0o644))
	r = sgamRun(t, "", "eval", "run", path)
	require.Equal(t, cli.ExitFailure, r.code)
	require.Contains(t, r.stderr, "episode e2 of tenant acme: its prompt changed")
	require.Contains(t, r.stderr, "--record")
}

// metricsOf is the metrics of a --json summary, without the times.
func metricsOf(t *testing.T, out string) map[string]any {
	var sum struct {
		Total map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum))
	delete(sum.Total, "time_ns")
	return sum.Total
}
