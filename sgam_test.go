package sgam_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z"},
		{"2026-06-03t10:00:00z", "2026-06-03T10:00:00Z"},
		{"2026-06-03T12:00:00+02:00", "2026-06-03T10:00:00Z"},
		{"2026-06-03T05:30:00-04:30", "2026-06-03T10:00:00Z"},
		{"2026-06-03T10:00:00.123456789Z", "2026-06-03T10:00:00.123456Z"},
		{"2026-06-03T10:00:00.1+00:00", "2026-06-03T10:00:00.1Z"},
		{"0001-01-01T00:00:01Z", "0001-01-01T00:00:01Z"},
		{"0001-01-01T00:00:00.000001Z", "0001-01-01T00:00:00.000001Z"},
		{"9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.999999Z"},
	} {
		got, err := sgam.ParseTime("t", c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, sgam.FormatTime(got), c.in)
		require.Equal(t, time.UTC, got.Location())
	}
	for _, c := range []struct{ in, says string }{
		{"", "is required"},
		{"2026-06-03", "no UTC offset"},
		{"2026-06-03T10:00:00", "no UTC offset"},
		{"2026-06-03T10:00", "no UTC offset"},
		{"2026-06-03 10:00:00Z", "not an RFC 3339"},
		{"2026-13-03T10:00:00Z", "not an RFC 3339"},
		{"yesterday", "not an RFC 3339"},
		// Go's zero time means "not given" to the API: as an input it would
		// silently read as now.
		{"0001-01-01T00:00:00Z", "the zero instant"},
		{"0001-01-01T01:00:00+01:00", "the zero instant"},
		{"0001-01-01T00:00:00.0000009Z", "the zero instant"},
		{"2026-06-03T10:00:00,5Z", "not an RFC 3339"},
		{"1717400000", "not an RFC 3339"},
		{strings.Repeat("9", 100), "longer than 64"},
	} {
		_, err := sgam.ParseTime("valid_from", c.in)
		require.Error(t, err, c.in)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
		require.Equal(t, "valid_from", sgam.ErrorField(err))
		require.Contains(t, err.Error(), c.says, c.in)
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-06-03T10:00:00Z", "2026-06-03T12:00:00.5+02:00", "2026-06-03", "9999-12-31T23:59:59.999999999Z", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := sgam.ParseTime("t", s)
		if err != nil {
			if sgam.ErrorField(err) != "t" {
				t.Fatalf("error does not name the field: %v", err)
			}
			return
		}
		if got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
			t.Fatalf("%q parsed to %v: not UTC microseconds", s, got)
		}
		// Formatting and parsing again is the identity.
		again, err := sgam.ParseTime("t", sgam.FormatTime(got))
		if err != nil || !again.Equal(got) {
			t.Fatalf("%q: round trip gave %v, %v", s, again, err)
		}
		// The stored integer form round-trips too.
		if !sgam.FromMicros(sgam.Micros(got)).Equal(got) {
			t.Fatalf("%q: micros round trip", s)
		}
	})
}

func TestCanonicalValue(t *testing.T) {
	for in, want := range map[string]string{
		`"Oslo"`:                  `"Oslo"`,
		` {"b": 1, "a": [1, 2]} `: `{"a":[1,2],"b":1}`,
		`"\u00e9 <b>"`:            `"é <b>"`,
		`12345678901234567890`:    `12345678901234567890`,
		`1.50`:                    `1.50`,
		`true`:                    `true`,
	} {
		got, err := sgam.CanonicalValue("value", []byte(in), 1000)
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
		require.True(t, json.Valid(got))
	}
	for _, in := range []string{``, `null`, `{`, `1 2`, `Oslo`, `"` + strings.Repeat("x", 1000) + `"`} {
		_, err := sgam.CanonicalValue("value", []byte(in), 1000)
		require.Error(t, err, in)
		require.Equal(t, "value", sgam.ErrorField(err), in)
	}
}

// nested returns a value of depth arrays (or objects) around 1.
func nested(depth int, object bool) string {
	open, close := "[", "]"
	if object {
		open, close = `{"a":`, "}"
	}
	return strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
}

