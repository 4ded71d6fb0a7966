package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/llm/llmtest"
	"github.com/sgam-dev/sgam/recall"
)

// tiny is a hand-made scenario whose figures are worked out by hand in
// TestMetricsByHand.
const tiny = `name: tiny
start: 2026-03-01T09:00:00Z
tenants:
  alpha:
    schema: |
      attributes:
        city: {memory: profile, type: string}
        plan: {memory: account, type: {enum: [free, pro, enterprise]}}
        tickets: {memory: task, type: integer}
  beta: {}
steps:
  - episode: {tenant: alpha, episode_id: a1, session: s, occurred_at: 2026-03-01T09:00:00Z, content: "Ana: I moved to Oslo, and I am on the pro plan now."}
    gold:
      - {subject: ana, attribute: city, value: Oslo}
      - {subject: ana, attribute: plan, value: pro}
  - episode: {tenant: alpha, episode_id: a2, session: s, occurred_at: 2026-03-02T09:00:00Z, content: "Ana: I have 3 open tickets."}
    gold:
      - {subject: ana, attribute: tickets, value: 3}
  - episode: {tenant: alpha, episode_id: a3, session: s, occurred_at: 2026-03-03T09:00:00Z, content: "Ana: I moved again, to Bergen."}
    gold:
      - {subject: ana, attribute: city, change: update, value: Bergen}
  - episode: {tenant: beta, episode_id: b1, content: "Ana: I live in Paris."}
  - check:
      tenant: alpha
      values:
        - {subject: ana, attribute: city, value: Bergen}
        - {subject: ana, attribute: tickets, value: 3}
  - check:
      tenant: alpha
      as_of: 2026-02-01
      values:
        - {subject: ana, attribute: plan, value: null}
  - ask:
      tenant: alpha
      question: Which city does Ana live in?
      expect:
        facts:
          - {subject: ana, attribute: city, value: Bergen}
        evidence: [a3]
  - forget: {tenant: alpha, episode: a2}
`

// The model's answers: a1's plan is wrong (a false positive, and pro a
// miss; rejected, its quote states pro); a2's quote is not in the episode
// (rejected, though its value is the gold's).
var tinyAnswers = []Exchange{
	{Tenant: "alpha", Episode: "a1", Answer: `{"updates":[
		{"evidence":"I moved to Oslo","subject":"ana","attribute":"city","current_value":null,"change":"new","value":"Oslo","valid_from":null},
		{"evidence":"I am on the pro plan now","subject":"ana","attribute":"plan","current_value":null,"change":"new","value":"enterprise","valid_from":null}]}`},
	{Tenant: "alpha", Episode: "a2", Answer: `{"updates":[
		{"evidence":"I have three open tickets","subject":"ana","attribute":"tickets","current_value":null,"change":"new","value":"3","valid_from":null}]}`},
	{Tenant: "alpha", Episode: "a3", Answer: `{"updates":[
		{"evidence":"I moved again, to Bergen","subject":"ana","attribute":"city","current_value":"Oslo","change":"update","value":"Bergen","valid_from":null}]}`},
	{Tenant: "beta", Episode: "b1", Answer: `{"updates":[
		{"evidence":"I live in Paris","subject":"ana","attribute":"city","current_value":null,"change":"new","value":"Paris","valid_from":null}]}`},
}

// writeScenario writes a scenario and a cassette of hand-written answers
// (no digests) into a new directory, and keys the cassette (--rekey).
func writeScenario(t *testing.T, text string, answers []Exchange) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	if answers != nil {
		require.NoError(t, (&Cassette{Model: "hand-written", Mode: "json_schema", Exchanges: answers}).Save(CassettePath(path)))
		sc, err := Load(path)
		require.NoError(t, err)
		_, err = Run(context.Background(), sc, Options{Mode: Rekey})
		require.NoError(t, err)
	}
	return path
}

// badRecall adds to every context, as current, a superseded row of the
// asker's (stale) and a fact of another tenant (a leak).
type badRecall struct {
	s     sgam.Store
	inner recaller
}

