package sgam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxValueDepth bounds how deeply arrays and objects nest in a value (each
// one is a level: [[1]] has two). SQLite's json_valid, which 'sgam check'
// runs over every stored value, gives up beyond 1,000 levels: a deeper
// value would be accepted, then called invalid.
const MaxValueDepth = 256

// CheckJSON reports whether raw is one strict JSON text, which
// encoding/json reads exactly as written. It refuses what encoding/json
// would silently rewrite: invalid UTF-8 and lone UTF-16 surrogate escapes
// ("\ud800" without its pair), which it reads as U+FFFD; a key given twice
// in one object, of which it keeps the last; numbers beyond the range of a
// float64 (1e400); and arrays and objects nested more than MaxValueDepth
// levels inside a member. raw is an object of fields (a request body, a
// script or export line, tool arguments): an error names the top-level
// member the fault is in (a member given twice names itself), or field when
// the fault is in none.
func CheckJSON(field string, raw []byte) error {
	f := scanJSON(raw, 1, false)
	if f == nil {
		return nil
	}
	object := bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
	if n := len(f.path); n > 0 && object && !f.syntax && usableField(f.path[n-1]) {
		field, f.path = f.path[n-1], f.path[:n-1]
	} else if n == 0 && object && f.twice && usableField(f.key) {
		return Errorf(Invalid, f.key, "is given twice; give each field once")
	}
	return f.valueError(field)
}

// usableField reports whether a member's key can name the field of an
// error: short printable text.
func usableField(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// jsonFault is what scanJSON found wrong, and where.
type jsonFault struct {
	msg string // what is wrong, as it follows the field's name
	// path holds the object keys and array indexes from the fault up to
	// the top, innermost first (frames add theirs as the fault unwinds,
	// so that a value without a fault costs no path).
	path   []string
	syntax bool // not JSON at all: the message gives the offset, the path is no help
	deep   bool // nested too deeply: the pointer would be hundreds of levels long
	twice  bool // a key given twice, which is key
	key    string
	rule   string // the rule broken, when it has a name ("range")
}

// valueError returns f as the error of field, with the JSON pointer of
// the fault when it is inside the value.
func (f *jsonFault) valueError(field string) error {
	if len(f.path) == 0 || f.syntax || f.deep {
		e := Errorf(Invalid, field, "%s", f.msg)
		e.Rule = f.rule
		return e
	}
	var p strings.Builder
	for i := len(f.path) - 1; i >= 0; i-- {
		p.WriteByte('/')
		p.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.path[i]))
	}
	e := Errorf(Invalid, field, "%s", f.msg)
	e.Pointer, e.Rule = p.String(), f.rule
	return e
}

// scanner walks one JSON text byte by byte (RFC 8259) for scanJSON.
type scanner struct {
	data  []byte
	pos   int
	outer int // levels that hold the value without counting against MaxValueDepth
	noNUL bool
}

// scanJSON checks that data is one strict JSON text (see CheckJSON) whose
// arrays and objects nest at most MaxValueDepth levels inside the outer
// ones (1 for a request body, whose members are the values); noNUL also
// refuses U+0000, which no store keeps in a value (PostgreSQL text cannot
// hold it).
func scanJSON(data []byte, outer int, noNUL bool) *jsonFault {
	s := scanner{data: data, outer: outer, noNUL: noNUL}
	s.space()
	if f := s.value(0); f != nil {
		return f
	}
	s.space()
	if s.pos < len(s.data) {
		return s.syntax("unexpected data after the value")
	}
	return nil
}

func (s *scanner) fault(format string, args ...any) *jsonFault {
	return &jsonFault{msg: fmt.Sprintf(format, args...)}
}

// syntax is a fault at s.pos that makes the input not JSON at all.
func (s *scanner) syntax(what string) *jsonFault {
	f := s.fault("is not valid JSON: unexpected end of input")
	if s.pos < len(s.data) {
		r, _ := utf8.DecodeRune(s.data[s.pos:])
		f = s.fault("is not valid JSON: %s: %q at offset %d", what, r, s.pos)
	}
	f.syntax = true
	return f
}

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value scans the value at s.pos, inside depth arrays and objects.
func (s *scanner) value(depth int) *jsonFault {
	if s.pos >= len(s.data) {
		return s.syntax("")
	}
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxValueDepth+s.outer {
			f := s.fault("nests arrays and objects more than %d levels deep, the limit", MaxValueDepth)
			f.deep = true
			return f
		}
		if c == '{' {
			return s.object(depth + 1)
		}
		return s.array(depth + 1)
	case c == '"':
		_, _, f := s.str()
		return f
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax("expected a value")
}

func (s *scanner) literal(word string) *jsonFault {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return s.syntax("expected " + word)
	}
	s.pos += len(word)
	return nil
}

