package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	yamlparser "github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sgam-dev/sgam"
)

// Problem is one thing wrong in a schema file.
type Problem struct {
	Line    int    // 1-based; 0 when the problem is with the file as a whole
	Path    string // where in the file: "attributes.plan.type", "migrations[0].rename.to"
	Message string
}

// String renders p as "line 12: attributes.plan.type: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ParseError lists every problem Parse found in a schema file, in line
// order, so that a user can fix them all in one pass. After maxProblems the
// rest are counted in a last problem rather than listed.
type ParseError struct {
	Problems []Problem
}

// Error renders one problem a line.
func (e *ParseError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as an *sgam.Error with code Invalid and field
// "schema", so that callers that map sgam error codes (the CLI's exit
// status, the HTTP status) treat a bad schema file like any bad input.
func (e *ParseError) Unwrap() error {
	return &sgam.Error{Code: sgam.Invalid, Field: "schema", Message: e.Error()}
}

const (
	maxProblems         = 100
	maxNameBytes        = 128  // attribute, entity, class, migration names
	maxKindBytes        = 64   // source kinds, as sgam limits episode kinds
	maxLabelBytes       = 256  // the schema's name
	maxDescriptionBytes = 4096 // an attribute's description
	maxTransformBytes   = 4096 // a CEL expression
	// maxIndentColumn bounds block nesting before the YAML parser, whose
	// time grows with the square of the depth, sees the file.
	maxIndentColumn = 4 * MaxDepth
)

var (
	topKeys       = []string{"name", "retention", "episode_retention", "source_ranks", "memory_types", "entities", "attributes", "migrations"}
	attributeKeys = []string{"memory", "type", "json_schema", "cardinality", "conflict", "sensitive", "retention", "promote", "inferred", "future", "description", "aliases"}
	promoteKeys   = []string{"after", "within"}
	migrationKeys = []string{"name", "rename", "retype", "split", "dual_read_until"}
	shorthand     = []string{TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeDate, TypeDatetime}
	policies      = []string{string(Reject), string(PreferSource), string(LatestRecorded), string(Review)}
)

// Parse reads a schema file (YAML, or JSON, which is YAML). On any problem
// it returns a *ParseError that lists every problem found, each with its
// line and path; errors.As finds an *sgam.Error with code Invalid in it.
func Parse(data []byte) (*Schema, error) {
	p := &reader{}
	s := p.parse(data)
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	return s, nil
}

// reader collects problems while it walks the file.
type reader struct {
	problems []Problem
}

func (p *reader) add(line int, path, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: line, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (p *reader) err() *ParseError {
	ps := slices.Clone(p.problems)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
	if len(ps) > maxProblems {
		more := len(ps) - maxProblems
		ps = append(ps[:maxProblems], Problem{Line: ps[maxProblems].Line, Message: fmt.Sprintf("and %d more problems", more)})
	}
	return &ParseError{Problems: ps}
}

// --- the file as a tree of nodes

type nodeKind int

const (
	nullNode nodeKind = iota
	stringNode
	intNode
	floatNode
	boolNode
	mapNode
	seqNode
	// badNode stands for a value a problem was already reported about;
	// readers pass over it silently, so that one mistake is one problem.
	badNode
)

// node is a YAML value reduced to what JSON can say, with its line. The
// YAML library's own tree is walked once, into this one, so that the rest
// of the parser deals with six kinds of value instead of YAML's variety.
type node struct {
	kind    nodeKind
	line    int
	text    string // scalars: the string, or the number or boolean as written
	num     string // intNode, floatNode: the value as a JSON number; "" if not finite
	b       bool   // boolNode
	entries []entry
	items   []*node
}

type entry struct {
	key  string
	line int
	val  *node
}

func (n *node) describe() string {
	switch n.kind {
	case nullNode:
		return "null"
	case stringNode:
		return fmt.Sprintf("the string %q", n.text)
	case intNode, floatNode:
		return "the number " + n.text
	case boolNode:
		return n.text
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	default:
		return "an invalid value"
	}
}

// jsonNumber matches the JSON number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

var byteOrderMark = []byte("\xef\xbb\xbf")

// parse checks the bounds of the input, parses the YAML and walks it.
func (p *reader) parse(data []byte) *Schema {
	if len(data) > MaxFileBytes {
		p.add(0, "", "the file is %d bytes; the limit is %d", len(data), MaxFileBytes)
		return nil
	}
	data = bytes.TrimPrefix(data, byteOrderMark)
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		p.add(1+bytes.Count(data[:i], []byte("\n")), "", "the file is not valid UTF-8")
		return nil
	}
	for i, c := range data {
		if c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			p.add(1+bytes.Count(data[:i], []byte("\n")), "", "the file contains the control character %U", rune(c))
			return nil
		}
	}
	root := p.yaml(data)
	if root == nil {
		return nil
	}
	return p.schema(root)
}

