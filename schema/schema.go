package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sgam-dev/sgam"
)

// Cardinality says how many values an attribute of one subject holds at an
// instant.
type Cardinality string

const (
	// One: a single value; a new value replaces the old one from its
	// valid_from on.
	One Cardinality = "one"
	// Many: a set; each distinct value is a member with its own validity.
	Many Cardinality = "many"
)

// Policy is what a store does when two different values of a single-valued
// attribute claim the same valid_from.
type Policy string

const (
	// Reject refuses the second write with a conflict error (the default:
	// silent overwrites are how memories go wrong).
	Reject Policy = "reject"
	// PreferSource keeps the value whose source kind ranks higher (see
	// Schema.Rank); a tie is rejected.
	PreferSource Policy = "prefer_source"
	// LatestRecorded keeps the newer write; the older row is retracted, not
	// lost.
	LatestRecorded Policy = "latest_recorded"
	// Review holds the second value as a pending candidate until a person
	// confirms or dismisses it.
	Review Policy = "review"
)

// Attribute types.
const (
	TypeString     = "string"
	TypeInteger    = "integer"
	TypeNumber     = "number"
	TypeBoolean    = "boolean"
	TypeDate       = "date"
	TypeDatetime   = "datetime"
	TypeEnum       = "enum"
	TypeRef        = "ref"
	TypeJSONSchema = "json_schema"
)

// Migration kinds.
const (
	KindRename = "rename"
	KindRetype = "retype"
	KindSplit  = "split"
)

// Limits on a schema file. They bound the work Parse does on untrusted
// input; a real schema is far below each.
const (
	// MaxFileBytes is the largest schema file Parse reads.
	MaxFileBytes = 1 << 20
	// MaxAttributes is the most attributes a schema may declare.
	MaxAttributes = 10000
	// MaxDepth is the deepest nesting of mappings and lists in the file,
	// counted from the top level; a json_schema starts at depth 3.
	MaxDepth = 64
)

// builtinMemoryTypes are always allowed as an attribute's memory type: the
// five of the product (preference, profile, task, account, compliance) and
// two more that agents commonly need (relation for ref attributes, event).
var builtinMemoryTypes = []string{"preference", "profile", "task", "account", "compliance", "relation", "event"}

// defaultSourceRanks is the ranking of source kinds when a schema names
// none, highest first: what the user confirmed beats what a tool returned,
// which beats a business event, a chat message, and the model's inference.
var defaultSourceRanks = []string{"user_confirmed", "tool", "event", "message", "inferred"}

// Schema is a parsed, valid schema file. Build one with Parse; a Schema is
// read-only after that and safe for concurrent use.
type Schema struct {
	Name string
	// Retention maps a class name to its time to live.
	Retention map[string]Retention
	// EpisodeRetention is the class applied to episodes that name none;
	// "" keeps them forever.
	EpisodeRetention string
	// SourceRanks lists source kinds highest first; the defaults when the
	// file names none.
	SourceRanks []string
	// MemoryTypes holds the built-in memory types followed by the file's
	// own.
	MemoryTypes []string
	// Entities lists the entity types a ref may name; nil when the file
	// declares none, and then any identifier is accepted.
	Entities   []string
	Attributes []*Attribute // in file order
	Migrations []*Migration // in file order, which is the order they apply

	byName map[string]*Attribute // by name and by alias
}

// Retention is a retention class: how long what belongs to it is kept.
type Retention struct {
	Name    string
	TTL     time.Duration // 0 when Forever
	Forever bool
}

// String renders the TTL as it is written in a schema file ("30d",
// "forever"), in the largest unit that divides it.
func (r Retention) String() string {
	if r.Forever {
		return "forever"
	}
	return formatTTL(r.TTL)
}

// Attribute is a declared attribute: what values it takes and how a store
// treats them.
type Attribute struct {
	Name        string
	Memory      string // memory type, for filtering reads
	Description string // shown to the extraction model and to people
	// Type is one of the Type* constants.
	Type string
	// Enum holds the allowed values, canonical, when Type is "enum".
	Enum []json.RawMessage
	// Ref names the entity type a "ref" points at.
	Ref string
	// JSONSchema is the JSON Schema (canonical JSON) of a "json_schema"
	// attribute.
	JSONSchema  json.RawMessage
	Cardinality Cardinality
	Conflict    Policy
	// Sensitive attributes become facts only on a user_confirmed source.
	Sensitive bool
	// Promote, when set, makes a value a fact only once Promote.After
	// consistent signals (the same value) from distinct episodes fall
	// within Promote.Within; until then each is a pending signal.
	Promote *Promote
	// Inferred lets extraction accept a value the model read from its
	// quote without the quote stating it ("next Friday" for a date,
	// "urgent" for a priority): by default a model's value must be words
	// (or, for dates and numbers, a written form) of its quote.
	Inferred bool
	// Future is how far after its episode a value the model extracts may
	// start to hold (its valid_from), for attributes whose changes are
	// announced ahead ("the plan changes to pro on July 1"); 0: the
	// default margin of extraction (extract.FutureMargin).
	Future    time.Duration
	Retention string // a retention class, or "" for none
	// Aliases are old names that still resolve to this attribute.
	Aliases []string
	Line    int // line of the attribute in the file; 0 when not parsed

	compiled *jsonschema.Schema // for Type "json_schema", set by Parse
}

