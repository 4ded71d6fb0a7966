package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sgam-dev/sgam"
)

// maxSafeInteger is 2^53-1, the largest integer every JSON reader holds
// exactly.
const maxSafeInteger = 1<<53 - 1

// Value validates raw (one JSON value; for a many attribute, one member)
// against the attribute's type and returns its canonical form, so that
// equal values are byte-equal and a store can compare them as bytes:
//
//   - string: any JSON string, re-encoded without HTML escaping
//   - integer: a number with an integral value within ±(2^53-1), as decimal
//     digits (1.0 and 1e2 are 1 and 100)
//   - number: any finite number, as encoding/json writes a float64 (1.50 is
//     1.5, -0 is 0)
//   - boolean: true or false
//   - date: a real calendar date "YYYY-MM-DD"
//   - datetime: RFC 3339 with an offset, as UTC with at most microseconds
//   - enum: one of the declared values
//   - ref: a subject id, as sgam.CheckSubject accepts it
//   - json_schema: valid under the attribute's JSON Schema; canonical as
//     sgam.CanonicalValue makes it
//
// An error is an *sgam.Error with code Invalid, field "value", the JSON
// pointer of the offending part in Pointer and the rule it broke in Rule.
func (a *Attribute) Value(raw json.RawMessage) (json.RawMessage, error) {
	v, err := sgam.CanonicalValue("value", raw, sgam.DefaultMaxValueBytes)
	if err != nil {
		// Not JSON this store keeps, whatever the type: say which
		// attribute's value it was.
		var se *sgam.Error
		if errors.As(err, &se) {
			c := *se
			c.Message = a.Name + ": " + c.Message
			return nil, &c
		}
		return nil, err
	}
	switch a.Type {
	case TypeString:
		if v[0] != '"' {
			return nil, a.invalid("", "type", v)
		}
		if a.Name == sgam.AliasAttribute {
			return a.aliasValue(v)
		}
		return v, nil
	case TypeBoolean:
		if string(v) != "true" && string(v) != "false" {
			return nil, a.invalid("", "type", v)
		}
		return v, nil
	case TypeInteger:
		if !isNumber(v) {
			return nil, a.invalid("", "type", v)
		}
		c, rule := canonicalInteger(string(v))
		if rule != "" {
			return nil, a.invalid("", rule, v)
		}
		return c, nil
	case TypeNumber:
		if !isNumber(v) {
			return nil, a.invalid("", "type", v)
		}
		c, err := canonicalNumber(string(v))
		if err != nil {
			return nil, a.invalid("", "range", v)
		}
		return c, nil
	case TypeDate:
		s, ok := stringValue(v)
		if !ok {
			return nil, a.invalid("", "type", v)
		}
		if !isDate(s) {
			return nil, a.invalid("", "date", v)
		}
		return v, nil
	case TypeDatetime:
		s, ok := stringValue(v)
		if !ok {
			return nil, a.invalid("", "type", v)
		}
		t, err := sgam.ParseTime("value", s)
		if err != nil {
			return nil, a.invalid("", "datetime", v)
		}
		return jsonString(sgam.FormatTime(t)), nil
	case TypeEnum:
		c := v
		if isNumber(v) {
			if n, err := canonicalNumber(string(v)); err == nil {
				c = n
			}
		}
		if !slices.ContainsFunc(a.Enum, func(e json.RawMessage) bool { return bytes.Equal(e, c) }) {
			return nil, a.invalid("", "enum", v)
		}
		return c, nil
	case TypeRef:
		s, ok := stringValue(v)
		if !ok {
			return nil, a.invalid("", "type", v)
		}
		if sgam.CheckSubject(s) != nil {
			return nil, a.invalid("", "ref", v)
		}
		return v, nil
	case TypeJSONSchema:
		return a.validateJSONSchema(v)
	}
	return nil, &sgam.Error{Code: sgam.Internal, Field: "value", Message: fmt.Sprintf("attribute %s has no type %q", a.Name, a.Type)}
}