// yaml parses data into a node tree.
func (p *reader) yaml(data []byte) (root *node) {
	tokens := lexer.Tokenize(string(data))
	if !p.shallow(tokens) {
		return nil
	}
	var file *ast.File
	var err error
	func() {
		// The YAML library is outside code run on outside input; a panic in
		// it is a problem with the file, not a crash of the caller.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the YAML parser failed: %v", r)
			}
		}()
		file, err = yamlparser.Parse(tokens, 0, yamlparser.AllowDuplicateMapKey())
	}()
	if err != nil {
		p.problems = append(p.problems, YAMLProblem(err))
		return nil
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch len(docs) {
	case 0:
		return &node{kind: nullNode, line: 1}
	case 1:
	default:
		p.add(lineOf(docs[1].Body), "", "the file holds %d YAML documents; a schema is one", len(docs))
		return nil
	}
	return p.convert(docs[0].Body, "", 0)
}

// shallow reports whether the tokens nest at most MaxDepth flow levels and
// their block structure stays within maxIndentColumn, adding a problem if
// not. The YAML parser recurses once a level and is slow on deep input, so
// depth is checked on the tokens first.
func (p *reader) shallow(tokens token.Tokens) bool {
	if pr := depthProblem(tokens); pr != nil {
		p.problems = append(p.problems, *pr)
		return false
	}
	return true
}

// DepthProblem is the problem of a YAML file that nests deeper than
// MaxDepth levels, or nil: to check before a YAML parser, whose time grows
// with the square of the depth, sees the file.
func DepthProblem(data []byte) *Problem { return depthProblem(lexer.Tokenize(string(data))) }

func depthProblem(tokens token.Tokens) *Problem {
	depth := 0
	prevLine := 0
	for _, tk := range tokens {
		if tk.Position == nil {
			continue
		}
		firstOnLine := tk.Position.Line != prevLine
		prevLine = tk.Position.Line
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			depth++
			if depth > MaxDepth {
				return &Problem{Line: tk.Position.Line, Message: fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
			}
			continue
		case token.SequenceEndType, token.MappingEndType:
			if depth > 0 {
				depth--
			}
			continue
		}
		if depth == 0 && tk.Position.Column > maxIndentColumn &&
			(firstOnLine || tk.Type == token.SequenceEntryType || tk.Type == token.MappingKeyType) {
			return &Problem{Line: tk.Position.Line, Message: fmt.Sprintf("nesting is deeper than %d levels (indented past column %d)", MaxDepth, maxIndentColumn)}
		}
	}
	return nil
}

// YAMLProblem is the problem a YAML parser's error describes, at its line
// when the error has one: for every YAML file sgam reads (schemas, eval
// scenarios).
func YAMLProblem(err error) Problem {
	line, msg := 0, err.Error()
	var ye interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
	}
	return Problem{Line: line, Message: "not valid YAML: " + msg}
}

func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// convert turns a YAML node into a node, adding a problem for what a
// schema has no use for: anchors, aliases, tags, merge keys, complex keys.
func (p *reader) convert(n ast.Node, path string, depth int) *node {
	line := lineOf(n)
	if depth > MaxDepth {
		p.add(line, path, "nesting is deeper than %d levels", MaxDepth)
		return &node{kind: badNode, line: line}
	}
	switch n := n.(type) {
	case nil:
		return &node{kind: nullNode, line: line}
	case *ast.NullNode:
		return &node{kind: nullNode, line: line}
	case *ast.StringNode:
		if n.Token != nil && n.Token.Type == token.StringType && jsonNumber.MatchString(n.Value) {
			// A plain scalar such as 1e2 or a 30-digit integer, which the
			// YAML library leaves a string; YAML 1.2 and JSON call it a number.
			return &node{kind: floatNode, line: line, text: n.Value, num: n.Value}
		}
		return p.stringNode(n.Value, line, path)
	case *ast.LiteralNode:
		if n.Value == nil {
			return p.stringNode("", line, path)
		}
		return p.stringNode(n.Value.Value, line, path)
	case *ast.IntegerNode:
		text := n.Token.Value
		num := text
		if !jsonNumber.MatchString(num) {
			num = fmt.Sprint(n.Value)
		}
		return &node{kind: intNode, line: line, text: text, num: num}
	case *ast.FloatNode:
		text := n.Token.Value
		num := text
		switch {
		case math.IsInf(n.Value, 0) || math.IsNaN(n.Value):
			num = ""
		case !jsonNumber.MatchString(num):
			num = strconv.FormatFloat(n.Value, 'g', -1, 64)
		}
		return &node{kind: floatNode, line: line, text: text, num: num}
	case *ast.InfinityNode:
		return &node{kind: floatNode, line: line, text: n.Token.Value}
	case *ast.NanNode:
		return &node{kind: floatNode, line: line, text: n.Token.Value}
	case *ast.BoolNode:
		return &node{kind: boolNode, line: line, text: strconv.FormatBool(n.Value), b: n.Value}
	case *ast.MappingNode:
		out := &node{kind: mapNode, line: line}
		for _, kv := range n.Values {
			p.convertEntry(out, kv, path, depth)
		}
		if len(out.entries) > 0 {
			out.line = out.entries[0].line
		}
		return out
	case *ast.MappingValueNode:
		out := &node{kind: mapNode, line: line}
		p.convertEntry(out, n, path, depth)
		if len(out.entries) > 0 {
			out.line = out.entries[0].line
		}
		return out
	case *ast.SequenceNode:
		out := &node{kind: seqNode, line: line, items: make([]*node, 0, len(n.Values))}
		for i, v := range n.Values {
			out.items = append(out.items, p.convert(v, fmt.Sprintf("%s[%d]", path, i), depth+1))
		}
		return out
	case *ast.AnchorNode, *ast.AliasNode:
		p.add(line, path, "YAML anchors and aliases are not supported; write the value out")
	case *ast.TagNode:
		p.add(line, path, "YAML tags (%s) are not supported", n.Start.Value)
	default:
		p.add(line, path, "unsupported YAML (%s)", n.Type())
	}
	return &node{kind: badNode, line: line}
}

