package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestParseExample(t *testing.T) {
	t.Parallel()
	s, err := Parse(Example())
	require.NoError(t, err)
	require.Equal(t, "support-agent", s.Name)

	// The example shows every feature.
	types, policies := map[string]bool{}, map[Policy]bool{}
	var many, sensitive, aliases, descriptions, retention bool
	for _, a := range s.Attributes {
		types[a.Type] = true
		policies[a.Conflict] = true
		many = many || a.Cardinality == Many
		sensitive = sensitive || a.Sensitive
		aliases = aliases || len(a.Aliases) > 0
		descriptions = descriptions || a.Description != ""
		retention = retention || a.Retention != ""
	}
	for _, typ := range []string{TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeDate, TypeDatetime, TypeEnum, TypeRef, TypeJSONSchema} {
		require.True(t, types[typ], "the example uses type %s", typ)
	}
	for _, p := range []Policy{Reject, PreferSource, LatestRecorded, Review} {
		require.True(t, policies[p], "the example uses conflict %s", p)
	}
	require.True(t, many && sensitive && aliases && descriptions && retention)
	_, forever, ok := s.RetentionTTL("legal_hold")
	require.True(t, ok && forever)
	require.NotEmpty(t, s.EpisodeRetention)
	require.NotNil(t, s.Entities)

	// Its commented-out migrations are valid too, once uncommented.
	text := string(Example())
	i := strings.Index(text, "# migrations:")
	require.Positive(t, i)
	var b strings.Builder
	b.WriteString(text[:i])
	for _, line := range strings.Split(text[i:], "\n") {
		b.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ") + "\n")
	}
	s, err = Parse([]byte(b.String()))
	require.NoError(t, err)
	require.Len(t, s.Migrations, 3)
	require.Equal(t, []string{KindRename, KindRetype, KindSplit}, []string{s.Migrations[0].Kind, s.Migrations[1].Kind, s.Migrations[2].Kind})
	v, err := s.Transform(s.Migrations[2], "email", json.RawMessage(`"Ada Lovelace <ada@example.com>"`))
	require.NoError(t, err)
	require.Equal(t, `"ada@example.com"`, string(v))
}