func (a *Attribute) validateJSONSchema(v json.RawMessage) (json.RawMessage, error) {
	sch := a.compiled
	if sch == nil {
		// An Attribute built by hand rather than by Parse: compile now,
		// every time, rather than cache without a lock.
		var err error
		if sch, err = compileJSONSchema(a.Name, a.JSONSchema); err != nil {
			return nil, &sgam.Error{Code: sgam.Internal, Field: "value", Message: fmt.Sprintf("attribute %s: its json_schema does not compile: %v", a.Name, err), Err: err}
		}
	}
	if d := depth(v); d > MaxDepth {
		// The validator's time grows faster than the depth of the value
		// under a recursive schema; no fact needs this much nesting.
		return nil, &sgam.Error{Code: sgam.Invalid, Field: "value", Rule: "depth",
			Message: fmt.Sprintf("%s is nested %d levels deep; the limit is %d", a.Name, d, MaxDepth)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return nil, sgam.Errorf(sgam.Invalid, "value", "is not valid JSON: %v", err)
	}
	err = sch.Validate(doc)
	if err == nil {
		return v, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, &sgam.Error{Code: sgam.Invalid, Field: "value", Rule: "schema", Message: fmt.Sprintf("%s: %v", a.Name, err), Err: err}
	}
	leaf := leafError(ve)
	ptr := pointer(leaf.InstanceLocation)
	rule := "schema"
	if kw := leaf.ErrorKind.KeywordPath(); len(kw) > 0 {
		rule = kw[len(kw)-1]
	}
	where := ""
	if ptr != "" {
		where = " at " + ptr
	}
	return nil, &sgam.Error{
		Code:    sgam.Invalid,
		Field:   "value",
		Pointer: ptr,
		Rule:    rule,
		Message: fmt.Sprintf("%s must match its JSON Schema; %s%s", a.Name, leaf.ErrorKind.LocalizedString(printer), where),
	}
}

// depth returns how deeply arrays and objects nest in a valid JSON text.
func depth(v []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return deepest
}

// leafError picks the error to report from a tree of JSON Schema errors:
// the deepest in the value, then the first by pointer and keyword, so
// that the choice does not depend on the order the validator went in.
func leafError(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	var best *jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if best == nil || better(e, best) {
				best = e
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return best
}

func better(a, b *jsonschema.ValidationError) bool {
	if len(a.InstanceLocation) != len(b.InstanceLocation) {
		return len(a.InstanceLocation) > len(b.InstanceLocation)
	}
	if c := slices.Compare(a.InstanceLocation, b.InstanceLocation); c != 0 {
		return c < 0
	}
	return slices.Compare(a.ErrorKind.KeywordPath(), b.ErrorKind.KeywordPath()) < 0
}

// pointer renders tokens as an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// invalid builds the error for a value that is not of the attribute's type.
func (a *Attribute) invalid(ptr, rule string, got json.RawMessage) *sgam.Error {
	return &sgam.Error{
		Code:    sgam.Invalid,
		Field:   "value",
		Pointer: ptr,
		Rule:    rule,
		Message: fmt.Sprintf("%s must be %s; got %s", a.Name, a.expected(rule), abbreviate(got)),
	}
}

// expected says in words what values the attribute takes.
func (a *Attribute) expected(rule string) string {
	switch a.Type {
	case TypeString:
		return "a string"
	case TypeInteger:
		if rule == "range" {
			return "an integer between -9007199254740991 and 9007199254740991"
		}
		return "an integer"
	case TypeNumber:
		if rule == "range" {
			return "a finite number within the range of a 64-bit float"
		}
		return "a number"
	case TypeBoolean:
		return "true or false"
	case TypeDate:
		return `a date "YYYY-MM-DD"`
	case TypeDatetime:
		return `an RFC 3339 timestamp with an offset, such as "2026-06-03T10:00:00Z"`
	case TypeEnum:
		vs := make([]string, len(a.Enum))
		for i, v := range a.Enum {
			vs[i] = string(v)
		}
		return "one of " + strings.Join(vs, ", ")
	case TypeRef:
		return fmt.Sprintf("the subject id of a %s (a string of 1 to 256 bytes without control characters or outer space)", a.Ref)
	}
	return "a value its schema allows"
}

// abbreviate shows a value in a message, cut short if long.
func abbreviate(v json.RawMessage) string {
	const max = 64
	if len(v) <= max {
		return string(v)
	}
	cut := max
	for cut > 0 && v[cut]&0xc0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return string(v[:cut]) + "..."
}

func isNumber(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
}

// stringValue decodes a canonical JSON string.
func stringValue(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// isDate reports whether s is "YYYY-MM-DD", a real calendar date in years
// 0001 to 9999.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	t, err := time.Parse(time.DateOnly, s)
	return err == nil && t.Year() >= 1
}

// canonicalNumber returns a finite JSON number as encoding/json writes the
// nearest float64: the shortest form that reads back the same.
func canonicalNumber(s string) (json.RawMessage, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, err
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%s is out of range", s)
	}
	if f == 0 {
		f = 0 // -0 is 0
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// canonicalInteger returns a JSON number with an integral value as decimal
// digits, exactly (not through a float64), or the rule it breaks:
// "integer" when it has a fraction, "range" when it is beyond ±(2^53-1).
func canonicalInteger(s string) (json.RawMessage, string) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil { // an exponent too long for an int
			e = math.MaxInt32
			if strings.HasPrefix(s[i+1:], "-") {
				e = math.MinInt32
			}
		}
		exp = max(min(e, math.MaxInt32), math.MinInt32)
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= len(mant) - i - 1
	}
	digits = strings.TrimLeft(digits, "0")
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return json.RawMessage("0"), ""
	}
	if exp < 0 {
		return nil, "integer"
	}
	if len(digits)+exp > 16 {
		return nil, "range"
	}
	n, err := strconv.ParseUint(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil || n > maxSafeInteger {
		return nil, "range"
	}
	out := strconv.FormatUint(n, 10)
	if neg {
		out = "-" + out
	}
	return json.RawMessage(out), ""
}