func (p *reader) stringNode(s string, line int, path string) *node {
	if strings.ContainsRune(s, 0) {
		p.add(line, path, `contains the character U+0000 ("\0"), which no store keeps`)
		return &node{kind: badNode, line: line}
	}
	return &node{kind: stringNode, line: line, text: s}
}

func (p *reader) convertEntry(m *node, kv *ast.MappingValueNode, path string, depth int) {
	line := lineOf(kv.Key)
	var key string
	switch k := kv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	case *ast.IntegerNode:
		key = k.Token.Value
	case *ast.FloatNode:
		key = k.Token.Value
	case *ast.BoolNode:
		key = k.Token.Value
	case *ast.MergeKeyNode:
		p.add(line, path, "YAML merge keys (<<) are not supported; write the keys out")
		return
	default:
		p.add(line, path, "a key must be a plain name, not %s", kv.Key.Type())
		return
	}
	if strings.ContainsRune(key, 0) {
		p.add(line, path, `a key contains the character U+0000 ("\0")`)
		return
	}
	sub := join(path, key)
	for _, e := range m.entries {
		if e.key == key {
			p.add(line, sub, "duplicate key %q (first at line %d)", key, e.line)
			return
		}
	}
	val := p.convert(kv.Value, sub, depth+1)
	if val.kind == nullNode || val.line == 0 {
		val.line = line
	}
	m.entries = append(m.entries, entry{key: key, line: line, val: val})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// --- reading values from nodes

// fields checks that n is a mapping with only the allowed keys and returns
// its entries by key; a key with a null value is left out, as if absent.
func (p *reader) fields(n *node, path string, allowed []string) map[string]*entry {
	if n.kind == badNode {
		return nil
	}
	if n.kind != mapNode {
		p.add(n.line, path, "must be a mapping of keys to values, not %s", n.describe())
		return nil
	}
	out := make(map[string]*entry, len(n.entries))
	for i := range n.entries {
		e := &n.entries[i]
		if !slices.Contains(allowed, e.key) {
			msg := fmt.Sprintf("unknown key %q", e.key)
			if s := suggest(e.key, allowed); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			p.add(e.line, path, "%s; the keys are %s", msg, strings.Join(allowed, ", "))
			continue
		}
		if e.val.kind != nullNode {
			out[e.key] = e
		}
	}
	return out
}

// text returns a scalar as text: YAML's numbers and booleans read as
// written, so that "name: 2026" is the name "2026".
func (p *reader) text(n *node, path string) (string, bool) {
	switch n.kind {
	case stringNode, intNode, floatNode, boolNode:
		return n.text, true
	case badNode:
		return "", false
	}
	p.add(n.line, path, "must be a string, not %s", n.describe())
	return "", false
}

// label reads printable text of at most max bytes.
func (p *reader) label(n *node, path string, max int, multiline bool) string {
	s, ok := p.text(n, path)
	if !ok {
		return ""
	}
	if len(s) > max {
		p.add(n.line, path, "is %d bytes; the limit is %d", len(s), max)
		return ""
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			p.add(n.line, path, "contains the control character %U", r)
			return ""
		}
	}
	return s
}

// name reads an identifier: letters, digits and _ . : @ -, starting with a
// letter or digit, at most max bytes. These names end up in store keys and
// CLI arguments, so they stay plain.
func (p *reader) name(n *node, path string, max int) (string, bool) {
	s, ok := p.text(n, path)
	if !ok {
		return "", false
	}
	if err := checkName(s, max); err != "" {
		p.add(n.line, path, "%s", err)
		return "", false
	}
	return s, true
}

func checkName(s string, max int) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > max {
		return fmt.Sprintf("%q is %d bytes; the limit is %d", s[:min(len(s), 32)]+"...", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == ':' || c == '@' || c == '-'):
		default:
			return fmt.Sprintf("%q is not a valid name: use letters, digits and _ . : @ -, starting with a letter or digit", s)
		}
	}
	return ""
}

// names reads a list of distinct identifiers. It returns a non-nil slice
// when n is a list, even an empty one.
func (p *reader) names(n *node, path string, max int) []string {
	if n.kind == badNode {
		return nil
	}
	if n.kind != seqNode {
		p.add(n.line, path, "must be a list such as [a, b], not %s", n.describe())
		return nil
	}
	out := make([]string, 0, len(n.items))
	for i, item := range n.items {
		s, ok := p.name(item, index(path, i), max)
		if !ok {
			continue
		}
		if slices.Contains(out, s) {
			p.add(item.line, index(path, i), "%q is listed twice", s)
			continue
		}
		out = append(out, s)
	}
	return out
}