func (b badRecall) Recall(ctx context.Context, q recall.Query) (*recall.Context, error) {
	out, err := b.inner.Recall(ctx, q)
	if err != nil {
		return nil, err
	}
	hist, err := b.s.History(ctx, sgam.Key{Tenant: "alpha", Subject: "ana", Attribute: "city"})
	if err != nil {
		return nil, err
	}
	for _, f := range hist {
		if string(f.Value) == `"Oslo"` && f.ValidTo != nil {
			out.Facts = append(out.Facts, recall.Fact{Fact: f, Status: recall.Current})
			break
		}
	}
	other, err := b.s.Get(ctx, sgam.Key{Tenant: "beta", Subject: "ana", Attribute: "city"}, sgam.At{})
	if err != nil || other == nil {
		return nil, err
	}
	out.Facts = append(out.Facts, recall.Fact{Fact: *other, Status: recall.Current})
	return out, nil
}

func TestMetricsByHand(t *testing.T) {
	path := writeScenario(t, tiny, tinyAnswers)
	sc, err := Load(path)
	require.NoError(t, err)
	rep, err := Run(context.Background(), sc, Options{wrapRecall: func(s sgam.Store, r recaller) recaller { return badRecall{s, r} }})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		t.Logf("line %d %s: %s", f.Line, f.Stage, f.Message)
	}
	m := rep.Metrics
	require.Equal(t, Replay, rep.Mode)
	require.True(t, slices.ContainsFunc(rep.Findings, func(f Finding) bool {
		return f.Stage == StageCheck && strings.HasSuffix(f.Message, "no value, want 3; missing: 3")
	}), "a failed checkpoint says what it missed")

	// Gold: city Oslo, plan pro, tickets 3, city Bergen. Proposed: city
	// Oslo, plan enterprise (ungrounded), tickets 3 (ungrounded), city
	// Bergen. Matched 3 of 4 proposed and of 4 gold.
	require.Equal(t, 4, m.Extraction.Gold)
	require.Equal(t, 4, m.Extraction.Proposed)
	require.Equal(t, 3, m.Extraction.Matched)
	require.InDelta(t, 0.75, *m.Extraction.Precision, 1e-9)
	require.InDelta(t, 0.75, *m.Extraction.Recall, 1e-9)
	require.InDelta(t, 0.75, *m.Extraction.F1, 1e-9)
	require.Equal(t, map[string]int{sgam.RejectUngrounded: 2}, m.Rejected)
	require.Zero(t, m.WriteErrors)

	// Checkpoints: city Bergen holds; tickets was rejected, so no 3; plan
	// had no value in February (a point in time).
	require.Equal(t, Count{Passed: 2, Failed: 1, Ratio: ptr(2.0 / 3)}, m.Checkpoints)
	require.Equal(t, Count{Passed: 1, Failed: 0, Ratio: ptr(1.0)}, m.PointInTime)

	// The bad recall presented the closed Oslo row as current (one stale)
	// and beta's Paris (one leak); Bergen was there, and a3 cited.
	require.Equal(t, 1, m.Stale)
	require.Equal(t, 1, m.Leaks)
	require.Equal(t, Count{Passed: 1, Ratio: ptr(1.0)}, m.Facts)
	require.Equal(t, Count{Passed: 1, Ratio: ptr(1.0)}, m.Evidence.Count)
	require.Equal(t, 1, m.Evidence.Questions)
	require.Equal(t, ptr(1.0), m.Evidence.Recall)

	// Forget a2: the episode, its extraction records, its search hit.
	require.Equal(t, Count{Passed: 3, Ratio: ptr(1.0)}, m.Forget)

	// Four episodes extracted, one call each, tokens as estimated.
	require.Equal(t, 4, m.Extracted)
	require.Equal(t, 4, m.Calls)
	require.Positive(t, m.TokensIn)
	require.Positive(t, m.TokensOut)

	stages := map[string]int{}
	for _, f := range rep.Findings {
		stages[f.Stage]++
	}
	require.Equal(t, map[string]int{StageExtraction: 2, StageCheck: 1, StageStale: 1, StageLeak: 1}, stages)

	// The same run with recall as it is: nothing stale, nothing leaked.
	rep, err = Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Zero(t, rep.Metrics.Stale)
	require.Zero(t, rep.Metrics.Leaks)
}

func ptr(f float64) *float64 { return &f }