func TestParseFields(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`# a schema
name: support-agent
retention:
  session: 30d
  standard: 2y
  legal_hold: forever
  weekly: 6w
  half_day: 12h
episode_retention: standard
source_ranks: [user_confirmed, tool, message]
memory_types: [preference, account, compliance]
entities: [customer, account]
attributes:
  passport_deadline:
    memory: task
    type: date
    cardinality: one
    conflict: reject
    sensitive: false
    retention: standard
    description: "When the customer's passport must be renewed."
    aliases: [passport_due]
  plan:
    memory: account
    type: {enum: [free, pro, enterprise]}
  account:
    memory: profile
    type: {ref: account}
  allergies:
    memory: profile
    type: string
    cardinality: many
    conflict: review
    sensitive: true
  address:
    memory: profile
    json_schema: {type: object, properties: {city: {type: string}, zip: {type: string, pattern: "^[0-9]{4,5}$"}}, required: [city]}
  price_cents: {memory: account, type: string}
  first_name: {memory: profile, type: string}
  last_name: {memory: profile, type: string}
migrations:
  - name: tier-to-plan
    rename: {from: tier, to: plan}
    dual_read_until: 2027-01-31T01:00:00+01:00
  - name: price-to-cents
    retype: {attribute: price_cents, transform: "string(int(value) * 100)"}
  - name: split-name
    split: {from: full_name, into: {last_name: "value.split(' ')[1]", first_name: "value.split(' ')[0]"}}
`))
	require.NoError(t, err)
	require.Equal(t, "support-agent", s.Name)
	require.Equal(t, map[string]Retention{
		"session":    {Name: "session", TTL: 30 * 24 * time.Hour},
		"standard":   {Name: "standard", TTL: 2 * 365 * 24 * time.Hour},
		"legal_hold": {Name: "legal_hold", Forever: true},
		"weekly":     {Name: "weekly", TTL: 6 * 7 * 24 * time.Hour},
		"half_day":   {Name: "half_day", TTL: 12 * time.Hour},
	}, s.Retention)
	require.Equal(t, "standard", s.EpisodeRetention)
	require.Equal(t, []string{"user_confirmed", "tool", "message"}, s.SourceRanks)
	require.Equal(t, builtinMemoryTypes, s.MemoryTypes, "listing built-ins adds nothing")
	require.Equal(t, []string{"customer", "account"}, s.Entities)

	require.Len(t, s.Attributes, 8)
	pd := s.Attributes[0]
	require.Equal(t, &Attribute{
		Name: "passport_deadline", Memory: "task", Type: TypeDate, Cardinality: One, Conflict: Reject,
		Retention: "standard", Description: "When the customer's passport must be renewed.",
		Aliases: []string{"passport_due"}, Line: 14,
	}, pd)
	byAlias, ok := s.Attribute("passport_due")
	require.True(t, ok)
	require.Same(t, pd, byAlias)
	_, ok = s.Attribute("tier")
	require.False(t, ok, "a renamed name resolves only through DualRead")

	plan, _ := s.Attribute("plan")
	require.Equal(t, TypeEnum, plan.Type)
	require.Equal(t, []json.RawMessage{json.RawMessage(`"free"`), json.RawMessage(`"pro"`), json.RawMessage(`"enterprise"`)}, plan.Enum)
	require.Equal(t, 23, plan.Line)
	acct, _ := s.Attribute("account")
	require.Equal(t, TypeRef, acct.Type)
	require.Equal(t, "account", acct.Ref)
	all, _ := s.Attribute("allergies")
	require.Equal(t, Many, all.Cardinality)
	require.Equal(t, Review, all.Conflict)
	require.True(t, all.Sensitive)
	addr, _ := s.Attribute("address")
	require.Equal(t, TypeJSONSchema, addr.Type)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{4,5}$"}},"required":["city"]}`, string(addr.JSONSchema))

	require.Len(t, s.Migrations, 3)
	m := s.Migrations[0]
	require.Equal(t, KindRename, m.Kind)
	require.Equal(t, "tier", m.From)
	require.Equal(t, []string{"plan"}, m.To)
	require.Nil(t, m.Transforms)
	require.Equal(t, time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC), *m.DualReadUntil)
	require.Equal(t, 42, m.Line)
	m = s.Migrations[1]
	require.Equal(t, KindRetype, m.Kind)
	require.Equal(t, "price_cents", m.From)
	require.Equal(t, []string{"price_cents"}, m.To)
	require.Equal(t, map[string]string{"price_cents": "string(int(value) * 100)"}, m.Transforms)
	m = s.Migrations[2]
	require.Equal(t, KindSplit, m.Kind)
	require.Equal(t, "full_name", m.From)
	require.Equal(t, []string{"first_name", "last_name"}, m.To, "targets sorted")
	require.Len(t, m.Transforms, 2)

	require.Equal(t, 3, s.Rank("user_confirmed"))
	require.Equal(t, 1, s.Rank("message"))
	require.Equal(t, 0, s.Rank("inferred"))
	require.Equal(t, 0, s.Rank(sgam.KindUnknown))
	ttl, forever, ok := s.RetentionTTL("session")
	require.Equal(t, []any{30 * 24 * time.Hour, false, true}, []any{ttl, forever, ok})
	_, _, ok = s.RetentionTTL("nope")
	require.False(t, ok)

	until := time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)
	name, ok := s.DualRead("tier", until.Add(-time.Microsecond))
	require.True(t, ok)
	require.Equal(t, "plan", name)
	_, ok = s.DualRead("tier", until)
	require.False(t, ok, "the window is half-open")
	_, ok = s.DualRead("full_name", until.Add(-time.Hour))
	require.False(t, ok, "only renames dual-read")
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	// An empty document is refused: applied, it would refuse every write.
	for _, src := range []string{"", "  \n", "# nothing\n", "---\n", "null"} {
		_, err := Parse([]byte(src))
		require.ErrorContains(t, err, "the schema is empty", "%q", src)
	}
	for _, src := range []string{"{}", "attributes:\n", "attributes: {}\n"} {
		s, err := Parse([]byte(src))
		require.NoError(t, err, "%q", src)
		require.Equal(t, []string{"user_confirmed", "tool", "event", "message", "inferred"}, s.SourceRanks)
		require.Equal(t, 5, s.Rank("user_confirmed"))
		require.Equal(t, 1, s.Rank("inferred"))
		require.Equal(t, builtinMemoryTypes, s.MemoryTypes)
		require.Nil(t, s.Entities)
		require.Empty(t, s.Attributes)
		require.Empty(t, Diff(nil, s))
	}
	s, err := Parse([]byte(`{"attributes": {"x": {"memory": "profile", "type": {"ref": "anything"}}}}`))
	require.NoError(t, err, "JSON is YAML; without entities any ref target is accepted")
	a, _ := s.Attribute("x")
	require.Equal(t, One, a.Cardinality)
	require.Equal(t, Reject, a.Conflict)
	require.Equal(t, "anything", a.Ref)
}