// oneOf reads one of a fixed set of words.
func (p *reader) oneOf(n *node, path string, words []string) (string, bool) {
	s, ok := p.text(n, path)
	if !ok {
		return "", false
	}
	if !slices.Contains(words, s) {
		msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(words, ", "))
		if g := suggest(s, words); g != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", g)
		}
		p.add(n.line, path, "%s", msg)
		return "", false
	}
	return s, true
}

// --- the schema

func (p *reader) schema(root *node) *Schema {
	s := &Schema{
		Retention:   map[string]Retention{},
		SourceRanks: slices.Clone(defaultSourceRanks),
		MemoryTypes: slices.Clone(builtinMemoryTypes),
	}
	if root.kind == nullNode {
		// An empty file (or an empty request body) is a mistake far more
		// often than a schema meant to declare nothing, and applying it
		// would refuse every attribute the tenant writes.
		p.add(root.line, "", "the schema is empty; a schema that declares no attributes says so: attributes: {}")
		return nil
	}
	top := p.fields(root, "", topKeys)
	if top == nil {
		return nil
	}
	if e := top["name"]; e != nil {
		s.Name = p.label(e.val, "name", maxLabelBytes, false)
	}
	if e := top["retention"]; e != nil {
		p.retention(s, e.val)
	}
	if e := top["episode_retention"]; e != nil {
		if c, ok := p.name(e.val, "episode_retention", maxNameBytes); ok {
			if _, declared := s.Retention[c]; !declared {
				p.add(e.val.line, "episode_retention", "%q is not a declared retention class%s", c, didYouMean(c, mapKeys(s.Retention)))
			} else {
				s.EpisodeRetention = c
			}
		}
	}
	if e := top["source_ranks"]; e != nil {
		ranks := p.names(e.val, "source_ranks", maxKindBytes)
		if i := slices.Index(ranks, sgam.KindUnknown); i >= 0 {
			ranks = slices.Delete(ranks, i, i+1)
			for j, item := range e.val.items {
				if item.text == sgam.KindUnknown {
					p.add(item.line, index("source_ranks", j), "%q is the kind of placeholder episodes, which always rank lowest", sgam.KindUnknown)
				}
			}
		}
		if e.val.kind == seqNode && len(e.val.items) == 0 {
			p.add(e.val.line, "source_ranks", "must list at least one source kind, or be left out for the default %s", strings.Join(defaultSourceRanks, ", "))
		}
		if len(ranks) > 0 {
			s.SourceRanks = ranks
		}
	}
	if e := top["memory_types"]; e != nil {
		for _, t := range p.names(e.val, "memory_types", maxNameBytes) {
			if !slices.Contains(s.MemoryTypes, t) {
				s.MemoryTypes = append(s.MemoryTypes, t)
			}
		}
	}
	if e := top["entities"]; e != nil {
		if es := p.names(e.val, "entities", maxNameBytes); es != nil {
			s.Entities = es
		}
	}
	if e := top["attributes"]; e != nil {
		p.attributes(s, e.val)
	}
	s.index()
	if e := top["migrations"]; e != nil {
		p.migrations(s, e.val)
	}
	return s
}

func (p *reader) retention(s *Schema, n *node) {
	if n.kind == badNode {
		return
	}
	if n.kind != mapNode {
		p.add(n.line, "retention", "must map class names to durations (session: 30d), not %s", n.describe())
		return
	}
	for _, e := range n.entries {
		path := join("retention", e.key)
		if err := checkName(e.key, maxNameBytes); err != "" {
			p.add(e.line, path, "%s", err)
			continue
		}
		v, ok := p.text(e.val, path)
		if !ok {
			continue
		}
		if v == "forever" {
			s.Retention[e.key] = Retention{Name: e.key, Forever: true}
			continue
		}
		ttl, err := parseTTL(v)
		if err != nil {
			p.add(e.val.line, path, "%v", err)
			continue
		}
		s.Retention[e.key] = Retention{Name: e.key, TTL: ttl}
	}
}

func (p *reader) attributes(s *Schema, n *node) {
	if n.kind == badNode {
		return
	}
	if n.kind != mapNode {
		p.add(n.line, "attributes", "must map attribute names to their declarations, not %s", n.describe())
		return
	}
	if len(n.entries) > MaxAttributes {
		p.add(n.line, "attributes", "declares %d attributes; the limit is %d", len(n.entries), MaxAttributes)
		return
	}
	for _, e := range n.entries {
		path := join("attributes", e.key)
		if err := checkName(e.key, maxNameBytes); err != "" {
			p.add(e.line, path, "%s", err)
			continue
		}
		s.Attributes = append(s.Attributes, p.attribute(s, e.key, e.line, e.val, path))
	}
	// The built-in alias may be declared, to give it settings of its own,
	// but not as something else.
	for _, a := range s.Attributes {
		if a.Name == alias.Name && (a.Type != TypeString || a.Cardinality != Many) {
			p.add(a.Line, join("attributes", a.Name), "%s is built in: the other names a subject goes by, a set of strings; declare it with type: string and cardinality: many, or leave it out", a.Name)
		}
	}
	// Aliases resolve to their attribute, so they must not shadow a name or
	// each other.
	owner := map[string]string{alias.Name: alias.Name}
	for _, a := range s.Attributes {
		owner[a.Name] = a.Name
	}
	for _, a := range s.Attributes {
		for i, al := range a.Aliases {
			path := index(join(join("attributes", a.Name), "aliases"), i)
			if o, taken := owner[al]; taken {
				switch {
				case al == alias.Name:
					p.add(a.Line, path, "%q is the built-in attribute of a subject's other names; an alias is an old name that no attribute has", al)
				case o == al:
					p.add(a.Line, path, "%q is declared as an attribute; an alias is an old name that no attribute has", al)
				default:
					p.add(a.Line, path, "%q is already an alias of %s", al, o)
				}
				continue
			}
			owner[al] = a.Name
		}
	}
}