func TestThresholds(t *testing.T) {
	m := newMetrics()
	m.Extraction.Gold, m.Extraction.Proposed, m.Extraction.Matched = 10, 8, 8
	m.Stale = 1
	m.Finish()
	th := Thresholds{Min: map[string]float64{"extraction.precision": 1, "extraction.recall": 0.9, "evidence.recall": 0.5},
		Max: map[string]float64{"stale": 0, "leaks": 0}}
	got := map[string]bool{}
	for _, b := range th.Check(m) {
		got[b.Kind+" "+b.Metric] = b.OK
	}
	require.Equal(t, map[string]bool{
		"min extraction.precision": true, "min extraction.recall": false,
		"min evidence.recall": false, // no data: a bound without data fails
		"max stale":           false, "max leaks": true,
	}, got)

	into := map[string]float64{}
	require.NoError(t, ParseBounds("min", []string{"extraction.f1=0.9", "rejected.ungrounded=0"}, into))
	require.Equal(t, map[string]float64{"extraction.f1": 0.9, "rejected.ungrounded": 0}, into)
	for _, bad := range []string{"extraction.f1", "nonsense=1", "stale=abc", "rejected.bogus=1", "stale=NaN"} {
		require.Error(t, ParseBounds("min", []string{bad}, into), bad)
	}
}

func TestCassetteMiss(t *testing.T) {
	path := writeScenario(t, tiny, tinyAnswers)
	// A changed episode changes its prompt: the replay names it.
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(text), "I have 3 open tickets.", "I have 4 open tickets.", 1)), 0o644))
	sc, err := Load(path)
	require.NoError(t, err)
	_, err = Run(context.Background(), sc, Options{})
	require.ErrorIs(t, err, ErrPromptChanged)
	require.ErrorContains(t, err, "episode a2 of tenant alpha")
	require.ErrorContains(t, err, "I have 4 open tickets.")
	require.ErrorContains(t, err, "re-record")

	// No cassette and no model: an error that says so.
	require.NoError(t, os.Remove(CassettePath(path)))
	_, err = Run(context.Background(), sc, Options{})
	require.ErrorContains(t, err, "has no cassette")
	require.ErrorContains(t, err, "--record")
	_, err = Run(context.Background(), sc, Options{Mode: Record})
	require.ErrorContains(t, err, "needs a model")
}

func TestParseProblems(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string // "line: path: message" prefixes, in order
	}{
		{"unknown field", `name: broken
start: 2026-06-01
tenants:
  acme: {}
steps:
  - episode:
      episode_id: e1
      contnt: hello
`, []string{"line 6: steps[0].episode: content is required", "line 8: steps[0].episode.contnt: is not a field here"}},
		{"semantic", `name: broken
start: 2026-06-01
tenants:
  acme: {}
  beta: {}
steps:
  - episode: {tenant: acme, episode_id: e1, content: hi}
  - ask:
      tenant: nobody
      question: q
  - ask:
      tenant: acme
      question: q
      expect: {evidence: [e9]}
  - check: {tenant: acme}
    forget: {tenant: acme, episode: e1}
`, []string{"line 9: steps[1].ask.tenant: tenant \"nobody\" is not one", "line 14: steps[2].ask.expect.evidence[0]: episode \"e9\"",
			"line 15: steps[3]: a step is exactly one of"}},
		{"inline schema", `name: broken
start: 2026-06-01
tenants:
  acme:
    schema: |
      attributes:
        plan:
          memory: account
          type: strin
steps:
  - check: {}
`, []string{"line 9: tenants.acme.schema.attributes.plan.type:"}},
		{"yaml", "name: broken\nsteps:\n  - [unclosed\n", []string{"line 3: not valid YAML"}},
		{"deep", "name: broken\nsteps: " + strings.Repeat("[", 5000) + "\n", []string{"line 2: nesting is deeper than"}},
		{"threshold", `name: broken
start: 2026-06-01
tenants: {acme: {}}
thresholds: {min: {extraction.f2: 1}}
steps:
  - check: {}
`, []string{"line 4: thresholds: \"extraction.f2\" is not a metric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("broken.yaml", []byte(tc.text))
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			var got []string
			for _, p := range pe.Problems {
				got = append(got, p.String())
			}
			require.Len(t, got, len(tc.want), "%q", got)
			for i, w := range tc.want {
				require.True(t, strings.HasPrefix(got[i], w), "problem %d: %q, want %q...", i, got[i], w)
			}
		})
	}
}

// TestShippedScenarios replays every scenario of eval/scenarios offline
// and holds it to its own thresholds, as CI does with `sgam eval run`.
func TestShippedScenarios(t *testing.T) {
	paths, err := filepath.Glob("scenarios/*.yaml")
	require.NoError(t, err)
	paths = slices.DeleteFunc(paths, func(p string) bool { return !IsScenario(p) })
	require.GreaterOrEqual(t, len(paths), 1)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			sc, err := Load(p)
			require.NoError(t, err)
			rep, err := Run(context.Background(), sc, Options{})
			require.NoError(t, err)
			require.NotEmpty(t, rep.Bounds, "a shipped scenario sets thresholds")
			for _, b := range rep.Bounds {
				require.True(t, b.OK, "%s: %s", sc.Name, b)
			}
			require.Zero(t, rep.Metrics.Stale)
			require.Zero(t, rep.Metrics.Leaks)
		})
	}
}

