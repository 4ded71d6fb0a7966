package sgam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits bound every input a store accepts. Zero fields take the defaults.
type Limits struct {
	MaxValueBytes    int // a fact's JSON value; default 64 KiB
	MaxContentBytes  int // an episode's content; default 1 MiB
	MaxMetadataBytes int // an episode's metadata; default 64 KiB
}

// Default input limits.
const (
	DefaultMaxValueBytes    = 64 << 10
	DefaultMaxContentBytes  = 1 << 20
	DefaultMaxMetadataBytes = 64 << 10

	maxTenantBytes    = 128
	maxSubjectBytes   = 256
	maxAttributeBytes = 128
	maxEpisodeIDBytes = 128
	maxKindBytes      = 64
	maxSessionBytes   = 256
	maxIdemKeyBytes   = 256
)

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	if l.MaxContentBytes <= 0 {
		l.MaxContentBytes = DefaultMaxContentBytes
	}
	if l.MaxMetadataBytes <= 0 {
		l.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	return l
}

// checkIdentifier accepts 1..max bytes of ASCII letters, digits and
// "_.:@-", starting with a letter, a digit or '_'. Tenants, attributes,
// kinds and episode ids are identifiers; they never contain the separators
// the stores use internally.
func checkIdentifier(field, s string, max int) error {
	if s == "" {
		return Errorf(Invalid, field, "is required")
	}
	if len(s) > max {
		return Errorf(Invalid, field, "is %d bytes; the limit is %d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == ':' || c == '@' || c == '-'):
		case i == 0 && c == '_':
		default:
			return Errorf(Invalid, field, "%q may hold only letters, digits and _ . : @ - (and must not start with . : @ -)", s)
		}
	}
	return nil
}

// checkText accepts printable UTF-8 of at most max bytes, with no control
// characters, no format characters (Unicode category Cf: bidirectional
// controls such as U+202E, zero-width ones such as U+200B and U+FEFF), and
// no leading or trailing space. Format characters are invisible or reorder
// what is shown, so ids that look alike would differ.
func checkText(field, s string, max int, required bool) error {
	if s == "" {
		if required {
			return Errorf(Invalid, field, "is required")
		}
		return nil
	}
	if len(s) > max {
		return Errorf(Invalid, field, "is %d bytes; the limit is %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return Errorf(Invalid, field, "is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return Errorf(Invalid, field, "%q contains a control character", s)
		}
		if r >= utf8.RuneSelf && unicode.Is(unicode.Cf, r) {
			return Errorf(Invalid, field, "%q contains the invisible format character U+%04X (bidirectional and zero-width characters are refused: they make ids that look alike differ)", s, r)
		}
	}
	if strings.TrimSpace(s) != s {
		return Errorf(Invalid, field, "%q has leading or trailing space", s)
	}
	return nil
}

// CheckTenant validates a tenant id.
func CheckTenant(tenant string) error { return checkIdentifier("tenant", tenant, maxTenantBytes) }

// CheckSubject validates a subject id.
func CheckSubject(subject string) error {
	return withReason(RejectInvalidSubject, checkText("subject", subject, maxSubjectBytes, true))
}

// CheckAttribute validates an attribute name.
func CheckAttribute(attribute string) error {
	return withReason(RejectUnknownAttribute, checkIdentifier("attribute", attribute, maxAttributeBytes))
}

// withReason sets the rejection reason of err, an *Error or nil.
func withReason(reason string, err error) error {
	if e, ok := err.(*Error); ok {
		e.Reason = reason
	}
	return err
}

// CheckSession validates a session id (empty is none).
func CheckSession(session string) error { return checkText("session", session, maxSessionBytes, false) }

// CheckEpisodeID validates an episode id.
func CheckEpisodeID(field, id string) error {
	return checkIdentifier(field, id, maxEpisodeIDBytes)
}

// CheckEpisodeKind validates the kind of an episode a caller will write,
// field naming it in the error; the placeholder kind is reserved.
func CheckEpisodeKind(field, kind string) error {
	if kind == KindUnknown {
		return Errorf(Invalid, field, "%q is reserved for placeholder episodes the store creates", KindUnknown)
	}
	return checkIdentifier(field, kind, maxKindBytes)
}