func (p *reader) attribute(s *Schema, name string, line int, n *node, path string) *Attribute {
	a := &Attribute{Name: name, Line: line, Cardinality: One, Conflict: Reject}
	f := p.fields(n, path, attributeKeys)
	if f == nil {
		return a
	}
	if e := f["memory"]; e == nil {
		p.add(line, path, "memory is required: one of %s", strings.Join(s.MemoryTypes, ", "))
	} else if m, ok := p.name(e.val, join(path, "memory"), maxNameBytes); ok {
		if !slices.Contains(s.MemoryTypes, m) {
			p.add(e.val.line, join(path, "memory"), "%q is not a memory type%s; declare it in memory_types or use one of %s",
				m, didYouMean(m, s.MemoryTypes), strings.Join(s.MemoryTypes, ", "))
		} else {
			a.Memory = m
		}
	}
	typ, js := f["type"], f["json_schema"]
	switch {
	case typ != nil && js != nil:
		p.add(js.line, join(path, "json_schema"), "an attribute has either type or json_schema, not both")
	case typ != nil:
		p.valueType(s, a, typ.val, join(path, "type"))
	case js != nil:
		p.jsonSchema(a, js.val, join(path, "json_schema"))
	default:
		p.add(line, path, "type is required: one of %s, {enum: [...]}, {ref: entity}; or give a json_schema", strings.Join(shorthand, ", "))
	}
	if e := f["cardinality"]; e != nil {
		if c, ok := p.oneOf(e.val, join(path, "cardinality"), []string{string(One), string(Many)}); ok {
			a.Cardinality = Cardinality(c)
		}
	}
	if e := f["conflict"]; e != nil {
		if c, ok := p.oneOf(e.val, join(path, "conflict"), policies); ok {
			a.Conflict = Policy(c)
		}
	}
	if e := f["sensitive"]; e != nil {
		if e.val.kind != boolNode && e.val.kind != badNode {
			p.add(e.val.line, join(path, "sensitive"), "must be true or false, not %s", e.val.describe())
		} else {
			a.Sensitive = e.val.b
		}
	}
	if e := f["retention"]; e != nil {
		if c, ok := p.name(e.val, join(path, "retention"), maxNameBytes); ok {
			if _, declared := s.Retention[c]; !declared {
				p.add(e.val.line, join(path, "retention"), "%q is not a declared retention class%s", c, didYouMean(c, mapKeys(s.Retention)))
			} else {
				a.Retention = c
			}
		}
	}
	if e := f["promote"]; e != nil {
		a.Promote = p.promote(e.val, join(path, "promote"))
		if a.Promote != nil && a.Cardinality == Many {
			p.add(e.val.line, join(path, "promote"), "applies to single-valued attributes; %s is a set (cardinality many)", name)
			a.Promote = nil
		}
	}
	if e := f["inferred"]; e != nil {
		switch {
		case e.val.kind != boolNode && e.val.kind != badNode:
			p.add(e.val.line, join(path, "inferred"), "must be true or false, not %s", e.val.describe())
		case e.val.b && name == alias.Name:
			// A name the model adds is words of its quote, always: a
			// guessed name would find the subject for questions about
			// someone else.
			p.add(e.val.line, join(path, "inferred"), "%s is built in: a name the model adds is always words of its quote", name)
		default:
			a.Inferred = e.val.b
		}
	}
	if e := f["future"]; e != nil {
		if v, ok := p.text(e.val, join(path, "future")); ok {
			d, err := parseTTL(v)
			if err != nil {
				p.add(e.val.line, join(path, "future"), "%v", err)
			} else {
				a.Future = d
			}
		}
	}
	if e := f["description"]; e != nil {
		a.Description = p.label(e.val, join(path, "description"), maxDescriptionBytes, true)
	}
	if e := f["aliases"]; e != nil {
		if al := p.names(e.val, join(path, "aliases"), maxNameBytes); len(al) > 0 {
			a.Aliases = al
		}
	}
	return a
}