// TestRecordReplay records the tiny scenario from a live (fake) model,
// then replays the cassette: the same report, and no model.
func TestRecordReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.yaml")
	require.NoError(t, os.WriteFile(path, []byte(tiny), 0o644))
	replies := map[string]llmtest.Reply{}
	sc, err := Load(path)
	require.NoError(t, err)
	for _, st := range sc.Steps {
		if st.Kind != StepEpisode {
			continue
		}
		for _, x := range tinyAnswers {
			if x.Episode == st.Episode.EpisodeID {
				replies[st.Episode.Content] = llmtest.Reply{Content: x.Answer}
			}
		}
	}
	srv := llmtest.New(t, "fake-model", llmtest.ByEpisode(replies))
	model, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "fake-model"})
	require.NoError(t, err)

	recorded, err := Run(context.Background(), sc, Options{Mode: Record, Model: model})
	require.NoError(t, err)
	require.Equal(t, 4, srv.CallCount())
	c, err := LoadCassette(CassettePath(path))
	require.NoError(t, err)
	require.Equal(t, "fake-model", c.Model)
	require.Len(t, c.Exchanges, 4)
	for _, x := range c.Exchanges {
		require.NotEmpty(t, x.Digest)
		require.Positive(t, x.PromptTokens, "usage as the server counted it")
		require.False(t, x.Estimated)
	}

	replayed, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, 4, srv.CallCount(), "a replay asks no model")
	require.Equal(t, Record, recorded.Mode)
	require.Equal(t, Replay, replayed.Mode)
	for _, r := range []*Report{recorded, replayed} {
		r.Mode, r.Elapsed, r.Metrics.Time = "", 0, nil
	}
	require.Equal(t, recorded, replayed)
}

// TestLoCoMoScenario runs a small LoCoMo file through the same report:
// its turns captured, not extracted, its questions scored by evidence.
func TestLoCoMoScenario(t *testing.T) {
	convs, err := locomo.Parse(strings.NewReader(`[{"sample_id": "s1", "conversation": {
  "speaker_a": "Ann", "speaker_b": "Bob",
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [
    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a beagle puppy called Rex last week."},
    {"speaker": "Bob", "dia_id": "D1:2", "text": "I am training for the Berlin marathon in September."},
    {"speaker": "Ann", "dia_id": "D1:3", "text": "Good luck with the training!"}]},
 "qa": [
  {"question": "What is the name of Ann's puppy?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
  {"question": "Which marathon is Bob training for?", "answer": "Berlin", "evidence": ["D1:2", "D1:9"], "category": 4},
  {"question": "adversarial", "adversarial_answer": "no", "evidence": ["D1:3"], "category": 5}]}]`))
	require.NoError(t, err)
	sc := FromLoCoMo("mini.json", convs)
	rep, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, NoLLM, rep.Mode)
	m := rep.Metrics
	require.Zero(t, m.Extracted)
	require.Zero(t, m.Leaks)
	// Category 5 is left out; D1:9 names no turn, so Bob's question finds
	// one of its two: (1 + 1/2) / 2.
	require.Equal(t, 2, m.Evidence.Questions)
	require.Equal(t, Count{Passed: 2, Failed: 1, Ratio: ptr(2.0 / 3)}, m.Evidence.Count)
	require.InDelta(t, 0.75, *m.Evidence.Recall, 1e-9)
}

// BenchmarkShippedScenarios replays every shipped scenario once per
// iteration (the performance target: all of them under 10 s).
func BenchmarkShippedScenarios(b *testing.B) {
	paths, err := filepath.Glob("scenarios/*.yaml")
	require.NoError(b, err)
	paths = slices.DeleteFunc(paths, func(p string) bool { return !IsScenario(p) })
	var scs []*Scenario
	for _, p := range paths {
		sc, err := Load(p)
		require.NoError(b, err)
		scs = append(scs, sc)
	}
	for b.Loop() {
		for _, sc := range scs {
			if _, err := Run(context.Background(), sc, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(scs)), "scenarios")
}

// FuzzParse: any file is a scenario or a list of problems, never a panic,
// and every problem has a message.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("scenarios/*.yaml")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && IsScenario(p) {
			f.Add(data)
		}
	}
	f.Add([]byte(tiny))
	f.Add([]byte("name: x\nsteps: [{ask: {question: [}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", data)
		if err != nil {
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			for _, p := range pe.Problems {
				require.NotEmpty(t, p.Message)
			}
			return
		}
		require.NotEmpty(t, sc.Steps)
		for _, st := range sc.Steps {
			require.NotEmpty(t, st.Kind)
		}
	})
}

