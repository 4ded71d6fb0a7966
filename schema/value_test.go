package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

const valueSchema = `
entities: [account]
attributes:
  nickname:          {memory: profile, type: string}
  tickets:           {memory: task, type: integer}
  balance:           {memory: profile, type: number}
  vip:               {memory: profile, type: boolean}
  passport_deadline: {memory: task, type: date}
  last_seen:         {memory: event, type: datetime}
  plan:              {memory: profile, type: {enum: [free, pro, 1, 2.50, true]}}
  account:           {memory: relation, type: {ref: account}}
  address:
    memory: profile
    json_schema:
      type: object
      properties:
        city: {type: string}
        zip: {type: string, pattern: "^[0-9]{4,5}$"}
        tags: {type: array, items: {type: string, maxLength: 3}}
        "a/b~c": {type: integer, minimum: 0}
        email: {type: string, format: email}
      required: [city]
      additionalProperties: false
`

type valueCase struct {
	attr string
	in   string
	want string // canonical output; "" when the value is rejected
	ptr  string // Pointer of the error
	rule string // Rule of the error
}

func TestValue(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(valueSchema))
	require.NoError(t, err)

	cases := []valueCase{
		// string
		{attr: "nickname", in: `"Mira"`, want: `"Mira"`},
		{attr: "nickname", in: ` "caf\u00e9 <b>&" `, want: `"café <b>&"`},
		{attr: "nickname", in: `""`, want: `""`},
		{attr: "nickname", in: `42`, rule: "type"},
		{attr: "nickname", in: `["a"]`, rule: "type"},
		// integer
		{attr: "tickets", in: `1`, want: `1`},
		{attr: "tickets", in: `1.0`, want: `1`},
		{attr: "tickets", in: `1e2`, want: `100`},
		{attr: "tickets", in: `-0`, want: `0`},
		{attr: "tickets", in: `0.0e5`, want: `0`},
		{attr: "tickets", in: `-12.500e1`, want: `-125`},
		{attr: "tickets", in: `9007199254740991`, want: `9007199254740991`},
		{attr: "tickets", in: `-9007199254740991`, want: `-9007199254740991`},
		{attr: "tickets", in: `9007199254740992`, rule: "range"},
		{attr: "tickets", in: `1e300`, rule: "range"},
		{attr: "tickets", in: `1e99999999999999999999`, rule: "range"},
		{attr: "tickets", in: `1e-99999999999999999999`, rule: "integer"},
		{attr: "tickets", in: `1.5`, rule: "integer"},
		{attr: "tickets", in: `1.0000000000000001`, rule: "integer"},
		{attr: "tickets", in: `"3"`, rule: "type"},
		// number
		{attr: "balance", in: `1.50`, want: `1.5`},
		{attr: "balance", in: `1e2`, want: `100`},
		{attr: "balance", in: `-0`, want: `0`},
		{attr: "balance", in: `-0.0`, want: `0`},
		{attr: "balance", in: `0.1`, want: `0.1`},
		{attr: "balance", in: `1e21`, want: `1e+21`},
		{attr: "balance", in: `12345678901234567890`, want: `12345678901234567000`},
		{attr: "balance", in: `1e-400`, want: `0`},
		{attr: "balance", in: `1e400`, rule: "range"},
		{attr: "balance", in: `"1.5"`, rule: "type"},
		{attr: "balance", in: `true`, rule: "type"},
		// boolean
		{attr: "vip", in: `true`, want: `true`},
		{attr: "vip", in: `false`, want: `false`},
		{attr: "vip", in: `"true"`, rule: "type"},
		{attr: "vip", in: `1`, rule: "type"},
		// date
		{attr: "passport_deadline", in: `"2026-06-30"`, want: `"2026-06-30"`},
		{attr: "passport_deadline", in: `"2024-02-29"`, want: `"2024-02-29"`},
		{attr: "passport_deadline", in: `"2026-02-29"`, rule: "date"},
		{attr: "passport_deadline", in: `"2026-6-30"`, rule: "date"},
		{attr: "passport_deadline", in: `"2026-06-30T00:00:00Z"`, rule: "date"},
		{attr: "passport_deadline", in: `"0000-01-01"`, rule: "date"},
		{attr: "passport_deadline", in: `"２０２６-06-30"`, rule: "date"},
		{attr: "passport_deadline", in: `42`, rule: "type"},
		// datetime
		{attr: "last_seen", in: `"2026-06-03T12:00:00+02:00"`, want: `"2026-06-03T10:00:00Z"`},
		{attr: "last_seen", in: `"2026-06-03t10:00:00.123456789z"`, want: `"2026-06-03T10:00:00.123456Z"`},
		{attr: "last_seen", in: `"2026-06-03T10:00:00.500Z"`, want: `"2026-06-03T10:00:00.5Z"`},
		{attr: "last_seen", in: `"2026-06-03T10:00:00"`, rule: "datetime"},
		{attr: "last_seen", in: `"2026-06-03"`, rule: "datetime"},
		{attr: "last_seen", in: `1780000000`, rule: "type"},
		// enum
		{attr: "plan", in: `"pro"`, want: `"pro"`},
		{attr: "plan", in: `1.0`, want: `1`},
		{attr: "plan", in: `2.5`, want: `2.5`},
		{attr: "plan", in: `25e-1`, want: `2.5`},
		{attr: "plan", in: `true`, want: `true`},
		{attr: "plan", in: `"Pro"`, rule: "enum"},
		{attr: "plan", in: `"1"`, rule: "enum"},
		{attr: "plan", in: `false`, rule: "enum"},
		{attr: "plan", in: `{"plan":"pro"}`, rule: "enum"},
		// ref
		{attr: "account", in: `"acct-42"`, want: `"acct-42"`},
		{attr: "account", in: `"Acme Corp"`, want: `"Acme Corp"`},
		{attr: "account", in: `""`, rule: "ref"},
		{attr: "account", in: `" acct-42"`, rule: "ref"},
		{attr: "account", in: `"a\nb"`, rule: "ref"},
		{attr: "account", in: `"` + strings.Repeat("a", 257) + `"`, rule: "ref"},
		{attr: "account", in: `42`, rule: "type"},
		// json_schema
		{attr: "address", in: `{"zip":"0150", "city":"Oslo"}`, want: `{"city":"Oslo","zip":"0150"}`},
		{attr: "address", in: `{"city":"Oslo","tags":["a","b"],"a/b~c":1.0}`, want: `{"a/b~c":1.0,"city":"Oslo","tags":["a","b"]}`},
		{attr: "address", in: `{"city":"Oslo","zip":"12"}`, ptr: "/zip", rule: "pattern"},
		{attr: "address", in: `{"zip":"0150"}`, ptr: "", rule: "required"},
		{attr: "address", in: `{"city":7}`, ptr: "/city", rule: "type"},
		{attr: "address", in: `{"city":"Oslo","tags":["a","long"]}`, ptr: "/tags/1", rule: "maxLength"},
		{attr: "address", in: `{"city":"Oslo","a/b~c":-1}`, ptr: "/a~1b~0c", rule: "minimum"},
		{attr: "address", in: `{"city":"Oslo","email":"not an address"}`, ptr: "/email", rule: "format"},
		{attr: "address", in: `{"city":"Oslo","country":"NO"}`, ptr: "", rule: "additionalProperties"},
		{attr: "address", in: `{"city":1,"zip":"12","tags":[1]}`, ptr: "/tags/0", rule: "type"},
		{attr: "address", in: `"Oslo"`, ptr: "", rule: "type"},
		{attr: "address", in: `{"city":"Oslo","tags":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, ptr: "", rule: "depth"},
		{attr: "address", in: `{"city":"Oslo","tags":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}`, ptr: "/tags/0", rule: "type"},
		{attr: "address", in: `{"city":"[[[[\"{{{{","zip":"1234"}`, want: `{"city":"[[[[\"{{{{","zip":"1234"}`},
	}
	for _, c := range cases {
		t.Run(c.attr+"/"+c.in, func(t *testing.T) {
			t.Parallel()
			a, ok := s.Attribute(c.attr)
			require.True(t, ok)
			got, err := a.Value(json.RawMessage(c.in))
			if c.want != "" {
				require.NoError(t, err)
				require.Equal(t, c.want, string(got))
				again, err := a.Value(got)
				require.NoError(t, err, "a canonical value is valid")
				require.Equal(t, c.want, string(again), "canonical form is a fixed point")
				return
			}
			require.Error(t, err)
			require.Nil(t, got)
			var se *sgam.Error
			require.True(t, errors.As(err, &se), "%T", err)
			require.Equal(t, sgam.Invalid, se.Code)
			require.Equal(t, "value", se.Field)
			require.Equal(t, c.ptr, se.Pointer)
			require.Equal(t, c.rule, se.Rule, se.Message)
			require.Contains(t, se.Message, c.attr, "the message names the attribute")
		})
	}
}

func TestValueMessages(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(valueSchema))
	require.NoError(t, err)
	a, _ := s.Attribute("passport_deadline")
	_, err = a.Value(json.RawMessage(`42`))
	require.Equal(t, `passport_deadline must be a date "YYYY-MM-DD"; got 42`, sgam.ErrorMessage(err))
	a, _ = s.Attribute("plan")
	_, err = a.Value(json.RawMessage(`"gold"`))
	require.Equal(t, `plan must be one of "free", "pro", 1, 2.5, true; got "gold"`, sgam.ErrorMessage(err))
	a, _ = s.Attribute("address")
	_, err = a.Value(json.RawMessage(`{"city":"Oslo","zip":"12"}`))
	require.Contains(t, sgam.ErrorMessage(err), "address must match its JSON Schema")
	require.Contains(t, sgam.ErrorMessage(err), "^[0-9]{4,5}$")
	a, _ = s.Attribute("nickname")
	_, err = a.Value(json.RawMessage(`"` + strings.Repeat("x", 200) + `"`))
	require.NoError(t, err)
	_, err = a.Value(json.RawMessage(strings.Repeat("1", 200)))
	require.Less(t, len(sgam.ErrorMessage(err)), 150, "a long value is abbreviated in the message")
}

// The checks sgam.CanonicalValue makes come first, for every type.
func TestValueSyntax(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(valueSchema))
	require.NoError(t, err)
	for _, a := range s.Attributes {
		for _, in := range []string{``, `null`, `{"a":`, `"a\u0000"`, `1 2`, `"` + strings.Repeat("x", sgam.DefaultMaxValueBytes) + `"`} {
			_, err := a.Value(json.RawMessage(in))
			require.Error(t, err, "%s %q", a.Name, in)
			require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
			require.Equal(t, "value", sgam.ErrorField(err))
		}
	}
}

// Value on a hand-built json_schema attribute compiles the schema itself.
func TestValueHandBuilt(t *testing.T) {
	t.Parallel()
	a := &Attribute{Name: "n", Type: TypeJSONSchema, JSONSchema: json.RawMessage(`{"type":"integer","maximum":3}`)}
	v, err := a.Value(json.RawMessage(`2`))
	require.NoError(t, err)
	require.Equal(t, `2`, string(v))
	_, err = a.Value(json.RawMessage(`4`))
	require.Equal(t, "maximum", err.(*sgam.Error).Rule)
}

// A parsed schema is shared by concurrent writers.
func TestValueConcurrent(t *testing.T) {
	t.Parallel()
	s, err := Parse(Example())
	require.NoError(t, err)
	a, _ := s.Attribute("address")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if i%2 == 0 {
					_, err := a.Value(json.RawMessage(`{"city":"Oslo","country":"NO"}`))
					require.NoError(t, err)
				} else {
					_, err := a.Value(json.RawMessage(`{"city":"Oslo","country":"no"}`))
					require.Equal(t, "/country", err.(*sgam.Error).Pointer)
				}
			}
		})
	}
	wg.Wait()
}

// A json_schema may name an older draft; its keywords mean what that
// draft says.
func TestValueDraft07(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`
attributes:
  score:
    memory: profile
    json_schema: {$schema: "http://json-schema.org/draft-07/schema#", type: number, exclusiveMinimum: 0, definitions: {x: {type: string}}}
`))
	require.NoError(t, err)
	a, _ := s.Attribute("score")
	_, err = a.Value(json.RawMessage(`0.5`))
	require.NoError(t, err)
	_, err = a.Value(json.RawMessage(`0`))
	require.Equal(t, "exclusiveMinimum", err.(*sgam.Error).Rule)
}