// promote reads {after: N, within: DURATION}.
func (p *reader) promote(n *node, path string) *Promote {
	g := p.fields(n, path, promoteKeys)
	if g == nil {
		return nil
	}
	out := &Promote{}
	ok := true
	switch e := g["after"]; {
	case e == nil:
		p.add(n.line, join(path, "after"), "is required: how many consistent signals make a fact")
		ok = false
	case e.val.kind != intNode:
		p.add(e.val.line, join(path, "after"), "must be a whole number, not %s", e.val.describe())
		ok = false
	default:
		v, err := strconv.Atoi(e.val.text)
		if err != nil || v < MinPromoteAfter || v > MaxPromoteAfter {
			p.add(e.val.line, join(path, "after"), "must be between %d and %d, not %s", MinPromoteAfter, MaxPromoteAfter, e.val.text)
			ok = false
		}
		out.After = v
	}
	if e := g["within"]; e == nil {
		p.add(n.line, join(path, "within"), "is required: the window the signals must fall in (30d, 12h)")
		ok = false
	} else if v, okText := p.text(e.val, join(path, "within")); okText {
		ttl, err := parseTTL(v)
		if err != nil {
			p.add(e.val.line, join(path, "within"), "%v", err)
			ok = false
		}
		out.Within = ttl
	} else {
		ok = false
	}
	if !ok {
		return nil
	}
	return out
}

// valueType reads a shorthand type, {enum: [...]} or {ref: entity}.
func (p *reader) valueType(s *Schema, a *Attribute, n *node, path string) {
	switch n.kind {
	case badNode:
		return
	case stringNode:
		switch t := n.text; {
		case slices.Contains(shorthand, t):
			a.Type = t
		case t == TypeEnum:
			p.add(n.line, path, "write an enum as {enum: [a, b, c]}")
		case t == TypeRef:
			p.add(n.line, path, "write a reference as {ref: entity}")
		case t == TypeJSONSchema:
			p.add(n.line, path, "give a JSON Schema as the attribute's json_schema, in place of type")
		default:
			p.add(n.line, path, "unknown type %q%s; one of %s, {enum: [...]}, {ref: entity}", t, didYouMean(t, shorthand), strings.Join(shorthand, ", "))
		}
		return
	case mapNode:
		if len(n.entries) != 1 || (n.entries[0].key != TypeEnum && n.entries[0].key != TypeRef) {
			p.add(n.line, path, "must have exactly one key, enum or ref")
			return
		}
		e := n.entries[0]
		sub := join(path, e.key)
		if e.key == TypeRef {
			ent, ok := p.name(e.val, sub, maxNameBytes)
			if !ok {
				return
			}
			if s.Entities != nil && !slices.Contains(s.Entities, ent) {
				p.add(e.val.line, sub, "%q is not a declared entity%s; entities are %s", ent, didYouMean(ent, s.Entities), strings.Join(s.Entities, ", "))
				return
			}
			a.Type, a.Ref = TypeRef, ent
			return
		}
		if e.val.kind == badNode {
			return
		}
		if e.val.kind != seqNode || len(e.val.items) == 0 {
			p.add(e.val.line, sub, "must be a non-empty list of values, not %s", e.val.describe())
			return
		}
		var values []json.RawMessage
		ok := true
		for i, item := range e.val.items {
			if item.kind == badNode {
				ok = false
				continue
			}
			v, err := enumValue(item)
			if err != "" {
				p.add(item.line, index(sub, i), "%s", err)
				ok = false
				continue
			}
			if slices.ContainsFunc(values, func(x json.RawMessage) bool { return bytes.Equal(x, v) }) {
				p.add(item.line, index(sub, i), "%s is listed twice", v)
				ok = false
				continue
			}
			values = append(values, v)
		}
		if ok {
			a.Type, a.Enum = TypeEnum, values
		}
		return
	}
	p.add(n.line, path, "must be one of %s, {enum: [...]} or {ref: entity}, not %s", strings.Join(shorthand, ", "), n.describe())
}

// enumValue returns a scalar's canonical JSON, as Attribute.Value would
// make it, or a reason it cannot be an enum value.
func enumValue(n *node) (json.RawMessage, string) {
	switch n.kind {
	case stringNode:
		return jsonString(n.text), ""
	case boolNode:
		return json.RawMessage(n.text), ""
	case intNode, floatNode:
		if n.num == "" {
			return nil, n.text + " is not a finite number"
		}
		c, err := canonicalNumber(n.num)
		if err != nil {
			return nil, n.num + " is out of range"
		}
		return c, ""
	}
	return nil, fmt.Sprintf("an enum value is a string, number or boolean, not %s", n.describe())
}

// toJSON converts a node to a value encoding/json can write, numbers as
// json.Number. ok is false after a problem was added.
func (p *reader) toJSON(n *node, path string) (any, bool) {
	switch n.kind {
	case nullNode:
		return nil, true
	case stringNode:
		return n.text, true
	case boolNode:
		return n.b, true
	case badNode:
		return nil, false
	case intNode, floatNode:
		if n.num == "" {
			p.add(n.line, path, "%s is not a finite number; JSON has none", n.text)
			return nil, false
		}
		return json.Number(n.num), true
	case seqNode:
		out := make([]any, len(n.items))
		ok := true
		for i, item := range n.items {
			v, good := p.toJSON(item, index(path, i))
			out[i], ok = v, ok && good
		}
		return out, ok
	case mapNode:
		out := make(map[string]any, len(n.entries))
		ok := true
		for _, e := range n.entries {
			v, good := p.toJSON(e.val, join(path, e.key))
			out[e.key], ok = v, ok && good
		}
		return out, ok
	}
	return nil, false
}