// TestCanonicalValueStrict: what encoding/json would read other than as
// written is refused, naming the field and saying what and where.
func TestCanonicalValueStrict(t *testing.T) {
	for _, c := range []struct{ name, in, says string }{
		{"too deep", nested(sgam.MaxValueDepth+1, false), "more than 256 levels deep"},
		{"too deep, objects", nested(sgam.MaxValueDepth+1, true), "more than 256 levels deep"},
		{"far too deep", nested(10000, false), "more than 256 levels deep"},
		{"invalid UTF-8", "\"caf\xe9\"", "not valid UTF-8"},
		{"invalid UTF-8 in a key", "{\"caf\xe9\":1}", "not valid UTF-8"},
		{"UTF-8 of a surrogate", "\"\xed\xa0\x80\"", "not valid UTF-8"},
		{"lone high surrogate", `"\ud800"`, `"\\ud800", half of a UTF-16 surrogate pair`},
		{"high surrogate, then not a low one", `"\ud800\u0041"`, "half of a UTF-16 surrogate pair"},
		{"lone low surrogate", `["\udc00x"]`, "at /0: holds \"\\\\udc00\", half of a UTF-16 surrogate pair without the other half"},
		{"lone surrogate in a key", `{"\ud83d":1}`, "half of a UTF-16 surrogate pair"},
		{"duplicate key", `{"a":1,"a":2}`, `holds the key "a" twice in one object`},
		{"duplicate key, nested", `{"x":[{"b":1,"c":2,"b":3}]}`, `at /x/0: holds the key "b" twice in one object`},
		{"duplicate key, escaped", `{"a":1,"\u0061":2}`, `holds the key "a" twice`},
		{"duplicate key, many keys", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":10}`, `holds the key "k3" twice`},
		{"number too large", `1e400`, "holds the number 1e400, beyond the range of a 64-bit float"},
		{"number too small", `-1e400`, "holds the number -1e400, beyond the range"},
		{"number too large, nested", `{"a":[1,2E+309]}`, "at /a/1: holds the number 2E+309, beyond the range of a 64-bit float (about ±1.8e308)"},
		{"number too long", "1" + strings.Repeat("0", 400), "beyond the range"},
		{"NUL", `"a\u0000b"`, "U+0000"},
		{"NUL in a key", `{"\u0000":1}`, "U+0000"},
		{"control character", "\"a\tb\"", "not valid JSON"},
		{"bad escape", `"\x41"`, "not valid JSON"},
		{"bad number", `01`, "not valid JSON"},
		{"bad number", `1.`, "not valid JSON"},
		{"bad number", `-`, "not valid JSON"},
		{"trailing comma", `[1,]`, "not valid JSON"},
		{"single quotes", `{'a':1}`, "not valid JSON"},
		{"unterminated", `"abc`, "not valid JSON: unexpected end of input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := sgam.CanonicalValue("value", []byte(c.in), 1<<20)
			require.Error(t, err)
			require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
			require.Equal(t, "value", sgam.ErrorField(err))
			require.Contains(t, err.Error(), c.says)
			// The error is short even for a very deep value.
			require.Less(t, len(err.Error()), 300)
		})
	}
	for _, in := range []string{
		nested(sgam.MaxValueDepth, false), nested(sgam.MaxValueDepth, true),
		`"\ud83d\ude00"`, `"\uFFFD"`, "\"\xef\xbf\xbd\"", `1e308`, `-1.7976931348623157e308`, `1e-400`, `{"a":1,"A":2,"b":{"a":3}}`,
		`"\u2028"`,
	} {
		got, err := sgam.CanonicalValue("value", []byte(in), 1<<20)
		require.NoError(t, err, in)
		require.True(t, json.Valid(got), in)
	}
	got, err := sgam.CanonicalValue("value", []byte(`"\ud83d\ude00"`), 100)
	require.NoError(t, err)
	require.Equal(t, `"😀"`, string(got), "a surrogate pair is one character")

	// Episode metadata is a value too, named "metadata".
	_, err = sgam.Limits{}.CheckEpisode(sgam.Episode{Tenant: "acme", Metadata: []byte(`{"a":1,"a":2}`)}, time.Now())
	require.Equal(t, "metadata", sgam.ErrorField(err))
	_, err = sgam.Limits{}.CheckEpisode(sgam.Episode{Tenant: "acme", Metadata: []byte(`{"a":` + nested(300, false) + `}`)}, time.Now())
	require.Equal(t, "metadata", sgam.ErrorField(err))
	require.Contains(t, err.Error(), "256 levels")
	// So are an assertion's value, a retraction's member and an import's row.
	key := sgam.Key{Tenant: "acme", Subject: "mira", Attribute: "a"}
	_, err = sgam.Limits{}.CheckAssertion(sgam.Assertion{Key: key, Value: []byte(nested(1001, false)), ValidFrom: time.Now(), Source: "e1"})
	require.Equal(t, "value", sgam.ErrorField(err))
	_, err = sgam.Limits{}.CheckRetraction(sgam.Retraction{Key: key, Value: []byte(`{"a":1,"a":1}`), At: time.Now(), Source: "e1"})
	require.Equal(t, "value", sgam.ErrorField(err))
	f := sgam.StoredFact{Fact: sgam.Fact{ID: 1, Tenant: "acme", Subject: "mira", Attribute: "a", Value: []byte(`1e999`),
		ValidFrom: time.Now(), RecordedAt: time.Now()}, Source: "e1"}
	require.Equal(t, "value", sgam.ErrorField(sgam.Limits{}.CheckImportedFact(&f)))
}

