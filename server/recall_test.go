package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecallRoute(t *testing.T) { eachStore(t, testRecallRoute) }

// testRecallRoute: a read key recalls its tenant's facts and episodes, at
// the instant the question names; another tenant's key, asking the same
// words of a tenant with the same words, cites only its own.
func testRecallRoute(t *testing.T, open opener) {
	e := newEnv(t, open)
	for _, w := range []struct{ key, body string }{
		{"acme-write", `{"episode_id":"e1","content":"Mira: my passport deadline is July 15.","occurred_at":"2026-06-01T09:00:00Z"}`},
		{"acme-write", `{"episode_id":"e2","content":"Mira: correction, the deadline is June 30.","occurred_at":"2026-06-03T10:00:00Z"}`},
		{"globex-admin", `{"episode_id":"g1","content":"Mira: my passport deadline is September 9.","occurred_at":"2026-06-01T09:00:00Z"}`},
	} {
		st, body := e.do("POST", "/v1/episodes", w.key, w.body)
		require.Equal(t, 200, st, "%v", body)
	}
	for _, w := range []struct{ key, body string }{
		{"acme-write", `{"subject":"mira","attribute":"passport_deadline","value":"2026-07-15","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`},
		{"acme-write", `{"subject":"mira","attribute":"passport_deadline","value":"2026-06-30","valid_from":"2026-06-03T10:00:00Z","source":"e2"}`},
		{"globex-admin", `{"subject":"mira","attribute":"passport_deadline","value":"2026-09-09","valid_from":"2026-06-01T09:00:00Z","source":"g1"}`},
	} {
		st, body := e.do("POST", "/v1/facts", w.key, w.body)
		require.Equal(t, 200, st, "%v", body)
	}

	st, body := e.do("POST", "/v1/recall", "acme-read", `{"question":"When is Mira's passport deadline?"}`)
	require.Equal(t, 200, st, "%v", body)
	facts := body["facts"].([]any)
	require.Len(t, facts, 1)
	f := facts[0].(map[string]any)
	require.Equal(t, "2026-06-30", f["value"])
	require.Equal(t, "current", f["status"])
	require.Equal(t, []any{"e2"}, f["sources"])
	require.Contains(t, body["rendered"], `"2026-06-30"`)
	require.LessOrEqual(t, body["tokens"], body["budget"])
	// The fact answers, and its line quotes e2: evidence "auto" (the
	// default) cites nothing more.
	require.Empty(t, body["evidence"])
	require.Contains(t, body["rendered"], `"Mira: correction, the deadline is June 30."`)

	// Evidence "always": e1's deadline was replaced by e2's; e1 says so,
	// below e2 (issue 26).
	st, body = e.do("POST", "/v1/recall", "acme-read", `{"question":"When is Mira's passport deadline?","evidence":"always"}`)
	require.Equal(t, 200, st, "%v", body)
	var ids []any
	for _, ev := range body["evidence"].([]any) {
		ev := ev.(map[string]any)
		ids = append(ids, ev["episode_id"])
		if ev["episode_id"] != "e1" {
			require.Nil(t, ev["superseded"], "%v", ev)
			continue
		}
		sup := ev["superseded"].([]any)
		require.Len(t, sup, 1)
		s := sup[0].(map[string]any)
		require.Equal(t, "replaced", s["how"])
		require.Equal(t, "e2", s["by_episode"])
		require.Equal(t, "2026-07-15", s["value"])
		require.Equal(t, "2026-06-03T10:00:00Z", s["until"])
	}
	require.Equal(t, []any{"e2", "e1"}, ids)
	require.Contains(t, body["rendered"], `(superseded: mira.passport_deadline "2026-07-15" replaced 2026-06-03 by e2)`)

	st, body = e.do("POST", "/v1/recall", "acme-read", `{"question":"What was Mira's passport deadline on June 2, 2026?"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "2026-07-15", body["facts"].([]any)[0].(map[string]any)["value"])
	require.Equal(t, "2026-06-02T23:59:59.999999Z", body["as_of"])

	st, body = e.do("POST", "/v1/recall", "globex-admin", `{"question":"When is Mira's passport deadline?","evidence":"always","evidence_limit":20}`)
	require.Equal(t, 200, st, "%v", body)
	require.Len(t, body["facts"], 1)
	require.Equal(t, "2026-09-09", body["facts"].([]any)[0].(map[string]any)["value"])
	for _, ev := range body["evidence"].([]any) {
		require.Equal(t, "g1", ev.(map[string]any)["episode_id"])
	}

	for _, bad := range []struct{ body, field string }{
		{`{"question":"x","budget":3}`, "budget"},
		{`{"question":"x","as_of":"soon"}`, "as_of"},
		{`{"question":"x","tenant":"globex"}`, "tenant"},
		{`{}`, "question"},
		{`{"question":"x","evidence":"sometimes"}`, "evidence"},
		{`{"question":"x","evidence":""}`, "evidence"},
		{`{"question":"x","as_of":""}`, "as_of"},
		{`{"question":"x","known_at":""}`, "known_at"},
		{`{"question":"x","evidence":"none","evidence_limit":3}`, "evidence_limit"},
	} {
		st, body = e.do("POST", "/v1/recall", "acme-read", bad.body)
		require.Equal(t, 400, st, "%s: %v", bad.body, body)
		_, field := errorOf(t, body)
		require.Equal(t, bad.field, field, bad.body)
	}
}

func TestRecallRevoked(t *testing.T) { eachStore(t, testRecallRevoked) }

// testRecallRevoked is issue 26's support conversation: Mira prefers
// concise answers (e1), then says she no longer does (e6). The none line
// names what ended the value and quotes e6; with evidence always, e1 is
// marked stale below e6; asked about the past, e1 is the answer; a second
// tenant with the same words sees none of it.
func testRecallRevoked(t *testing.T, open opener) {
	e := newEnv(t, open)
	for _, w := range []struct{ key, route, body string }{
		{"acme-write", "/v1/episodes", `{"episode_id":"e1","session":"s1","content":"Hi, I'm Mira. I prefer concise answers.","occurred_at":"2026-06-01T09:00:00Z"}`},
		{"acme-write", "/v1/facts", `{"subject":"mira","attribute":"answer_style","value":"concise","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`},
		{"acme-write", "/v1/episodes", `{"episode_id":"e4","session":"s1","content":"Thanks, that is all for today.","occurred_at":"2026-06-04T09:00:00Z"}`},
		{"acme-write", "/v1/episodes", `{"episode_id":"e6","session":"s2","content":"I no longer want concise answers; detail is fine.","occurred_at":"2026-06-05T09:00:00Z"}`},
		{"acme-write", "/v1/facts/retract", `{"subject":"mira","attribute":"answer_style","at":"2026-06-05T09:00:00Z","source":"e6"}`},
		{"globex-admin", "/v1/episodes", `{"episode_id":"g1","content":"Mira prefers concise answers, and no longer wants them.","occurred_at":"2026-06-01T09:00:00Z"}`},
	} {
		st, body := e.do("POST", w.route, w.key, w.body)
		require.Equal(t, 200, st, "%s %v", w.route, body)
	}
	q := `"Does Mira still prefer concise answers?"`

	st, body := e.do("POST", "/v1/recall", "acme-read", `{"question":`+q+`}`)
	require.Equal(t, 200, st, "%v", body)
	require.Empty(t, body["facts"])
	require.Contains(t, body["rendered"], `- none: no value of answer_style of mira since 2026-06-05 (revoked by e6: "I no longer want concise answers; detail is fine.")`)
	for _, ev := range body["evidence"].([]any) {
		require.NotEqual(t, "e1", ev.(map[string]any)["episode_id"], "the stale statement is not cited when the facts answer")
	}

	st, body = e.do("POST", "/v1/recall", "acme-read", `{"question":`+q+`,"evidence":"always","evidence_limit":2}`)
	require.Equal(t, 200, st, "%v", body)
	var ids []any
	for _, ev := range body["evidence"].([]any) {
		ids = append(ids, ev.(map[string]any)["episode_id"])
	}
	require.Equal(t, []any{"e6", "e1"}, ids, "what ended the value above the stale statement")
	require.Contains(t, body["rendered"], `(superseded: mira.answer_style "concise" revoked 2026-06-05 by e6)`)

	st, body = e.do("POST", "/v1/recall", "acme-read", `{"question":"What did Mira prefer on June 2, 2026?","subjects":["mira"],"attributes":["answer_style"]}`)
	require.Equal(t, 200, st, "%v", body)
	facts := body["facts"].([]any)
	require.Len(t, facts, 1)
	require.Equal(t, "concise", facts[0].(map[string]any)["value"])
	require.Equal(t, []any{"e1"}, facts[0].(map[string]any)["sources"])
	require.NotContains(t, body["rendered"], "superseded:")

	st, body = e.do("POST", "/v1/recall", "globex-admin", `{"question":`+q+`,"evidence":"always"}`)
	require.Equal(t, 200, st, "%v", body)
	require.Empty(t, body["facts"])
	require.NotContains(t, body["rendered"], "superseded")
	for _, ev := range body["evidence"].([]any) {
		require.Equal(t, "g1", ev.(map[string]any)["episode_id"])
	}
}