// Promote is an attribute's consolidation rule: a value becomes a fact
// after After signals of it, from distinct episodes, whose valid_from lie
// within Within of each other; a different value in between starts over.
type Promote struct {
	After  int
	Within time.Duration
}

// Limits of a promote rule.
const (
	MinPromoteAfter = 2
	MaxPromoteAfter = 100
)

// Migration is one step that carries stored facts to this schema version.
type Migration struct {
	Name string
	Kind string // one of the Kind* constants
	// From is the old attribute name of a rename or split, and the
	// attribute of a retype.
	From string
	// To lists the attributes the migration writes: a rename's new name, a
	// retype's attribute, a split's targets sorted by name.
	To []string
	// Transforms maps each target to the CEL expression that computes its
	// value from the old one (variable "value"); nil for a rename.
	Transforms map[string]string
	// DualReadUntil ends the window in which reads of a renamed attribute's
	// old name resolve to the new one; nil for none.
	DualReadUntil *time.Time
	Line          int // line of the migration in the file; 0 when not parsed

	programs map[string]cel.Program // compiled Transforms, set by Parse
}

// Attribute returns the attribute declared with name, or with name as an
// alias (an old name), else the built-in attribute called name.
func (s *Schema) Attribute(name string) (*Attribute, bool) {
	if a, ok := s.declared(name); ok {
		return a, true
	}
	return Builtin(name)
}

// declared returns the attribute the file declares with name or with name
// as an alias.
func (s *Schema) declared(name string) (*Attribute, bool) {
	if s.byName == nil {
		for _, a := range s.Attributes {
			if a.Name == name || slices.Contains(a.Aliases, name) {
				return a, true
			}
		}
		return nil, false
	}
	a, ok := s.byName[name]
	return a, ok
}

// Rank returns how strongly a source kind counts under the prefer_source
// policy: the first of SourceRanks gets len(SourceRanks), the last 1, and a
// kind not listed (such as the "unknown" of a placeholder episode) 0.
func (s *Schema) Rank(kind string) int {
	if i := slices.Index(s.SourceRanks, kind); i >= 0 {
		return len(s.SourceRanks) - i
	}
	return 0
}

// RetentionTTL returns the time to live of a retention class; ok is false
// when the schema declares no such class.
func (s *Schema) RetentionTTL(class string) (ttl time.Duration, forever bool, ok bool) {
	r, ok := s.Retention[class]
	return r.TTL, r.Forever, ok
}

// DualRead returns the new name of an attribute renamed from oldName by a
// migration whose dual-read window is still open at now, so that a read of
// the old name keeps working while callers move over.
func (s *Schema) DualRead(oldName string, now time.Time) (string, bool) {
	for i := len(s.Migrations) - 1; i >= 0; i-- {
		m := s.Migrations[i]
		if m.Kind == KindRename && m.From == oldName && m.DualReadUntil != nil && now.Before(*m.DualReadUntil) {
			return m.To[0], true
		}
	}
	return "", false
}

// Hash returns the SHA-256 of Canonical in hex: the identity of a schema
// version.
func (s *Schema) Hash() string {
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}