// TestCheckJSON: a request body's faults name the member they are in.
func TestCheckJSON(t *testing.T) {
	for _, c := range []struct{ in, field, says string }{
		{`{"attribute":"b","attribute":"c"}`, "attribute", "is given twice"},
		{`{"subject":"mi\ud800ra"}`, "subject", "half of a UTF-16 surrogate pair"},
		{"{\"subject\":\"mi\xffra\"}", "subject", "not valid UTF-8"},
		{`{"value":{"a":1,"a":2}}`, "value", `holds the key "a" twice in one object`},
		{`{"value":[0,{"b":1e400}]}`, "value", "at /1/b: holds the number 1e400, beyond the range of a 64-bit float (about ±1.8e308)"},
		{`{"value":` + nested(sgam.MaxValueDepth+1, false) + `}`, "value", "more than 256 levels deep"},
		{"{\"\xff\":1}", "body", "not valid UTF-8"},
		{`{"` + strings.Repeat("k", 100) + `":1,"` + strings.Repeat("k", 100) + `":2}`, "body", "twice"},
		{`[{"a":1,"a":2}]`, "body", "twice"},
		{`{"a":1`, "body", "not valid JSON"},
	} {
		err := sgam.CheckJSON("body", []byte(c.in))
		require.Error(t, err, c.in)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err), c.in)
		require.Equal(t, c.field, sgam.ErrorField(err), c.in)
		require.Contains(t, err.Error(), c.says, c.in)
	}
	for _, in := range []string{`{"value":` + nested(sgam.MaxValueDepth, false) + `}`, `{"content":"a\u0000b"}`, `{}`, `[1,2]`, `{"a":{"a":{"a":1}}}`} {
		require.NoError(t, sgam.CheckJSON("body", []byte(in)), in)
	}
}

