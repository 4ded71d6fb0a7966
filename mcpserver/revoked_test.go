package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestRevokedPreference is issue 26's support conversation through the
// tools: a preference remembered, then revoked with the words that say
// so. recall's none line names what ended it; with evidence always, the
// stale statement is marked below the one that ended it; another tenant
// sees none of it.
func TestRevokedPreference(t *testing.T) {
	st := openStore(t)
	acme := connect(t, st, "acme", sgam.RoleWrite)
	globex := connect(t, st, "globex", sgam.RoleWrite)

	first, msg := call(t, acme, "remember", map[string]any{"subject": "mira", "attribute": "answer_style", "value": "concise",
		"valid_from": "2026-06-01T09:00:00Z", "quote": "Hi, I'm Mira. I prefer concise answers.", "session": "s1"})
	require.Empty(t, msg)
	e1 := first["episode_id"].(string)
	ended, msg := call(t, acme, "forget_value", map[string]any{"subject": "mira", "attribute": "answer_style",
		"at": "2026-06-05T09:00:00Z", "quote": "I no longer want concise answers; detail is fine.", "session": "s2"})
	require.Empty(t, msg)
	e6 := ended["episode_id"].(string)
	_, msg = call(t, globex, "remember", map[string]any{"subject": "mira", "attribute": "answer_style", "value": "concise",
		"valid_from": "2026-06-01T09:00:00Z", "quote": "Mira prefers concise answers."})
	require.Empty(t, msg)

	q := "Does Mira still prefer concise answers?"
	now, _ := call(t, acme, "recall", map[string]any{"question": q})
	require.Empty(t, now["facts"])
	require.Contains(t, now["rendered"], "- none: no value of answer_style of mira since 2026-06-05 (revoked by "+e6+`: "I no longer want concise answers; detail is fine.")`)

	res, err := acme.CallTool(context.Background(), &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"question": q, "evidence": "always", "evidence_limit": 2}})
	require.NoError(t, err)
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, `(superseded: mira.answer_style "concise" revoked 2026-06-05 by `+e6+`)`)
	require.Less(t, strings.Index(text, "- "+e6+" |"), strings.Index(text, "- "+e1+" |"), text)

	other, _ := call(t, globex, "recall", map[string]any{"question": q, "evidence": "always"})
	require.Equal(t, "concise", facts(t, other)[0]["value"], "globex's own value, current there")
	require.NotContains(t, other["rendered"], "superseded")
	require.NotContains(t, other["rendered"], e6)
}