// Check validates the three parts of a key.
func (k Key) Check() error {
	if err := CheckTenant(k.Tenant); err != nil {
		return err
	}
	if err := CheckSubject(k.Subject); err != nil {
		return err
	}
	if err := CheckAttribute(k.Attribute); err != nil {
		return err
	}
	return checkMember(k.Member)
}

// MaxMemberBytes bounds the canonical value of a set member: members are
// part of the key, and every store indexes keys.
const MaxMemberBytes = 1024

// checkMember accepts "" (a single-valued key) or a canonical JSON value of
// at most MaxMemberBytes.
func checkMember(m string) error {
	if m == "" {
		return nil
	}
	if len(m) > MaxMemberBytes {
		return Errorf(Invalid, "value", "is %d bytes; a member of a set may have at most %d", len(m), MaxMemberBytes)
	}
	c, err := CanonicalValue("member", []byte(m), MaxMemberBytes)
	if err != nil {
		return err
	}
	if string(c) != m {
		return Errorf(Invalid, "member", "is not in canonical form")
	}
	return nil
}

// CanonicalValue validates a JSON value and returns its canonical form
// (compact, object keys sorted, numbers as written), so that equal values
// compare equal byte for byte. null is not a value: absence is a retraction.
// The value must be strict JSON (see CheckJSON), nested at most
// MaxValueDepth levels, with no U+0000.
func CanonicalValue(field string, raw []byte, max int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, Errorf(Invalid, field, "is required: a JSON value such as \"2026-06-30\", 42 or {\"city\":\"Oslo\"}")
	}
	if len(raw) > max {
		return nil, Errorf(Invalid, field, "is %d bytes; the limit is %d", len(raw), max)
	}
	if simpleString(raw) || simpleScalar(raw) {
		return json.RawMessage(bytes.Clone(raw)), nil
	}
	if f := scanJSON(raw, 0, true); f != nil {
		return nil, f.valueError(field)
	}
	if string(raw) == "null" {
		return nil, Errorf(Invalid, field, "null is not a value; retract the attribute to record that it has no value")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil { // after the scan, only a bug in it
		return nil, Errorf(Internal, field, "strict JSON that encoding/json does not read: %v", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, Errorf(Invalid, field, "cannot be encoded: %v", err)
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(out) > max {
		return nil, Errorf(Invalid, field, "is %d bytes in canonical form; the limit is %d", len(out), max)
	}
	return json.RawMessage(out), nil
}

// simpleString reports whether raw is a JSON string of printable ASCII with
// no escapes: already canonical, the common case on the hot path.
func simpleString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// simpleScalar reports whether raw is a short integer, true or false:
// already canonical too (numbers keep the digits they were written with).
func simpleScalar(raw []byte) bool {
	switch string(raw) {
	case "true", "false":
		return true
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

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

// CheckAssertion validates a and returns it normalized: canonical value,
// UTC microsecond valid_from.
func (l Limits) CheckAssertion(a Assertion) (Assertion, error) {
	l = l.WithDefaults()
	if err := a.Key.Check(); err != nil {
		return a, err
	}
	if a.Key.Member != "" {
		return a, errMemberGiven
	}
	v, err := CanonicalValue("value", a.Value, l.MaxValueBytes)
	if err != nil {
		return a, err
	}
	a.Value = v
	if a.ValidFrom, err = CheckTime("valid_from", a.ValidFrom); err != nil {
		return a, err
	}
	if err := CheckEpisodeID("source", a.Source); err != nil {
		return a, err
	}
	return a, nil
}

// errMemberGiven: a write names a set member by its value, never by Key.Member.
var errMemberGiven = Errorf(Invalid, "member", "is set by the store from the value of a set attribute; leave it empty")

// CheckRetraction validates r and returns it normalized.
func (l Limits) CheckRetraction(r Retraction) (Retraction, error) {
	if err := r.Key.Check(); err != nil {
		return r, err
	}
	if r.Key.Member != "" {
		return r, errMemberGiven
	}
	var err error
	if len(r.Value) > 0 {
		if r.Value, err = CanonicalValue("value", r.Value, MaxMemberBytes); err != nil {
			return r, err
		}
	}
	if r.At, err = CheckTime("at", r.At); err != nil {
		return r, err
	}
	if err := CheckEpisodeID("source", r.Source); err != nil {
		return r, err
	}
	return r, nil
}

// CheckEpisode validates e and returns it normalized. ID may be empty (the
// store generates one); a zero OccurredAt becomes now.
func (l Limits) CheckEpisode(e Episode, now time.Time) (Episode, error) {
	l = l.WithDefaults()
	if err := CheckTenant(e.Tenant); err != nil {
		return e, err
	}
	if e.ID != "" {
		if err := CheckEpisodeID("episode_id", e.ID); err != nil {
			return e, err
		}
	}
	if e.Kind == "" {
		e.Kind = KindMessage
	}
	if err := checkIdentifier("kind", e.Kind, maxKindBytes); err != nil {
		return e, err
	}
	if err := checkText("session", e.Session, maxSessionBytes, false); err != nil {
		return e, err
	}
	if len(e.Content) > l.MaxContentBytes {
		return e, Errorf(Invalid, "content", "is %d bytes; the limit is %d", len(e.Content), l.MaxContentBytes)
	}
	if !utf8.ValidString(e.Content) {
		return e, Errorf(Invalid, "content", "is not valid UTF-8")
	}
	if strings.IndexByte(e.Content, 0) >= 0 {
		return e, Errorf(Invalid, "content", "contains the character U+0000, which no store keeps")
	}
	if e.OccurredAt.IsZero() {
		e.OccurredAt = now
	}
	var err error
	if e.OccurredAt, err = CheckTime("occurred_at", e.OccurredAt); err != nil {
		return e, err
	}
	if len(e.Metadata) > 0 {
		m, err := CanonicalValue("metadata", e.Metadata, l.MaxMetadataBytes)
		if err != nil {
			return e, err
		}
		if m[0] != '{' {
			return e, Errorf(Invalid, "metadata", "must be a JSON object")
		}
		e.Metadata = m
	} else {
		e.Metadata = nil
	}
	if err := checkText("idempotency_key", e.IdempotencyKey, maxIdemKeyBytes, false); err != nil {
		return e, err
	}
	if len(e.Subjects) > MaxEpisodeSubjects {
		return e, Errorf(Invalid, "subjects", "has %d subjects; at most %d", len(e.Subjects), MaxEpisodeSubjects)
	}
	for i, s := range e.Subjects {
		field := fmt.Sprintf("subjects[%d]", i)
		if err := CheckSubject(s); err != nil {
			return e, Errorf(Invalid, field, "%s", ErrorMessage(err))
		}
		if slices.Contains(e.Subjects[:i], s) {
			return e, Errorf(Invalid, field, "%q is named twice", s)
		}
	}
	if len(e.Subjects) == 0 {
		e.Subjects = nil
	}
	return e, nil
}

// CheckNewEpisode validates an episode a caller captures: CheckEpisode,
// and the placeholder kind is reserved for the store.
func (l Limits) CheckNewEpisode(e Episode, now time.Time) (Episode, error) {
	if e.Kind == KindUnknown {
		return e, Errorf(Invalid, "kind", "%q is reserved for placeholder episodes the store creates; name the kind of input this is", KindUnknown)
	}
	e, err := l.CheckEpisode(e, now)
	// Only the store's placeholders are empty: a captured episode is what
	// facts cite and recall quotes, and an empty one is a caller's mistake.
	if err == nil && strings.TrimSpace(e.Content) == "" {
		err = Errorf(Invalid, "content", "is required: the episode's text")
	}
	return e, err
}

// Resolve returns the two instants of a read, defaulting to now.
func (at At) Resolve(now time.Time) (asOf, knownAt time.Time, err error) {
	asOf, knownAt = at.AsOf, at.KnownAt
	if asOf.IsZero() {
		asOf = now
	}
	if knownAt.IsZero() {
		knownAt = now
	}
	if asOf, err = CheckTime("as_of", asOf); err != nil {
		return
	}
	knownAt, err = CheckTime("known_at", knownAt)
	return
}

// PrefixField qualifies the field of an *Error with prefix, so that an error
// in a batch names its item ("assertions[3].valid_from").
func PrefixField(prefix string, err error) error { return withFieldPrefix(prefix, err) }

// RenameField returns err naming the field to where it names from, for a
// surface whose input calls a field otherwise than the store does (a
// request's episode_id, a tool's quote for an episode's content); other
// errors are returned as they are.
func RenameField(err error, from, to string) error {
	var e *Error
	if !errors.As(err, &e) || e.Field != from {
		return err
	}
	c := *e
	c.Field = to
	return &c
}