// jsonSchema reads and compiles an attribute's JSON Schema.
func (p *reader) jsonSchema(a *Attribute, n *node, path string) {
	if n.kind == badNode {
		return
	}
	if n.kind != mapNode {
		p.add(n.line, path, "must be a JSON Schema object such as {type: object}, not %s", n.describe())
		return
	}
	v, ok := p.toJSON(n, path)
	if !ok {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		p.add(n.line, path, "cannot be encoded as JSON: %v", err)
		return
	}
	canon, err := sgam.CanonicalValue(path, raw, MaxFileBytes)
	if err != nil {
		p.add(n.line, path, "%s", sgam.ErrorMessage(err))
		return
	}
	compiled, err := compileJSONSchema(a.Name, canon)
	if err != nil {
		line, sub, msg := n.line, path, err.Error()
		var sve *jsonschema.SchemaValidationError
		var ve *jsonschema.ValidationError
		var lue *jsonschema.LoadURLError
		switch {
		case errors.As(err, &sve) && errors.As(sve.Err, &ve):
			leaf := leafError(ve)
			line, sub = locate(n, path, leaf.InstanceLocation)
			msg = leaf.ErrorKind.LocalizedString(printer) + " (not a valid JSON Schema)"
		case errors.As(err, &lue):
			msg = fmt.Sprintf("cannot load %s: a json_schema may only refer within itself (such as $ref: \"#/$defs/name\") or to a standard $schema", lue.URL)
		}
		p.add(line, sub, "%s", msg)
		return
	}
	a.Type, a.JSONSchema, a.compiled = TypeJSONSchema, canon, compiled
}

// locate follows a JSON pointer's tokens into n and returns the line and
// path of the deepest node it reaches.
func locate(n *node, path string, tokens []string) (int, string) {
	for _, t := range tokens {
		switch n.kind {
		case mapNode:
			found := false
			for _, e := range n.entries {
				if e.key == t {
					n, path, found = e.val, join(path, t), true
					break
				}
			}
			if !found {
				return n.line, path
			}
		case seqNode:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(n.items) {
				return n.line, path
			}
			n, path = n.items[i], index(path, i)
		default:
			return n.line, path
		}
	}
	return n.line, path
}

var printer = message.NewPrinter(language.English)

// refuseLoader loads nothing: a schema file is self-contained, and a
// $ref to a URL must not make Parse read files or the network.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) {
	return nil, errors.New("a json_schema may only $ref within itself")
}

