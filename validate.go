package sgam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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

// CheckSubject validates a subject id. "." and ".." are refused: a
// subject is read at /v1/subjects/{subject}, and every fetch client's URL
// parser removes such a path segment, even escaped as %2E, so a subject of
// that id could be written but never read by them.
func CheckSubject(subject string) error {
	if subject == "." || subject == ".." {
		return withReason(RejectInvalidSubject, Errorf(Invalid, "subject", "%q cannot be a subject id: a URL path segment of it is removed by HTTP clients", subject))
	}
	return withReason(RejectInvalidSubject, checkText("subject", subject, maxSubjectBytes, true))
}

// CheckAttribute validates an attribute name.
func CheckAttribute(attribute string) error {
	return withReason(RejectUnknownAttribute, checkIdentifier("attribute", attribute, maxAttributeBytes))
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