// TestRunRefusesAStoreInUse: --db must name an empty store, for a
// scenario writes and forgets; and transaction time never goes back.
func TestRunRefusesAStoreInUse(t *testing.T) {
	path := writeScenario(t, tiny, tinyAnswers)
	sc, err := Load(path)
	require.NoError(t, err)
	db := filepath.Join(t.TempDir(), "kept.db")
	_, err = Run(context.Background(), sc, Options{DB: db})
	require.NoError(t, err)
	_, err = Run(context.Background(), sc, Options{DB: db})
	require.ErrorContains(t, err, "has memory already")

	back := strings.Replace(tiny, "  - forget: {tenant: alpha, episode: a2}", "  - at: 2026-01-01T00:00:00Z\n    forget: {tenant: alpha, episode: a2}", 1)
	require.NoError(t, os.WriteFile(path, []byte(back), 0o644))
	_, err = Load(path)
	require.ErrorContains(t, err, "steps[7].at: 2026-01-01T00:00:00Z moves the clock back", "check finds it before a run")
}

// TestFailedExtractionMissesItsGold: an answer that cannot be used
// proposes nothing, and its gold counts as missed.
func TestFailedExtractionMissesItsGold(t *testing.T) {
	answers := slices.Clone(tinyAnswers)
	answers[1].Answer = "sorry, I cannot help with that"
	path := writeScenario(t, tiny, answers)
	sc, err := Load(path)
	require.NoError(t, err)
	rep, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Metrics.WriteErrors)
	require.Equal(t, 4, rep.Metrics.Extraction.Gold, "a2's gold is still counted")
	require.Equal(t, 3, rep.Metrics.Extraction.Proposed)
	require.Equal(t, 2, rep.Metrics.Extraction.Matched)
}

// TestExample: the scenario `sgam eval init` writes is valid, and with a
// good model's answers it holds its own thresholds.
func TestExample(t *testing.T) {
	path := writeScenario(t, string(Example), []Exchange{
		{Tenant: "acme", Episode: "m1", Answer: `{"updates":[
			{"evidence":"I upgraded to Pro today","subject":"cust-1","attribute":"plan","current_value":null,"change":"new","value":"pro","valid_from":null},
			{"evidence":"Ticket T-7 is still open","subject":"cust-1","attribute":"open_tickets","current_value":null,"change":"new","value":"T-7","valid_from":null}]}`},
		{Tenant: "acme", Episode: "m2", Answer: `{"updates":[
			{"evidence":"plan free since 2026-05-20","subject":"cust-1","attribute":"plan","current_value":null,"change":"new","value":"free","valid_from":"2026-05-20"}]}`},
	})
	sc, err := Load(path)
	require.NoError(t, err)
	rep, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		t.Logf("line %d %s: %s", f.Line, f.Stage, f.Message)
	}
	for _, b := range rep.Bounds {
		require.True(t, b.OK, b.String())
	}
	require.Equal(t, Count{Passed: 3, Ratio: ptr(1.0)}, rep.Metrics.Checkpoints)
}

// TestCheckNamesEveryProblem: one check names a structural fault, a typo
// in an inline schema beside it, and a gold candidate no schema of its
// tenant declares.
func TestCheckNamesEveryProblem(t *testing.T) {
	broken := strings.Replace(tiny, "tickets: {memory: task, type: integer}", "tickets: {memory: task, type: integr}", 1)
	broken = strings.Replace(broken, "episode_id: a2, ", "", 1)
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	_, err := Load(path)
	require.ErrorContains(t, err, "steps[1].episode")
	require.ErrorContains(t, err, "integr", "the inline schema's problem is named in the same pass")

	typo := strings.Replace(tiny, "{subject: ana, attribute: tickets, value: 3}", "{subject: ana, attribute: tickts, value: 3}", 1)
	require.NoError(t, os.WriteFile(path, []byte(typo), 0o644))
	_, err = Load(path)
	require.ErrorContains(t, err, `steps[1].gold[0].attribute: "tickts" is declared by no schema of tenant alpha`)
}