// object scans the object at s.pos, which makes depth levels.
func (s *scanner) object(depth int) *jsonFault {
	s.pos++ // {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	// Keys seen so far: compared one by one while the object is small, in a
	// map once it is not.
	var small [8][]byte
	keys := small[:0]
	var many map[string]bool
	for {
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("expected a string key")
		}
		raw, escaped, f := s.str()
		if f != nil {
			return f
		}
		key := raw
		if escaped {
			var k string
			if err := json.Unmarshal(s.data[s.pos-len(raw)-2:s.pos], &k); err != nil {
				return s.fault("is not valid JSON: key %s: %v", s.data[s.pos-len(raw)-2:s.pos], err)
			}
			key = []byte(k)
		}
		twice := false
		if many != nil {
			twice = many[string(key)]
			many[string(key)] = true
		} else {
			for _, k := range keys {
				if bytes.Equal(k, key) {
					twice = true
					break
				}
			}
			if keys = append(keys, key); len(keys) > len(small) {
				many = make(map[string]bool, 2*len(keys))
				for _, k := range keys {
					many[string(k)] = true
				}
			}
		}
		if twice {
			return &jsonFault{msg: fmt.Sprintf("holds the key %q twice in one object", key), twice: true, key: string(key)}
		}
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("expected ':' after a key")
		}
		s.pos++
		s.space()
		if f := s.value(depth); f != nil {
			f.path = append(f.path, string(key))
			return f
		}
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.data) && s.data[s.pos] == '}' {
			s.pos++
			return nil
		}
		return s.syntax("expected ',' or '}'")
	}
}

// array scans the array at s.pos, which makes depth levels.
func (s *scanner) array(depth int) *jsonFault {
	s.pos++ // [
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		s.space()
		if f := s.value(depth); f != nil {
			f.path = append(f.path, strconv.Itoa(i))
			return f
		}
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.data) && s.data[s.pos] == ']' {
			s.pos++
			return nil
		}
		return s.syntax("expected ',' or ']'")
	}
}

// str scans the string at s.pos and returns what is between its quotes,
// and whether that holds escapes.
func (s *scanner) str() (raw []byte, escaped bool, f *jsonFault) {
	start := s.pos + 1
	i := start
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return s.data[start:i], escaped, nil
		case c == '\\':
			escaped = true
			n, f := s.escape(i)
			if f != nil {
				return nil, false, f
			}
			i += n
		case c < 0x20:
			s.pos = i
			return nil, false, s.syntax("a control character in a string must be escaped")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s.data[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, s.fault("holds a string that is not valid UTF-8 (the byte 0x%02x)", c)
			}
			i += size
		}
	}
	s.pos = i
	return nil, false, s.syntax("")
}

// escape checks the escape at s.data[i] (a backslash) and returns its
// length.
func (s *scanner) escape(i int) (int, *jsonFault) {
	if i+1 >= len(s.data) {
		s.pos = len(s.data)
		return 0, s.syntax("")
	}
	switch s.data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		r, ok := hex4(s.data[i+2:])
		if !ok {
			s.pos = i
			return 0, s.syntax("expected four hex digits after \\u")
		}
		switch {
		case r == 0 && s.noNUL:
			return 0, s.fault(`contains the character U+0000 ("\u0000"), which no store keeps`)
		case r >= 0xd800 && r < 0xdc00: // a high surrogate, which only a low one may follow
			if i+12 <= len(s.data) && s.data[i+6] == '\\' && s.data[i+7] == 'u' {
				if lo, ok := hex4(s.data[i+8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
					return 12, nil
				}
			}
			return 0, s.fault("holds %q, half of a UTF-16 surrogate pair without the other half", s.data[i:i+6])
		case r >= 0xdc00 && r < 0xe000:
			return 0, s.fault("holds %q, half of a UTF-16 surrogate pair without the other half", s.data[i:i+6])
		}
		return 6, nil
	}
	s.pos = i
	return 0, s.syntax("an unknown escape in a string")
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number scans the number at s.pos.
func (s *scanner) number() *jsonFault {
	start := s.pos
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		return s.syntax("expected a digit")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return s.syntax("expected a digit after the decimal point")
		}
	}
	exponent := false
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		exponent = true
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.syntax("expected a digit in the exponent")
		}
	}
	// Without an exponent, fewer than 309 digits cannot leave float64's
	// range; ParseFloat fails only beyond it (an underflow rounds to 0).
	if num := s.data[start:s.pos]; exponent || len(num) > 300 {
		if _, err := strconv.ParseFloat(string(num), 64); err != nil {
			if len(num) > 40 {
				num = append(num[:37:37], "..."...)
			}
			f := s.fault("holds the number %s, beyond the range of a 64-bit float (about ±1.8e308)", num)
			f.rule = "range"
			return f
		}
	}
	return nil
}