// FuzzCanonicalValue: an accepted value comes out as valid JSON with no
// key twice, and is its own canonical form; a refused one is an Invalid
// error naming the field. encoding/json never reads an accepted value
// other than as written: no U+FFFD appears that the input did not hold.
func FuzzCanonicalValue(f *testing.F) {
	for _, s := range []string{`"Oslo"`, `{"b":1,"a":[1,2]}`, `{"a":1,"a":2}`, `"\ud800"`, `"\ud83d\ude00"`, "\"\xff\"", `1e400`, `1.50`,
		`[[[[1]]]]`, `{"\u0061":1,"a":2}`, `"\u0000"`, `null`, ` true `, `-0`, `"\/\b\f\n\r\t"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := sgam.CanonicalValue("value", in, 1<<16)
		if err != nil {
			if sgam.ErrorCode(err) != sgam.Invalid || sgam.ErrorField(err) != "value" {
				t.Fatalf("%q: %v (%s)", in, err, sgam.ErrorCode(err))
			}
			return
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("%q: accepted as %q, which is not valid JSON", in, out)
		}
		if err := sgam.CheckJSON("value", out); err != nil {
			t.Fatalf("%q: accepted as %q, which is not strict: %v", in, out, err)
		}
		again, err := sgam.CanonicalValue("value", out, 1<<16)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%q: canonical form %q is not a fixed point: %q, %v", in, out, again, err)
		}
		if replacements := bytes.Count(out, []byte("\uFFFD")); replacements > bytes.Count(in, []byte("\uFFFD"))+bytes.Count(bytes.ToLower(in), []byte(`\ufffd`)) {
			t.Fatalf("%q: accepted as %q, with a replacement character the input did not hold", in, out)
		}
	})
}

// BenchmarkCanonicalValue measures canonicalization of ordinary values: a
// plain string (the fast path), a number, an escaped string and a small
// object.
func BenchmarkCanonicalValue(b *testing.B) {
	for _, c := range []struct{ name, value string }{
		{"string", `"2026-06-30"`},
		{"number", `42`},
		{"escaped", `"caf\u00e9 \"Oslo\""`},
		{"object", `{"city":"Oslo","zip":"0150","tags":["a","b"],"since":2019}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := []byte(c.value)
			for b.Loop() {
				if _, err := sgam.CanonicalValue("value", raw, 1<<16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSubjectFormatCharacters: a subject id with an invisible format
// character (bidirectional controls, zero-width characters: Unicode Cf) is
// refused by name; visible text of any script is not.
func TestSubjectFormatCharacters(t *testing.T) {
	for _, r := range []rune{0x202e, 0x202a, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff, 0x061c, 0x00ad, 0x2060, 0xe0001} {
		s := "mi" + string(r) + "ra"
		err := sgam.CheckSubject(s)
		require.Error(t, err, "U+%04X", r)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
		require.Equal(t, "subject", sgam.ErrorField(err))
		require.Contains(t, err.Error(), fmt.Sprintf("U+%04X", r))
		require.Error(t, sgam.Key{Tenant: "acme", Subject: s, Attribute: "a"}.Check())
	}
	for _, s := range []string{"mira", "Mira Østby", "ミラ", "мира", "مِيرا", "mira@example.com", "a b", "...", ".mira", "a/.."} {
		require.NoError(t, sgam.CheckSubject(s), s)
	}
	// A path segment "." or ".." is removed by URL parsers: no subject
	// may be one, or it could be written but not read by path.
	for _, s := range []string{".", ".."} {
		require.Equal(t, "subject", sgam.ErrorField(sgam.CheckSubject(s)), s)
	}
}

// TestFieldNamesExact: encoding/json fills `json:"subject"` from
// "SUBJECT" too, so a line could be read other than as written, and one
// with both keys would keep the last past CheckJSON's duplicate test.
func TestFieldNamesExact(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type Embedded struct {
		Kind string `json:"kind"`
	}
	type line struct {
		Embedded
		Subject string           `json:"subject"`
		Items   []inner          `json:"items,omitempty"`
		ByKey   map[string]inner `json:"by_key"`
		Raw     json.RawMessage  `json:"raw"`
		Plain   string
		Skipped string `json:"-"`
	}
	for _, c := range []struct{ in, field, says string }{
		{`{"SUBJECT":"casey"}`, "SUBJECT", `field names are case-sensitive (the field is "subject")`},
		{`{"subject":"m","SUBJECT":"n"}`, "SUBJECT", "case-sensitive"},
		{`{"Kind":"x"}`, "Kind", `the field is "kind"`},
		{`{"items":[{"name":"a"},{"NAME":"b"}]}`, "items[1].NAME", "case-sensitive"},
		{`{"by_key":{"k":{"Name":"b"}}}`, "by_key.k.Name", "case-sensitive"},
		{`{"plain":"x"}`, "plain", `the field is "Plain"`},
	} {
		var l line
		err := sgam.DecodeStrict("line", []byte(c.in), &l)
		var se *sgam.Error
		require.ErrorAs(t, err, &se, c.in)
		require.Equal(t, c.field, se.Field, c.in)
		require.Contains(t, se.Message, c.says, c.in)
	}
	// Exact names pass, and a raw value's own keys are not fields.
	var l line
	require.NoError(t, sgam.DecodeStrict("line", []byte(`{"kind":"k","subject":"s","items":[{"name":"a"}],"by_key":{"K":{"name":"b"}},"raw":{"SUBJECT":1},"Plain":"p"}`), &l))
	require.Equal(t, "s", l.Subject)
	require.Equal(t, "k", l.Kind)
	// Keys that match nothing are the decoder's to refuse.
	require.ErrorContains(t, sgam.DecodeStrict("line", []byte(`{"nope":1}`), &l), "is not a known field")
}

// request is a body of every kind of field a decoded input has.
type request struct {
	Subject string          `json:"subject"`
	Count   int64           `json:"count"`
	Ratio   *float64        `json:"ratio"`
	Flag    bool            `json:"flag"`
	Tags    []string        `json:"tags"`
	Value   json.RawMessage `json:"value"`
	Nested  *struct {
		A int `json:"a"`
	} `json:"nested"`
	Attribute string `json:"attribute"`
}

// TestDecodeStrictFaults: each fault of an input has one wording, and
// names the field (or the whole text), whatever the surface.
func TestDecodeStrictFaults(t *testing.T) {
	for _, c := range []struct{ in, field, says string }{
		{``, "body", "is empty: a JSON object is expected"},
		{"  \n", "body", "is empty: a JSON object is expected"},
		{`{`, "body", "not valid JSON"},
		{`{} {}`, "body", "not valid JSON"},
		{`[1]`, "body", "must be a JSON object, not array"},
		{`"x"`, "body", "must be a JSON object, not string"},
		{`null`, "body", "must be a JSON object, not null"},
		{" null\n", "body", "must be a JSON object, not null"},
		{`{"subject":1}`, "subject", "must be a JSON string, not number"},
		{`{"count":1.5}`, "count", "must be a JSON integer, not the number 1.5"},
		{`{"count":"1"}`, "count", "must be a JSON integer, not string"},
		{`{"ratio":"x"}`, "ratio", "must be a JSON number, not string"},
		{`{"flag":1}`, "flag", "must be a JSON boolean, not number"},
		{`{"tags":"a"}`, "tags", "must be a JSON array, not string"},
		{`{"nested":{"a":"b"}}`, "nested.a", "must be a JSON integer, not string"},
		{`{"nope":1}`, "nope", "is not a known field"},
		{`{"` + strings.Repeat("k", 100) + `":1}`, "body", "has an unknown field"},
		{`{"SUBJECT":"m"}`, "SUBJECT", "field names are case-sensitive"},
		{`{"attribute":"b","attribute":"c"}`, "attribute", "is given twice"},
	} {
		var r request
		err := sgam.DecodeStrict("body", []byte(c.in), &r)
		require.Error(t, err, c.in)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err), c.in)
		require.Equal(t, c.field, sgam.ErrorField(err), c.in)
		require.Contains(t, err.Error(), c.says, c.in)
	}
	var r request
	require.NoError(t, sgam.DecodeStrict("line", []byte(`{"subject":"mira","count":2,"ratio":0.5,"tags":["a"],"value":{"x":[1e308]}}`), &r))
	require.Equal(t, "mira", r.Subject)
	require.JSONEq(t, `{"x":[1e308]}`, string(r.Value))
}

// FuzzDecodeStrict: whatever the input, the decoder never panics; every
// refusal is Invalid and names a field; what it accepts is one JSON object
// that encoding/json reads the same way.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"subject":"mira","attribute":"city","value":"Oslo"}`, `{`, `[]`, `{"value":{"a":[1,2,{"b":null}]}}`,
		`{"subject":1}`, `{"x":1}`, `{} {}`, ``, `"\u0000"`, `{"SUBJECT":"a"}`, `{"nested":{"a":1,"a":2}}`, `{"count":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var r request
		err := sgam.DecodeStrict("body", in, &r)
		if err != nil {
			if sgam.ErrorCode(err) != sgam.Invalid || sgam.ErrorField(err) == "" {
				t.Fatalf("%q: a refusal without a field: %v", in, err)
			}
			return
		}
		var again request
		if err := json.Unmarshal(in, &again); err != nil {
			t.Fatalf("%q: accepted, but encoding/json refuses it: %v", in, err)
		}
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("%q: read as %s, encoding/json reads %s", in, a, b)
		}
	})
}

// TestErrorDetailPointer: a schema error's pointer is written even when
// it is "" (the whole value); without a rule there is no pointer.
func TestErrorDetailPointer(t *testing.T) {
	b, err := json.Marshal(sgam.ErrorDetail{Code: sgam.Invalid, Field: "value", Rule: "type", Message: "m"})
	require.NoError(t, err)
	require.JSONEq(t, `{"code":"invalid","field":"value","pointer":"","rule":"type","message":"m"}`, string(b))
	b, err = json.Marshal(sgam.ErrorDetail{Code: sgam.NotFound, Message: "m"})
	require.NoError(t, err)
	require.JSONEq(t, `{"code":"not_found","message":"m"}`, string(b))
	var back sgam.ErrorDetail
	require.NoError(t, json.Unmarshal([]byte(`{"code":"invalid","pointer":"/a","rule":"minimum","message":"m"}`), &back))
	require.Equal(t, "/a", back.Pointer)
}