type wantProblem struct {
	line int
	path string
	msg  string // a part of the message
}

// parseErrorCases are broken schema files and the problems Parse reports
// about them; FuzzParse starts from them too.
var parseErrorCases = []struct {
	name string
	src  string
	want []wantProblem
}{
	{"not yaml", "attributes: [a\n", []wantProblem{{1, "", "not valid YAML"}}},
	{"top level list", "- a\n- b\n", []wantProblem{{1, "", "must be a mapping"}}},
	{"unknown top key", "name: x\nattribute:\n  a: {memory: profile, type: string}\n", []wantProblem{{2, "", `unknown key "attribute" (did you mean attributes?)`}}},
	{"unknown attribute key", "attributes:\n  plan:\n    memory: profile\n    type: string\n    cardinalty: many\n",
		[]wantProblem{{5, "attributes.plan", `unknown key "cardinalty" (did you mean cardinality?)`}}},
	{"missing memory", "attributes:\n  plan:\n    type: string\n", []wantProblem{{2, "attributes.plan", "memory is required"}}},
	{"unknown memory", "attributes:\n  plan:\n    memory: profle\n    type: string\n", []wantProblem{{3, "attributes.plan.memory", `"profle" is not a memory type (did you mean profile?)`}}},
	{"missing type", "attributes:\n  plan:\n    memory: profile\n", []wantProblem{{2, "attributes.plan", "type is required"}}},
	{"both types", "attributes:\n  plan:\n    memory: profile\n    type: string\n    json_schema: {type: string}\n", []wantProblem{{5, "attributes.plan.json_schema", "not both"}}},
	{"unknown type", "attributes:\n  plan:\n    memory: profile\n    type: strng\n", []wantProblem{{4, "attributes.plan.type", `unknown type "strng" (did you mean string?)`}}},
	{"enum shorthand", "attributes:\n  plan:\n    memory: profile\n    type: enum\n", []wantProblem{{4, "attributes.plan.type", "{enum: [a, b, c]}"}}},
	{"type map two keys", "attributes:\n  plan:\n    memory: profile\n    type: {enum: [a], ref: b}\n", []wantProblem{{4, "attributes.plan.type", "exactly one key"}}},
	{"empty enum", "attributes:\n  plan:\n    memory: profile\n    type: {enum: []}\n", []wantProblem{{4, "attributes.plan.type.enum", "non-empty list"}}},
	{"duplicate enum", "attributes:\n  plan:\n    memory: profile\n    type:\n      enum:\n        - 1\n        - 1.0\n", []wantProblem{{7, "attributes.plan.type.enum[1]", "1 is listed twice"}}},
	{"null enum value", "attributes:\n  plan:\n    memory: profile\n    type: {enum: [a, null]}\n", []wantProblem{{4, "attributes.plan.type.enum[1]", "not null"}}},
	{"undeclared entity", "entities: [customer]\nattributes:\n  acct:\n    memory: profile\n    type: {ref: acount}\n", []wantProblem{{5, "attributes.acct.type.ref", `"acount" is not a declared entity`}}},
	{"bad cardinality", "attributes:\n  a:\n    memory: profile\n    type: string\n    cardinality: several\n", []wantProblem{{5, "attributes.a.cardinality", `"several" is not one of one, many`}}},
	{"bad conflict", "attributes:\n  a:\n    memory: profile\n    type: string\n    conflict: latest\n", []wantProblem{{5, "attributes.a.conflict", "is not one of"}}},
	{"sensitive string", "attributes:\n  a:\n    memory: profile\n    type: string\n    sensitive: \"yes\"\n", []wantProblem{{5, "attributes.a.sensitive", "must be true or false"}}},
	{"undeclared retention", "retention: {standard: 2y}\nattributes:\n  a:\n    memory: profile\n    type: string\n    retention: standrd\n",
		[]wantProblem{{6, "attributes.a.retention", `"standrd" is not a declared retention class (did you mean standard?)`}}},
	{"bad ttl", "retention:\n  session: 30 days\n  zero: 0d\n  long: 999y\n  num: 30\n",
		[]wantProblem{{2, "retention.session", "not a duration"}, {3, "retention.zero", "is zero"}, {4, "retention.long", "longer than 200 years"}, {5, "retention.num", "not a duration"}}},
	{"episode retention", "episode_retention: session\n", []wantProblem{{1, "episode_retention", "not a declared retention class"}}},
	{"bad attribute name", "attributes:\n  \"-plan\":\n    memory: profile\n    type: string\n", []wantProblem{{2, "attributes.-plan", "not a valid name"}}},
	{"long attribute name", "attributes:\n  " + strings.Repeat("a", 129) + ": {memory: profile, type: string}\n", []wantProblem{{2, "attributes." + strings.Repeat("a", 129), "the limit is 128"}}},
	{"duplicate attribute", "attributes:\n  a: {memory: profile, type: string}\n  a: {memory: profile, type: integer}\n", []wantProblem{{3, "attributes.a", `duplicate key "a" (first at line 2)`}}},
	{"alias collides with attribute", "attributes:\n  a: {memory: profile, type: string, aliases: [b]}\n  b: {memory: profile, type: string}\n",
		[]wantProblem{{2, "attributes.a.aliases[0]", `"b" is declared as an attribute`}}},
	{"alias collides with alias", "attributes:\n  a: {memory: profile, type: string, aliases: [c]}\n  b: {memory: profile, type: string, aliases: [c]}\n",
		[]wantProblem{{3, "attributes.b.aliases[0]", `"c" is already an alias of a`}}},
	{"duplicate alias", "attributes:\n  a: {memory: profile, type: string, aliases: [c, c]}\n", []wantProblem{{2, "attributes.a.aliases[1]", "listed twice"}}},
	{"unknown kind in ranks", "source_ranks: [user_confirmed, unknown]\n", []wantProblem{{1, "source_ranks[1]", "placeholder"}}},
	{"empty ranks", "source_ranks: []\n", []wantProblem{{1, "source_ranks", "at least one"}}},
	{"json_schema not object", "attributes:\n  a:\n    memory: profile\n    json_schema: string\n", []wantProblem{{4, "attributes.a.json_schema", "must be a JSON Schema object"}}},
	{"json_schema invalid", "attributes:\n  a:\n    memory: profile\n    json_schema:\n      type: object\n      properties:\n        zip:\n          type: strin\n",
		[]wantProblem{{8, "attributes.a.json_schema.properties.zip.type", "not a valid JSON Schema"}}},
	{"json_schema bad pattern", "attributes:\n  a:\n    memory: profile\n    json_schema:\n      type: string\n      pattern: \"[\"\n",
		[]wantProblem{{6, "attributes.a.json_schema.pattern", "regex"}}},
	{"json_schema remote ref", "attributes:\n  a:\n    memory: profile\n    json_schema: {$ref: \"https://example.com/s.json\"}\n",
		[]wantProblem{{4, "attributes.a.json_schema", "may only refer within itself"}}},
	{"json_schema file ref", "attributes:\n  a:\n    memory: profile\n    json_schema: {$ref: \"file:///etc/passwd\"}\n",
		[]wantProblem{{4, "attributes.a.json_schema", "may only refer within itself"}}},
	{"json_schema infinity", "attributes:\n  a:\n    memory: profile\n    json_schema: {type: number, maximum: .inf}\n",
		[]wantProblem{{4, "attributes.a.json_schema.maximum", "not a finite number"}}},
	{"anchor", "retention:\n  a: &x 30d\n  b: *x\n", []wantProblem{{2, "retention.a", "anchors"}, {3, "retention.b", "anchors"}}},
	{"tag", "name: !!str x\n", []wantProblem{{1, "name", "tags"}}},
	{"two documents", "name: a\n---\nname: b\n", []wantProblem{{3, "", "2 YAML documents"}}},
	{"nul", "name: \"a\\0b\"\n", []wantProblem{{1, "name", "U+0000"}}},
	{"control character", "name: a\n\x01\n", []wantProblem{{2, "", "control character"}}},
	{"invalid utf-8", "name: a\nname2: \xff\n", []wantProblem{{2, "", "UTF-8"}}},
	{"too deep", "attributes:\n  a:\n    memory: profile\n    json_schema: " + strings.Repeat("{items: ", 70) + "{}" + strings.Repeat("}", 70) + "\n", []wantProblem{{4, "", "deeper than 64"}}},
	{"too deep block", strings.Repeat("- ", 300) + "x\n", []wantProblem{{1, "", "deeper than 64"}}},
	{"migration both kinds", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n    retype: {attribute: plan, transform: value}\n",
		[]wantProblem{{4, "migrations[0]", "exactly one of rename, retype or split"}}},
	{"migration no name", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - rename: {from: tier, to: plan}\n",
		[]wantProblem{{4, "migrations[0]", "name is required"}}},
	{"migration duplicate name", "attributes:\n  plan: {memory: profile, type: string}\n  b: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n  - name: m\n    rename: {from: a, to: b}\n",
		[]wantProblem{{7, "migrations[1].name", `"m" is already the name of the migration at line 5`}}},
	{"rename from declared", "attributes:\n  plan: {memory: profile, type: string}\n  tier: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n",
		[]wantProblem{{6, "migrations[0].rename.from", "still declared"}}},
	{"rename to undeclared", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plans}\n",
		[]wantProblem{{5, "migrations[0].rename.to", `"plans" is not a declared attribute (did you mean plan?)`}}},
	{"rename to alias", "attributes:\n  plan: {memory: profile, type: string, aliases: [p]}\nmigrations:\n  - name: m\n    rename: {from: tier, to: p}\n",
		[]wantProblem{{5, "migrations[0].rename.to", "alias of plan"}}},
	{"rename from alias of another", "attributes:\n  plan: {memory: profile, type: string}\n  b: {memory: profile, type: string, aliases: [tier]}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n",
		[]wantProblem{{6, "migrations[0].rename.from", "alias of b"}}},
	{"renamed twice", "attributes:\n  plan: {memory: profile, type: string}\n  b: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n  - name: n\n    rename: {from: tier, to: b}\n",
		[]wantProblem{{7, "migrations[1].rename.from", "already migrated by m"}}},
	{"dual read on retype", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    retype: {attribute: plan, transform: value}\n    dual_read_until: 2027-01-01T00:00:00Z\n",
		[]wantProblem{{6, "migrations[0].dual_read_until", "only a rename"}}},
	{"dual read without offset", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    rename: {from: tier, to: plan}\n    dual_read_until: 2027-01-01T00:00:00\n",
		[]wantProblem{{6, "migrations[0].dual_read_until", "no UTC offset"}}},
	{"retype undeclared", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    retype: {attribute: price, transform: value}\n",
		[]wantProblem{{5, "migrations[0].retype.attribute", "not a declared attribute"}}},
	{"retype no transform", "attributes:\n  plan: {memory: profile, type: string}\nmigrations:\n  - name: m\n    retype: {attribute: plan}\n",
		[]wantProblem{{5, "migrations[0].retype", "transform is required"}}},
	{"cel compile error", "attributes:\n  price: {memory: profile, type: string}\nmigrations:\n  - name: m\n    retype:\n      attribute: price\n      transform: \"string(int(valeu) * 100)\"\n",
		[]wantProblem{{7, "migrations[0].retype.transform", "column 12: undeclared reference to 'valeu'"}}},
	{"cel syntax error", "attributes:\n  price: {memory: profile, type: string}\nmigrations:\n  - name: m\n    retype: {attribute: price, transform: \"value +\"}\n",
		[]wantProblem{{5, "migrations[0].retype.transform", "does not compile"}}},
	{"split empty", "attributes:\n  a: {memory: profile, type: string}\nmigrations:\n  - name: m\n    split: {from: x, into: {}}\n",
		[]wantProblem{{5, "migrations[0].split.into", "must map each new attribute"}}},
	{"split undeclared target", "attributes:\n  a: {memory: profile, type: string}\nmigrations:\n  - name: m\n    split:\n      from: x\n      into:\n        a: value\n        b: value\n",
		[]wantProblem{{9, "migrations[0].split.into.b", `"b" is not a declared attribute`}}},
	{"migrations not a list", "migrations: {name: m}\n", []wantProblem{{1, "migrations", "must be a list"}}},
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range parseErrorCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse([]byte(c.src))
			require.Nil(t, s)
			requireProblems(t, err, c.want)
		})
	}
}