// compileJSONSchema compiles an attribute's JSON Schema (draft 2020-12
// unless it names another with $schema), with format assertions on: a
// schema that says format: email means it.
func compileJSONSchema(attribute string, canon []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	loc := "https://sgam.invalid/attributes/" + url.PathEscape(attribute) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// --- migrations

func (p *reader) migrations(s *Schema, n *node) {
	if n.kind == badNode {
		return
	}
	if n.kind != seqNode {
		p.add(n.line, "migrations", "must be a list of migrations, not %s", n.describe())
		return
	}
	names := map[string]int{}
	migrated := map[string]string{} // old name -> migration that moves it
	for i, item := range n.items {
		path := index("migrations", i)
		m := p.migration(s, item, path)
		if m == nil {
			continue
		}
		if m.Name != "" {
			if line, dup := names[m.Name]; dup {
				p.add(item.line, join(path, "name"), "%q is already the name of the migration at line %d", m.Name, line)
			}
			names[m.Name] = item.line
		}
		if m.Kind == KindRename || m.Kind == KindSplit {
			if other, dup := migrated[m.From]; dup && m.From != "" {
				p.add(item.line, join(path, m.Kind)+".from", "%q is already migrated by %s", m.From, other)
			}
			migrated[m.From] = m.Name
		}
		s.Migrations = append(s.Migrations, m)
	}
}

func (p *reader) migration(s *Schema, n *node, path string) *Migration {
	f := p.fields(n, path, migrationKeys)
	if f == nil {
		return nil
	}
	m := &Migration{Line: n.line}
	if e := f["name"]; e == nil {
		p.add(n.line, path, "name is required")
	} else if name, ok := p.name(e.val, join(path, "name"), maxNameBytes); ok {
		m.Name = name
	}
	var kinds []string
	for _, k := range []string{KindRename, KindRetype, KindSplit} {
		if f[k] != nil {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		p.add(n.line, path, "a migration is exactly one of rename, retype or split")
		return m
	}
	m.Kind = kinds[0]
	body := f[m.Kind].val
	sub := join(path, m.Kind)
	switch m.Kind {
	case KindRename:
		g := p.fields(body, sub, []string{"from", "to"})
		if g == nil {
			break
		}
		m.From = p.oldName(s, g, sub, body.line)
		if e := g["to"]; e == nil {
			p.add(body.line, sub, "to is required: the attribute's new name, which this schema declares")
		} else if to := p.target(s, e.val, join(sub, "to")); to != "" {
			m.To = []string{to}
		}
	case KindRetype:
		g := p.fields(body, sub, []string{"attribute", "transform"})
		if g == nil {
			break
		}
		if e := g["attribute"]; e == nil {
			p.add(body.line, sub, "attribute is required: the attribute whose type changes")
		} else if to := p.target(s, e.val, join(sub, "attribute")); to != "" {
			m.From, m.To = to, []string{to}
		}
		if e := g["transform"]; e == nil {
			p.add(body.line, sub, "transform is required: a CEL expression over value, the old value")
		} else {
			p.transform(m, m.From, e.val, join(sub, "transform"))
		}
	case KindSplit:
		g := p.fields(body, sub, []string{"from", "into"})
		if g == nil {
			break
		}
		m.From = p.oldName(s, g, sub, body.line)
		e := g["into"]
		if e != nil && e.val.kind == badNode {
			break
		}
		if e == nil || e.val.kind != mapNode || len(e.val.entries) == 0 {
			line := body.line
			if e != nil {
				line = e.val.line
			}
			p.add(line, join(sub, "into"), "must map each new attribute to a CEL expression over value, the old value")
			break
		}
		for _, t := range e.val.entries {
			tpath := join(join(sub, "into"), t.key)
			to := p.target(s, &node{kind: stringNode, line: t.line, text: t.key}, tpath)
			if to != "" {
				m.To = append(m.To, to)
			}
			p.transform(m, to, t.val, tpath)
		}
		slices.Sort(m.To)
	}
	// An old name may live on as an alias, but only of the attribute the
	// migration moves it to.
	if m.Kind != KindRetype && m.From != "" && len(m.To) > 0 {
		if a, ok := s.Attribute(m.From); ok && a.Name != m.From && !slices.Contains(m.To, a.Name) {
			p.add(f[m.Kind].val.line, join(sub, "from"), "%q is an alias of %s, which this %s does not write", m.From, a.Name, m.Kind)
		}
	}
	if e := f["dual_read_until"]; e != nil {
		sub := join(path, "dual_read_until")
		if m.Kind != KindRename {
			p.add(e.val.line, sub, "only a rename has a dual-read window: a %s leaves no single new name for the old one", m.Kind)
		} else if v, ok := p.text(e.val, sub); ok {
			t, err := sgam.ParseTime(sub, v)
			if err != nil {
				p.add(e.val.line, sub, "%s", sgam.ErrorMessage(err))
			} else {
				m.DualReadUntil = &t
			}
		}
	}
	return m
}

// oldName reads the from of a rename or split: a name this schema no
// longer declares.
func (p *reader) oldName(s *Schema, g map[string]*entry, path string, line int) string {
	e := g["from"]
	if e == nil {
		p.add(line, path, "from is required: the old attribute name")
		return ""
	}
	name, ok := p.name(e.val, join(path, "from"), maxNameBytes)
	if !ok {
		return ""
	}
	if a, declared := s.Attribute(name); declared && a.Name == name {
		p.add(e.val.line, join(path, "from"), "%q is still declared as an attribute; from names the old attribute, which the schema no longer declares", name)
	}
	return name
}

// target reads an attribute the migration writes: one this schema declares
// by its name.
func (p *reader) target(s *Schema, n *node, path string) string {
	name, ok := p.name(n, path, maxNameBytes)
	if !ok {
		return ""
	}
	a, declared := s.Attribute(name)
	switch {
	case !declared:
		p.add(n.line, path, "%q is not a declared attribute%s", name, didYouMean(name, attributeNames(s)))
		return ""
	case a.Name != name:
		p.add(n.line, path, "%q is an alias of %s; name the attribute", name, a.Name)
		return ""
	}
	return name
}

func (p *reader) transform(m *Migration, target string, n *node, path string) {
	src, ok := p.text(n, path)
	if !ok {
		return
	}
	if strings.TrimSpace(src) == "" || len(src) > maxTransformBytes {
		p.add(n.line, path, "must be a CEL expression of 1 to %d bytes", maxTransformBytes)
		return
	}
	prg, err := compileTransform(src)
	if err != nil {
		p.add(n.line, path, "%v", err)
		return
	}
	if target == "" {
		return
	}
	if m.Transforms == nil {
		m.Transforms = map[string]string{}
		m.programs = map[string]cel.Program{}
	}
	m.Transforms[target] = src
	m.programs[target] = prg
}

// index builds the lookup by name and alias.
func (s *Schema) index() {
	s.byName = make(map[string]*Attribute, len(s.Attributes))
	for _, a := range s.Attributes {
		s.byName[a.Name] = a
	}
	for _, a := range s.Attributes {
		for _, al := range a.Aliases {
			if _, taken := s.byName[al]; !taken {
				s.byName[al] = a
			}
		}
	}
}

func attributeNames(s *Schema) []string {
	out := make([]string, len(s.Attributes))
	for i, a := range s.Attributes {
		out[i] = a.Name
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// --- suggestions

func didYouMean(s string, candidates []string) string {
	if g := suggest(s, candidates); g != "" {
		return fmt.Sprintf(" (did you mean %s?)", g)
	}
	return ""
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a typo.
func suggest(s string, candidates []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestD := "", 3
	for _, c := range candidates {
		if len(c) > 64 {
			continue
		}
		if d := editDistance(s, c); d < bestD && d <= max(1, len(c)/3) {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