// Canonical returns the schema as compact JSON with every default spelled
// out and a fixed key order, so that two schemas that mean the same are
// byte-equal. Attributes and migrations keep their file order (migrations
// apply in it). Parse(Canonical()) gives an equal schema, less the line
// numbers.
func (s *Schema) Canonical() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	field := func(name string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(jsonString(name))
		b.WriteByte(':')
	}
	if s.Name != "" {
		field("name")
		b.Write(jsonString(s.Name))
	}
	if len(s.Retention) > 0 {
		field("retention")
		names := make([]string, 0, len(s.Retention))
		for n := range s.Retention {
			names = append(names, n)
		}
		slices.Sort(names)
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonString(n))
			b.WriteByte(':')
			b.Write(jsonString(s.Retention[n].String()))
		}
		b.WriteByte('}')
	}
	if s.EpisodeRetention != "" {
		field("episode_retention")
		b.Write(jsonString(s.EpisodeRetention))
	}
	field("source_ranks")
	writeStrings(&b, s.SourceRanks)
	if extra := s.userMemoryTypes(); len(extra) > 0 {
		field("memory_types")
		writeStrings(&b, extra)
	}
	if s.Entities != nil {
		field("entities")
		writeStrings(&b, s.Entities)
	}
	field("attributes")
	b.WriteByte('{')
	for i, a := range s.Attributes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(a.Name))
		b.WriteByte(':')
		a.canonical(&b)
	}
	b.WriteByte('}')
	if len(s.Migrations) > 0 {
		field("migrations")
		b.WriteByte('[')
		for i, m := range s.Migrations {
			if i > 0 {
				b.WriteByte(',')
			}
			m.canonical(&b)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// userMemoryTypes returns the memory types the file added to the built-ins.
func (s *Schema) userMemoryTypes() []string {
	var out []string
	for _, t := range s.MemoryTypes {
		if !slices.Contains(builtinMemoryTypes, t) {
			out = append(out, t)
		}
	}
	return out
}

func (a *Attribute) canonical(b *bytes.Buffer) {
	fmt.Fprintf(b, `{"memory":%s,`, jsonString(a.Memory))
	switch a.Type {
	case TypeEnum:
		b.WriteString(`"type":{"enum":[`)
		for i, v := range a.Enum {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteString(`]}`)
	case TypeRef:
		fmt.Fprintf(b, `"type":{"ref":%s}`, jsonString(a.Ref))
	case TypeJSONSchema:
		b.WriteString(`"json_schema":`)
		b.Write(a.JSONSchema)
	default:
		fmt.Fprintf(b, `"type":%s`, jsonString(a.Type))
	}
	fmt.Fprintf(b, `,"cardinality":%s,"conflict":%s,"sensitive":%t`,
		jsonString(string(a.Cardinality)), jsonString(string(a.Conflict)), a.Sensitive)
	if a.Retention != "" {
		fmt.Fprintf(b, `,"retention":%s`, jsonString(a.Retention))
	}
	if a.Promote != nil {
		fmt.Fprintf(b, `,"promote":{"after":%d,"within":%s}`, a.Promote.After, jsonString(formatTTL(a.Promote.Within)))
	}
	// Written only when set, so that the schemas from before these keys
	// keep their hash.
	if a.Inferred {
		b.WriteString(`,"inferred":true`)
	}
	if a.Future > 0 {
		fmt.Fprintf(b, `,"future":%s`, jsonString(formatTTL(a.Future)))
	}
	if a.Description != "" {
		fmt.Fprintf(b, `,"description":%s`, jsonString(a.Description))
	}
	if len(a.Aliases) > 0 {
		b.WriteString(`,"aliases":`)
		writeStrings(b, a.Aliases)
	}
	b.WriteByte('}')
}

func (m *Migration) canonical(b *bytes.Buffer) {
	fmt.Fprintf(b, `{"name":%s,%s:`, jsonString(m.Name), jsonString(m.Kind))
	switch m.Kind {
	case KindRename:
		fmt.Fprintf(b, `{"from":%s,"to":%s}`, jsonString(m.From), jsonString(first(m.To)))
	case KindRetype:
		fmt.Fprintf(b, `{"attribute":%s,"transform":%s}`, jsonString(m.From), jsonString(m.Transforms[m.From]))
	case KindSplit:
		fmt.Fprintf(b, `{"from":%s,"into":{`, jsonString(m.From))
		for i, t := range m.To {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, `%s:%s`, jsonString(t), jsonString(m.Transforms[t]))
		}
		b.WriteString(`}}`)
	default:
		b.WriteString(`null`)
	}
	if m.DualReadUntil != nil {
		fmt.Fprintf(b, `,"dual_read_until":%s`, jsonString(sgam.FormatTime(*m.DualReadUntil)))
	}
	b.WriteByte('}')
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes (invalid UTF-8 becomes U+FFFD)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func writeStrings(b *bytes.Buffer, ss []string) {
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(s))
	}
	b.WriteByte(']')
}

// ttlUnits are the units of a TTL, largest first.
var ttlUnits = []struct {
	suffix string
	d      time.Duration
}{
	{"y", 365 * 24 * time.Hour},
	{"w", 7 * 24 * time.Hour},
	{"d", 24 * time.Hour},
	{"h", time.Hour},
}

// formatTTL renders d in the largest unit that divides it.
func formatTTL(d time.Duration) string {
	for _, u := range ttlUnits {
		if d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.suffix)
		}
	}
	// Parse only makes whole hours; a hand-built TTL falls back to Go's form.
	return d.String()
}

// parseTTL parses "30d", "12h", "6w", "2y" (a year is 365 days).
func parseTTL(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("%q is not a duration like 30d, 12h, 6w, 2y, or forever", s)
	}
	num, suffix := s[:len(s)-1], s[len(s)-1:]
	var unit time.Duration
	for _, u := range ttlUnits {
		if u.suffix == suffix {
			unit = u.d
		}
	}
	if unit == 0 || strings.TrimLeft(num, "0123456789") != "" || len(num) > 6 {
		return 0, fmt.Errorf("%q is not a duration like 30d, 12h, 6w, 2y, or forever", s)
	}
	var n int64
	for _, c := range num {
		n = n*10 + int64(c-'0')
	}
	if n == 0 {
		return 0, fmt.Errorf("%q is zero; a class keeps what it holds for a positive time, or forever", s)
	}
	const maxTTL = 200 * 365 * 24 * time.Hour // well inside time.Duration
	if n > int64(maxTTL/unit) {
		return 0, fmt.Errorf("%q is longer than 200 years; write forever", s)
	}
	return time.Duration(n) * unit, nil
}

// String renders a promote rule as a schema file writes it, "none" for
// nil.
func (p *Promote) String() string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("{after: %d, within: %s}", p.After, formatTTL(p.Within))
}