func requireProblems(t *testing.T, err error, want []wantProblem) {
	t.Helper()
	require.Error(t, err)
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "%T", err)
	got := make([]string, len(pe.Problems))
	for i, p := range pe.Problems {
		got[i] = fmt.Sprintf("%d %s %s", p.Line, p.Path, p.Message)
	}
	require.Len(t, pe.Problems, len(want), "problems:\n%s", strings.Join(got, "\n"))
	for i, w := range want {
		p := pe.Problems[i]
		require.Equal(t, w.line, p.Line, "problem %d: %s", i, got[i])
		require.Equal(t, w.path, p.Path, "problem %d: %s", i, got[i])
		require.Contains(t, p.Message, w.msg, "problem %d", i)
	}
}

func TestParseManyProblems(t *testing.T) {
	t.Parallel()
	src := `name: support
retention:
  session: 30x
attributes:
  plan:
    memory: accounts
    type: {enum: [free, pro]}
  tier:
    memory: profile
    type: strin
    cardinalty: many
  address:
    json_schema: {type: object}
migrations:
  - name: tier-to-plan
    rename: {from: tier, to: plan}
`
	_, err := Parse([]byte(src))
	requireProblems(t, err, []wantProblem{
		{3, "retention.session", "not a duration"},
		{6, "attributes.plan.memory", `"accounts" is not a memory type`},
		{10, "attributes.tier.type", "unknown type"},
		{11, "attributes.tier", "unknown key"},
		{12, "attributes.address", "memory is required"},
		{16, "migrations[0].rename.from", `"tier" is still declared`},
	})
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
	require.Equal(t, "schema", sgam.ErrorField(err))
	require.True(t, strings.HasPrefix(err.Error(), "line 3: retention.session: "), err.Error())
	require.Len(t, strings.Split(err.Error(), "\n"), 6)
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	_, err := Parse(make([]byte, MaxFileBytes+1))
	requireProblems(t, err, []wantProblem{{0, "", "the limit is 1048576"}})

	var b strings.Builder
	b.WriteString("attributes:\n")
	for i := range MaxAttributes + 1 {
		fmt.Fprintf(&b, "  a%d: {memory: profile, type: string}\n", i)
	}
	_, err = Parse([]byte(b.String()))
	requireProblems(t, err, []wantProblem{{2, "attributes", "declares 10001 attributes; the limit is 10000"}})

	b.Reset()
	b.WriteString("attributes:\n")
	for i := range 150 {
		fmt.Fprintf(&b, "  a%d: {memory: nope, type: string}\n", i)
	}
	_, err = Parse([]byte(b.String()))
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	require.Len(t, pe.Problems, maxProblems+1)
	require.Equal(t, "and 50 more problems", pe.Problems[maxProblems].Message)

	// A file at the limits parses in reasonable time.
	b.Reset()
	b.WriteString("attributes:\n")
	for i := range MaxAttributes {
		fmt.Fprintf(&b, "  attribute_%05d:\n    memory: profile\n    type: {enum: [a, b, c, d]}\n    description: %s\n", i, strings.Repeat("x", 16))
	}
	require.Greater(t, b.Len(), MaxFileBytes*9/10)
	require.LessOrEqual(t, b.Len(), MaxFileBytes)
	start := time.Now()
	s, err := Parse([]byte(b.String()))
	require.NoError(t, err)
	require.Len(t, s.Attributes, MaxAttributes)
	require.Less(t, time.Since(start), 30*time.Second)
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	s, err := Parse(Example())
	require.NoError(t, err)
	requireRoundTrip(t, s)

	// Spelling does not change the canonical form.
	a, err := Parse([]byte("retention: {r: 14d}\nattributes:\n  x: {memory: profile, type: {enum: [1.50, b]}, conflict: reject, cardinality: one}\n"))
	require.NoError(t, err)
	b, err := Parse([]byte(`{"attributes": {"x": {"type": {"enum": [15e-1, "b"]}, "memory": "profile"}}, "retention": {"r": "2w"}}`))
	require.NoError(t, err)
	require.Equal(t, string(a.Canonical()), string(b.Canonical()))
	require.Equal(t, a.Hash(), b.Hash())
	require.Len(t, a.Hash(), 64)

	// What it means does.
	c, err := Parse([]byte("retention: {r: 15d}\nattributes:\n  x: {memory: profile, type: {enum: [1.50, b]}}\n"))
	require.NoError(t, err)
	require.NotEqual(t, a.Hash(), c.Hash())
}

