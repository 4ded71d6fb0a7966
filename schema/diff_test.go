package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, src string) *Schema {
	t.Helper()
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	return s
}

func TestDiff(t *testing.T) {
	t.Parallel()
	v1 := mustParse(t, `
name: support
retention: {session: 30d, standard: 2y}
episode_retention: session
memory_types: [billing]
attributes:
  tier: {memory: account, type: {enum: [free, pro]}}
  email: {memory: profile, type: string, description: old}
  age: {memory: profile, type: integer, conflict: reject, aliases: [years]}
  address: {memory: profile, json_schema: {type: object}}
migrations:
  - name: a
    rename: {from: old_a, to: email}
  - name: b
    retype: {attribute: age, transform: "int(value)"}
`)
	v2 := mustParse(t, `
name: support-agent
retention: {session: 60d, legal_hold: forever}
source_ranks: [user_confirmed, tool]
memory_types: [ledger]
entities: [account]
attributes:
  plan: {memory: compliance, type: {enum: [free, pro, enterprise]}}
  email: {memory: profile, type: string, description: new, sensitive: true, cardinality: many}
  age: {memory: profile, type: number, conflict: latest_recorded, retention: legal_hold}
  address: {memory: profile, json_schema: {type: object, required: [city]}}
  account: {memory: relation, type: {ref: account}}
migrations:
  - name: b
    retype: {attribute: age, transform: "double(value)"}
  - name: tier-to-plan
    rename: {from: tier, to: plan}
    dual_read_until: 2027-01-31T00:00:00Z
  - name: a
    rename: {from: old_a, to: email}
`)
	require.Equal(t, []string{
		"~ name support -> support-agent",
		"+ retention class legal_hold forever",
		"~ retention class session: 30d -> 60d",
		"- retention class standard",
		"~ episode_retention session -> (none)",
		"~ source_ranks user_confirmed, tool, event, message, inferred -> user_confirmed, tool",
		"- memory type billing",
		"+ memory type ledger",
		"~ entities: any name -> only those listed",
		"+ entity account",
		"+ attribute account (relation, ref account)",
		"~ attribute address: json_schema changed",
		"~ attribute age: type integer -> number",
		"~ attribute age: conflict reject -> latest_recorded",
		"~ attribute age: retention (none) -> legal_hold",
		"~ attribute age: aliases [years] -> (none)",
		"~ attribute email: cardinality one -> many",
		"~ attribute email: sensitive false -> true",
		"~ attribute email: description changed",
		"+ attribute plan (compliance, enum)",
		"- attribute tier",
		"~ migration b: transform age: int(value) -> double(value)",
		"+ migration tier-to-plan (rename tier -> plan)",
		"~ migration order: a, b -> b, a",
	}, Diff(v1, v2))

	// Going back lists the reverse changes.
	back := Diff(v2, v1)
	require.Contains(t, back, "- attribute plan")
	require.Contains(t, back, "+ attribute tier (account, enum)")
	require.Contains(t, back, "- migration tier-to-plan")
	require.Contains(t, back, "~ entities: only those listed -> any name")
}

func TestDiffSmall(t *testing.T) {
	t.Parallel()
	base := "attributes:\n  plan: {memory: profile, type: {enum: [a, b]}}\n"
	for _, c := range []struct {
		old, new string
		want     []string
	}{
		{base, base, []string{}},
		{base, "attributes:\n  plan: {memory: profile, type: {enum: [a, b]}, conflict: latest_recorded}\n",
			[]string{"~ attribute plan: conflict reject -> latest_recorded"}},
		{base, "attributes:\n  plan: {memory: profile, type: {enum: [a, c]}}\n",
			[]string{`~ attribute plan: type enum ["a", "b"] -> enum ["a", "c"]`}},
		{base, "attributes:\n  plan: {memory: task, type: {ref: account}}\n",
			[]string{"~ attribute plan: memory profile -> task", "~ attribute plan: type enum [\"a\", \"b\"] -> ref account"}},
		{base + "migrations:\n  - name: m\n    rename: {from: tier, to: plan}\n",
			base + "migrations:\n  - name: m\n    rename: {from: tier, to: plan}\n    dual_read_until: 2027-01-31T00:00:00Z\n",
			[]string{"~ migration m: dual_read_until (none) -> 2027-01-31T00:00:00Z"}},
		{base + "migrations:\n  - name: m\n    rename: {from: tier, to: plan}\n",
			base + "migrations:\n  - name: m\n    rename: {from: level, to: plan}\n",
			[]string{"~ migration m: rename tier -> plan -> rename level -> plan"}},
		{"{}", "retention: {s: 12h}\nattributes:\n  x: {memory: profile, type: string}\nmigrations:\n  - name: m\n    split: {from: y, into: {x: value}}\n",
			[]string{"+ retention class s 12h", "+ attribute x (profile, string)", "+ migration m (split y -> x)"}},
	} {
		require.Equal(t, c.want, Diff(mustParse(t, c.old), mustParse(t, c.new)), "%s\n->\n%s", c.old, c.new)
	}
	// A schema diffed against itself, or nil against nil, is unchanged.
	ex := mustParse(t, string(Example()))
	require.Equal(t, []string{}, Diff(ex, ex))
	require.Equal(t, []string{}, Diff(nil, nil))
	require.Len(t, Diff(nil, ex), len(Diff(ex, nil)))
	require.Contains(t, Diff(nil, ex), "+ attribute address (profile, json_schema)")
	require.Contains(t, Diff(ex, nil), "- attribute address")
}
