package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

const migrateSchema = `
attributes:
  price_cents: {memory: profile, type: string}
  first_name: {memory: profile, type: string}
  last_name: {memory: profile, type: string}
  plan: {memory: profile, type: {enum: [free, pro]}}
  age: {memory: profile, type: integer}
  tags: {memory: profile, type: string, cardinality: many}
  address:
    memory: profile
    json_schema: {type: object, properties: {city: {type: string}, zip: {type: string}}, required: [city]}
migrations:
  - name: tier-to-plan
    rename: {from: tier, to: plan}
  - name: price-to-cents
    retype: {attribute: price_cents, transform: "string(int(value) * 100)"}
  - name: split-name
    split: {from: full_name, into: {first_name: "value.split(' ')[0]", last_name: "value.split(' ')[1]"}}
  - name: age-from-text
    retype: {attribute: age, transform: "int(value)"}
  - name: location-to-address
    split: {from: location, into: {address: "{'city': value.city, 'zip': value.postcode}"}}
  - name: null-out
    retype:
      attribute: plan
      transform: "null"
`

func TestTransform(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(migrateSchema))
	require.NoError(t, err)
	m := func(name string) *Migration {
		for _, m := range s.Migrations {
			if m.Name == name {
				return m
			}
		}
		t.Fatalf("no migration %s", name)
		return nil
	}
	cases := []struct {
		migration, target, old, want string
	}{
		{"price-to-cents", "price_cents", `"12"`, `"1200"`},
		{"price-to-cents", "price_cents", `12`, `"1200"`},
		{"price-to-cents", "price_cents", `12.0`, `"1200"`},
		{"split-name", "first_name", `"Ada Lovelace"`, `"Ada"`},
		{"split-name", "last_name", `"Ada Lovelace"`, `"Lovelace"`},
		{"tier-to-plan", "plan", `"pro"`, `"pro"`},
		{"age-from-text", "age", `"42"`, `42`},
		{"location-to-address", "address", `{"postcode":"0150","city":"Oslo"}`, `{"city":"Oslo","zip":"0150"}`},
	}
	for _, c := range cases {
		got, err := s.Transform(m(c.migration), c.target, json.RawMessage(c.old))
		require.NoError(t, err, "%s %s", c.migration, c.old)
		require.Equal(t, c.want, string(got), "%s %s", c.migration, c.old)
	}

	errs := []struct {
		migration, target, old string
		rule, msg              string
	}{
		// A runtime error in the expression.
		{"price-to-cents", "price_cents", `"x"`, "", "the transform failed"},
		{"split-name", "last_name", `"Ada"`, "", "the transform failed"},
		// The old value is not what the expression expects.
		{"split-name", "first_name", `42`, "", "the transform failed"},
		// A result the target's type refuses.
		{"location-to-address", "address", `{"postcode":"0150","city":7}`, "type", "must match its JSON Schema"},
		{"tier-to-plan", "plan", `"gold"`, "enum", "plan must be one of"},
		{"null-out", "plan", `"pro"`, "", "produced null"},
		// Targets the migration does not write.
		{"split-name", "plan", `"Ada Lovelace"`, "", "does not write plan"},
		{"price-to-cents", "price_cents", `null`, "", "the old value"},
	}
	for _, c := range errs {
		_, err := s.Transform(m(c.migration), c.target, json.RawMessage(c.old))
		require.Error(t, err, "%s %s", c.migration, c.old)
		var se *sgam.Error
		require.True(t, errors.As(err, &se))
		require.Equal(t, sgam.Invalid, se.Code)
		require.Equal(t, c.rule, se.Rule)
		require.Contains(t, se.Message, "migration "+c.migration, "the error names the migration")
		require.Contains(t, se.Message, "target "+c.target, "the error names the target")
		require.Contains(t, se.Message, c.msg)
	}

	_, err = s.Transform(nil, "plan", json.RawMessage(`"pro"`))
	require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
}

// A transform that runs away is stopped by the cost limit.
func TestTransformCostLimit(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`
attributes:
  x: {memory: profile, type: integer}
migrations:
  - name: slow
    retype: {attribute: x, transform: "[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, [1,2,3,4,5,6,7,8,9,10].map(f, a+b+c+d+e+f)))))).size()"}
`))
	require.NoError(t, err)
	_, err = s.Transform(s.Migrations[0], "x", json.RawMessage(`1`))
	require.Error(t, err)
	require.Contains(t, sgam.ErrorMessage(err), "cost limit")
}

// Transform on a hand-built migration compiles its expression itself.
func TestTransformHandBuilt(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("attributes:\n  n: {memory: profile, type: integer}\n"))
	require.NoError(t, err)
	m := &Migration{Name: "double", Kind: KindRetype, From: "n", To: []string{"n"}, Transforms: map[string]string{"n": "value * 2"}}
	v, err := s.Transform(m, "n", json.RawMessage(`21`))
	require.NoError(t, err)
	require.Equal(t, `42`, string(v))
	m.Transforms["n"] = "value +"
	_, err = s.Transform(m, "n", json.RawMessage(`21`))
	require.Contains(t, sgam.ErrorMessage(err), "does not compile")
}

func TestTransformResults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, want string }{
		{`double(value) + 0.5`, `1.5`},
		{`[value, "b"]`, `["a","b"]`},
		{`{"k": value, "n": 2u}`, `{"k":"a","n":2}`},
		{`timestamp("2026-06-03T12:00:00+02:00")`, `"2026-06-03T10:00:00Z"`},
		{`value.upperAscii()`, `"A"`},
		{`math.greatest(1, 3)`, `3`},
		{`b"x"`, ``},
		{`duration("1h")`, ``},
		{`1.0 / 0.0`, ``},
		{`{1: "a"}`, ``},
	} {
		// json_schema {} accepts any value, so what is tested is the
		// conversion from CEL to JSON.
		s, err := Parse([]byte("attributes:\n  x: {memory: profile, json_schema: {}}\nmigrations:\n  - name: m\n    retype:\n      attribute: x\n      transform: '" + c.expr + "'\n"))
		require.NoError(t, err, c.expr)
		old := `"a"`
		if c.expr == `double(value) + 0.5` {
			old = `1`
		}
		got, err := s.Transform(s.Migrations[0], "x", json.RawMessage(old))
		if c.want == "" {
			require.Error(t, err, c.expr)
			require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
			continue
		}
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, string(got), c.expr)
	}
}