// requireRoundTrip checks that Parse(Canonical()) gives an equal schema.
func requireRoundTrip(t testing.TB, s *Schema) {
	t.Helper()
	canon := s.Canonical()
	again, err := Parse(canon)
	require.NoError(t, err, "canonical form:\n%s", canon)
	require.Equal(t, string(canon), string(again.Canonical()))
	require.Equal(t, s.Hash(), again.Hash())
	require.Equal(t, comparable(s), comparable(again))
}

// comparable strips what a round trip through Canonical does not keep:
// line numbers, compiled programs and the lookup index.
func comparable(s *Schema) Schema {
	c := *s
	c.byName = nil
	c.Attributes = nil
	for _, a := range s.Attributes {
		x := *a
		x.Line, x.compiled = 0, nil
		c.Attributes = append(c.Attributes, &x)
	}
	c.Migrations = nil
	for _, m := range s.Migrations {
		x := *m
		x.Line, x.programs = 0, nil
		c.Migrations = append(c.Migrations, &x)
	}
	return c
}

func BenchmarkParseExample(b *testing.B) {
	for b.Loop() {
		if _, err := Parse(Example()); err != nil {
			b.Fatal(err)
		}
	}
}

// Text that YAML treats specially survives the round trip through
// Canonical, whose JSON the YAML parser reads back.
func TestCanonicalStrings(t *testing.T) {
	t.Parallel()
	tricky := []string{
		"plain", "with: colon", "# hash", "- dash", "'single'", `"double"`, `back\slash`, "tab\there",
		"line\nbreak", "trailing newline\n", "  leading space", "unicode é ✓ 𝄞", "\u2028\u2029", "\u007f", "<html> & </html>",
		"null", "true", "1e2", "0x1F", ".inf", "~", "{flow}", "[flow]", "*alias", "&anchor", "!tag", "%percent", "@at", "`tick`",
		"\\u0041", "\r\n", "\x1b[31m",
	}
	for _, s := range tricky {
		doc := map[string]any{
			"name": "n",
			"attributes": map[string]any{
				"a": map[string]any{"memory": "profile", "type": map[string]any{"enum": []any{s, s + "x"}}, "description": s},
				"b": map[string]any{"memory": "profile", "json_schema": map[string]any{
					"type": "object", "properties": map[string]any{s: map[string]any{"const": s}},
				}},
			},
		}
		raw, err := json.Marshal(doc)
		require.NoError(t, err)
		schema, err := Parse(raw)
		if err != nil {
			// Descriptions refuse control characters other than newline and
			// tab; nothing else may fail.
			require.Contains(t, err.Error(), "control character", "%q", s)
			continue
		}
		a, _ := schema.Attribute("a")
		require.Equal(t, s, a.Description)
		require.Equal(t, string(jsonString(s)), string(a.Enum[0]))
		requireRoundTrip(t, schema)
		v, err := a.Value(jsonString(s))
		require.NoError(t, err, "%q", s)
		require.Equal(t, string(a.Enum[0]), string(v))
	}
}

// A file saved on Windows, with a byte order mark and CRLF line ends,
// reads the same.
func TestParseCRLF(t *testing.T) {
	t.Parallel()
	crlf := "\xef\xbb\xbf" + strings.ReplaceAll(string(Example()), "\n", "\r\n")
	a, err := Parse([]byte(crlf))
	require.NoError(t, err)
	b, err := Parse(Example())
	require.NoError(t, err)
	require.Equal(t, string(b.Canonical()), string(a.Canonical()))
}
