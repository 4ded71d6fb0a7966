// Package eval replays scenarios: fixed sequences of episodes, schema
// changes, checkpoints, questions and forget steps, written in YAML (see
// docs/eval.md and scenario.schema.json). A run feeds the episodes through
// the write path (extraction with a recorded or a live model), inspects the
// ledger at every checkpoint, asks recall the questions, and scores each
// stage on its own: what the model proposed, what validation refused, what
// the ledger holds, what recall presented as current and what it cited,
// and whether anything crossed a tenant's wall.
package eval

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
)

// ScenarioSchema is the JSON Schema of a scenario file.
//
//go:embed scenario.schema.json
var ScenarioSchema []byte

// Example is a commented scenario to start from (`sgam eval init`).
//
//go:embed example.yaml
var Example []byte

// MaxFileBytes bounds a scenario file.
const MaxFileBytes = 4 << 20

// Scenario is a parsed scenario file.
type Scenario struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Start       Instant                `json:"start"`
	Tick        string                 `json:"tick"`
	Tenants     map[string]*TenantSpec `json:"tenants"`
	Thresholds  Thresholds             `json:"thresholds"`
	Steps       []*Step                `json:"steps"`

	// Path is the file it was read from (schema files are read relative
	// to it).
	Path string `json:"-"`
	tick time.Duration
}

// TenantSpec is a tenant of a scenario.
type TenantSpec struct {
	Schema     string `json:"schema"`
	SchemaFile string `json:"schema_file"`
	Budget     int    `json:"budget"`
	schemaLine int    // the line of the first line of an inline schema
}

// Thresholds bound a run's metrics: Min[name] ≤ value ≤ Max[name].
type Thresholds struct {
	Min map[string]float64 `json:"min"`
	Max map[string]float64 `json:"max"`
}

// Step is one step of a scenario: exactly one of its parts is set.
type Step struct {
	At      *Instant        `json:"at"`
	Episode *EpisodeStep    `json:"episode"`
	Extract json.RawMessage `json:"extract"`
	Tenant  string          `json:"tenant"`
	Gold    []Gold          `json:"gold"`
	Schema  *SchemaStep     `json:"schema"`
	Migrate bool            `json:"migrate"`
	Check   *Check          `json:"check"`
	Ask     *Ask            `json:"ask"`
	Forget  *Forget         `json:"forget"`
	Confirm *Review         `json:"confirm"`
	Dismiss *Review         `json:"dismiss"`

	// Line is the step's line in the file; Kind the part that is set.
	Line int    `json:"-"`
	Kind string `json:"-"`
	// When is when an episode step's episode is extracted (now, later,
	// never); Episodes are an extract step's.
	When     string   `json:"-"`
	Episodes []string `json:"-"`
}

// Step kinds.
const (
	StepEpisode = "episode"
	StepExtract = "extract"
	StepSchema  = "schema"
	StepMigrate = "migrate"
	StepCheck   = "check"
	StepAsk     = "ask"
	StepForget  = "forget"
	StepConfirm = "confirm"
	StepDismiss = "dismiss"
)

// EpisodeStep is an episode, as a line of an `sgam ingest` file.
type EpisodeStep struct {
	Tenant         string          `json:"tenant"`
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     *Instant        `json:"occurred_at"`
	Subjects       []string        `json:"subjects"`
	Metadata       json.RawMessage `json:"metadata"`
	Retention      string          `json:"retention"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// Gold is a candidate a good model proposes for an episode.
type Gold struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Change    string          `json:"change"`
	Value     json.RawMessage `json:"value"`
	ValidFrom *Instant        `json:"valid_from"`
}

// SchemaStep applies a new version of a tenant's schema.
type SchemaStep struct {
	Tenant string `json:"tenant"`
	Text   string `json:"text"`
	File   string `json:"file"`
	line   int
}

// Check is a ledger checkpoint.
type Check struct {
	Tenant   string          `json:"tenant"`
	AsOf     *Instant        `json:"as_of"`
	KnownAt  *Instant        `json:"known_at"`
	Values   []ExpectedValue `json:"values"`
	Pending  *[]Candidate    `json:"pending"`
	Rejected []Rejection     `json:"rejected"`
}

// ExpectedValue is what a key must hold at a checkpoint's instants.
type ExpectedValue struct {
	Subject   string            `json:"subject"`
	Attribute string            `json:"attribute"`
	Value     json.RawMessage   `json:"value"`
	Members   []json.RawMessage `json:"members"`
	Sources   []string          `json:"sources"`
}

// Candidate names a pending candidate.
type Candidate struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Value     json.RawMessage `json:"value"`
}

// Rejection is an expected rejection of an episode's extraction.
type Rejection struct {
	Episode   string `json:"episode"`
	Reason    string `json:"reason"`
	Attribute string `json:"attribute"`
}

// Ask is a question to recall, and what its context must hold.
type Ask struct {
	Tenant        string   `json:"tenant"`
	Question      string   `json:"question"`
	Subjects      []string `json:"subjects"`
	Session       string   `json:"session"`
	AsOf          *Instant `json:"as_of"`
	KnownAt       *Instant `json:"known_at"`
	Budget        int      `json:"budget"`
	Evidence      string   `json:"evidence"`
	EvidenceLimit int      `json:"evidence_limit"`
	Expect        Expect   `json:"expect"`
}

// Expect is what an ask's context must hold.
type Expect struct {
	AsOf     *Instant       `json:"as_of"`
	KnownAt  *Instant       `json:"known_at"`
	Facts    []ExpectedFact `json:"facts"`
	Evidence []string       `json:"evidence"`
	Absent   []string       `json:"absent"`
}

// ExpectedFact is a fact the context must present, with its status.
type ExpectedFact struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Value     json.RawMessage `json:"value"`
	Status    string          `json:"status"`
}

// Forget is a forget step and what must be gone after it.
type Forget struct {
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
	Episode string `json:"episode"`
	Gone    struct {
		Episodes []string `json:"episodes"`
		Subjects []string `json:"subjects"`
		Words    []string `json:"words"`
	} `json:"gone"`
}

// Review confirms or dismisses the pending candidate it names.
type Review struct {
	Tenant    string          `json:"tenant"`
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Value     json.RawMessage `json:"value"`
	Episode   string          `json:"episode"`
}

// Instant is a time of a scenario: RFC 3339 with an offset, or a date
// (midnight UTC).
type Instant struct{ time.Time }

// ParseInstant reads an instant of a scenario.
func ParseInstant(field, s string) (time.Time, error) {
	if len(s) == len("2026-06-01") {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return time.Time{}, sgam.Errorf(sgam.Invalid, field, "%q is not a date YYYY-MM-DD", s)
		}
		return t, nil
	}
	return sgam.ParseTime(field, s)
}

// UnmarshalJSON reads an instant; the loader has checked it.
func (i *Instant) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := ParseInstant("", s)
	if err != nil {
		return err
	}
	i.Time = t
	return nil
}

// MarshalJSON writes an instant in RFC 3339.
func (i Instant) MarshalJSON() ([]byte, error) { return json.Marshal(sgam.FormatTime(i.Time)) }

// ParseError lists every problem of a scenario file, each with its line
// and path, as `sgam schema check` does for a schema file.
type ParseError = schema.ParseError

// Load reads and checks a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse checks a scenario file's text; path names it, and schema files
// are read relative to it. Every problem found is in the *ParseError.
func Parse(path string, data []byte) (*Scenario, error) {
	p := &reader{path: path}
	s := p.parse(data)
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
		if len(p.problems) > 100 {
			p.problems = p.problems[:100]
		}
		return nil, &ParseError{Problems: p.problems}
	}
	return s, nil
}

type reader struct {
	path     string
	problems []schema.Problem
	lines    map[string]int // path in the file → its line
}

func (p *reader) add(path, format string, args ...any) {
	p.problems = append(p.problems, schema.Problem{Line: p.line(path), Path: path, Message: fmt.Sprintf(format, args...)})
}

// line is the line of path, or of the nearest enclosing path that has one.
func (p *reader) line(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := max(strings.LastIndexAny(path, ".["), 0)
		path = path[:i]
	}
	return p.lines[""]
}

var printer = message.NewPrinter(language.English)

var compiledSchema = func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ScenarioSchema))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("scenario.schema.json", doc); err != nil {
		panic(err)
	}
	return c.MustCompile("scenario.schema.json")
}()

func (p *reader) parse(data []byte) *Scenario {
	p.lines = map[string]int{"": 1}
	if len(data) > MaxFileBytes {
		p.add("", "the file is %d bytes; the limit is %d", len(data), MaxFileBytes)
		return nil
	}
	if !utf8.Valid(data) {
		p.add("", "the file is not valid UTF-8")
		return nil
	}
	if pr := schema.DepthProblem(data); pr != nil {
		p.problems = append(p.problems, *pr)
		return nil
	}
	file, err := parseYAML(data)
	if err != nil {
		p.yamlError(err)
		return nil
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		p.add("", "the file must hold one YAML document, a scenario")
		return nil
	}
	if !p.walk(file.Docs[0].Body, "") {
		return nil
	}
	var raw any
	if err := decodeYAML(data, &raw); err != nil {
		p.yamlError(err)
		return nil
	}
	text, err := json.Marshal(raw)
	if err != nil {
		p.add("", "cannot be read as JSON: %v", err)
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		p.add("", "cannot be read as JSON: %v", err)
		return nil
	}
	if err := compiledSchema.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			p.add("", "%v", err)
			return nil
		}
		p.schemaErrors(ve)
		p.inlineSchemas(text)
		return nil
	}
	s := &Scenario{Path: p.path}
	if err := json.Unmarshal(text, s); err != nil {
		p.add("", "%v", err)
		return nil
	}
	p.check(s)
	p.checkGold(s)
	return s
}

func (p *reader) yamlError(err error) { p.problems = append(p.problems, schema.YAMLProblem(err)) }

// inlineSchemas adds the problems of the inline tenant schemas of a
// scenario that broke the scenario's own JSON Schema, so that one check
// names every problem. encoding/json decodes what it can around a value
// of the wrong type.
func (p *reader) inlineSchemas(text []byte) {
	var s Scenario
	_ = json.Unmarshal(text, &s)
	for _, name := range slices.Sorted(maps.Keys(s.Tenants)) {
		if t := s.Tenants[name]; t != nil && t.Schema != "" {
			path := "tenants." + name + ".schema"
			p.schemaText(path, t.Schema, p.lines[path])
		}
	}
	for i, st := range s.Steps {
		if st != nil && st.Schema != nil && st.Schema.Text != "" {
			path := fmt.Sprintf("steps[%d].schema.text", i)
			p.schemaText(path, st.Schema.Text, p.lines[path])
		}
	}
}

// parseYAML parses data; a panic of the YAML library, outside code run on
// outside input, is a problem with the file, not a crash.
func parseYAML(data []byte) (file *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	return yamlparser.ParseBytes(data, 0)
}

// decodeYAML decodes data into v, as parseYAML parses it.
func decodeYAML(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML decoder failed: %v", r)
		}
	}()
	return yaml.Unmarshal(data, v)
}

// walk records the line of every path of the tree, and refuses what a
// scenario has no use for (anchors, aliases, tags, merge keys).
func (p *reader) walk(n ast.Node, path string) bool {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		if _, ok := p.lines[path]; !ok {
			p.lines[path] = tk.Position.Line
		}
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, kv := range n.Values {
			if !p.walk(kv, path) {
				return false
			}
		}
	case *ast.MappingValueNode:
		key := ""
		if tk := n.Key.GetToken(); tk != nil {
			key = tk.Value
			if tk.Position != nil {
				p.lines[join(path, key)] = tk.Position.Line
			}
		}
		if _, ok := n.Key.(*ast.MergeKeyNode); ok {
			p.lines["?"] = lineOf(n)
			p.problems = append(p.problems, schema.Problem{Line: lineOf(n), Path: path, Message: "merge keys (<<) are not supported: write the fields out"})
			return false
		}
		return p.walk(n.Value, join(path, key))
	case *ast.SequenceNode:
		for i, v := range n.Values {
			if !p.walk(v, fmt.Sprintf("%s[%d]", path, i)) {
				return false
			}
		}
	case *ast.AnchorNode, *ast.AliasNode:
		p.problems = append(p.problems, schema.Problem{Line: lineOf(n), Path: path, Message: "anchors and aliases are not supported: write the value out"})
		return false
	case *ast.TagNode:
		p.problems = append(p.problems, schema.Problem{Line: lineOf(n), Path: path, Message: "YAML tags are not supported"})
		return false
	case *ast.LiteralNode:
		// A block scalar's text starts on the line after its indicator.
		p.lines[path] = lineOf(n) + 1
	}
	return true
}

func lineOf(n ast.Node) int {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// schemaErrors adds a problem for each leaf error of the validation,
// named by its path.
func (p *reader) schemaErrors(ve *jsonschema.ValidationError) {
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := ""
		for _, tok := range e.InstanceLocation {
			if _, err := strconv.Atoi(tok); err == nil {
				path += "[" + tok + "]"
			} else {
				path = join(path, tok)
			}
		}
		add := func(path, msg string) {
			if key := path + "\x00" + msg; !seen[key] {
				seen[key] = true
				p.add(path, "%s", msg)
			}
		}
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			// Point at each unknown key, by its own line.
			for _, name := range k.Properties {
				add(join(path, name), "is not a field here")
			}
		case *kind.Required:
			for _, name := range k.Missing {
				add(path, fmt.Sprintf("%s is required", name))
			}
		default:
			add(path, e.ErrorKind.LocalizedString(printer))
		}
	}
	walk(ve)
}

var (
	reasons = []string{sgam.RejectUngrounded, sgam.RejectUnknownAttribute, sgam.RejectInvalidValue, sgam.RejectInvalidSubject,
		sgam.RejectInvalidTime, sgam.RejectInvalidChange, sgam.RejectUnexpectedField, sgam.RejectMalformed, sgam.RejectConflict}
)

// check adds the problems the JSON Schema cannot see: one part a step,
// tenants named, episode ids known, schemas valid, thresholds known.
func (p *reader) check(s *Scenario) {
	s.tick = time.Minute
	if s.Tick != "" {
		d, err := time.ParseDuration(s.Tick)
		if err != nil || d <= 0 {
			p.add("tick", "%q is not a positive duration such as 1m or 30s", s.Tick)
		}
		s.tick = d
	}
	p.instant("start", &s.Start)
	for name, t := range s.Tenants {
		path := "tenants." + name
		if err := sgam.CheckTenant(name); err != nil {
			p.add(path, "%s", sgam.ErrorMessage(err))
		}
		if t.Schema != "" && t.SchemaFile != "" {
			p.add(path, "has both schema and schema_file: give one")
		}
		t.schemaLine = p.lines[path+".schema"]
		if t.SchemaFile != "" {
			text, err := os.ReadFile(filepath.Join(filepath.Dir(s.Path), t.SchemaFile))
			if err != nil {
				p.add(path+".schema_file", "%v", err)
				continue
			}
			t.Schema, t.schemaLine = string(text), 0
		}
		p.schemaText(path+".schema", t.Schema, t.schemaLine)
	}
	for _, m := range []map[string]float64{s.Thresholds.Min, s.Thresholds.Max} {
		for name := range m {
			if !knownMetric(name) {
				p.add("thresholds", "%q is not a metric; the metrics are %s", name, strings.Join(MetricNames(), ", "))
			}
		}
	}
	tenant := func(path, name string) string {
		if name == "" {
			if len(s.Tenants) == 1 {
				for n := range s.Tenants {
					return n
				}
			}
			p.add(path, "tenant is required: the scenario has %d tenants", len(s.Tenants))
			return ""
		}
		if s.Tenants[name] == nil {
			p.add(path, "tenant %q is not one of the scenario's tenants", name)
		}
		return name
	}
	episodes := map[string]map[string]bool{} // tenant → ids captured so far
	later := map[string]map[string]bool{}    // tenant → ids captured to extract later
	known := func(path, t, id string) {
		if !episodes[t][id] {
			p.add(path, "episode %q of tenant %s is not captured by an earlier step", id, t)
		}
	}
	clock := s.Start.Time
	for i, st := range s.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		st.Line = p.line(path)
		var kinds []string
		for _, k := range []struct {
			name string
			set  bool
		}{{StepEpisode, st.Episode != nil}, {StepSchema, st.Schema != nil}, {StepMigrate, st.Migrate}, {StepCheck, st.Check != nil},
			{StepAsk, st.Ask != nil}, {StepForget, st.Forget != nil}, {StepConfirm, st.Confirm != nil}, {StepDismiss, st.Dismiss != nil}} {
			if k.set {
				kinds = append(kinds, k.name)
			}
		}
		if st.Episode == nil && len(st.Extract) > 0 {
			kinds = append(kinds, StepExtract)
		}
		if len(kinds) != 1 {
			p.add(path, "a step is exactly one of episode, extract, schema, migrate, check, ask, forget, confirm, dismiss; this one is %s", orNone(kinds))
			continue
		}
		st.Kind = kinds[0]
		if st.At != nil {
			p.instant(path+".at", st.At)
		}
		// The run's clock, as Run moves it: to at, or to an episode's
		// occurred_at when that is later, then a tick after the step.
		switch {
		case st.At != nil && !st.At.IsZero() && st.At.Before(clock):
			p.add(path+".at", "%s moves the clock back from %s, where the steps before it left it: transaction time only goes forward",
				sgam.FormatTime(st.At.Time), sgam.FormatTime(clock))
		case st.At != nil && !st.At.IsZero():
			clock = st.At.Time
		case st.Kind == StepEpisode && st.Episode.OccurredAt != nil && st.Episode.OccurredAt.After(clock):
			clock = st.Episode.OccurredAt.Time
		}
		clock = clock.Add(s.tick)
		if st.Kind != StepEpisode && len(st.Gold) > 0 {
			p.add(path+".gold", "belongs to an episode step")
		}
		if st.Kind != StepExtract && st.Tenant != "" {
			p.add(path+".tenant", "belongs to an extract step (other steps name their tenant inside)")
		}
		switch st.Kind {
		case StepEpisode:
			e := st.Episode
			e.Tenant = tenant(path+".episode.tenant", e.Tenant)
			if err := sgam.CheckEpisodeID("episode_id", e.EpisodeID); err != nil {
				p.add(path+".episode.episode_id", "%s", sgam.ErrorMessage(err))
			}
			if episodes[e.Tenant][e.EpisodeID] {
				p.add(path+".episode.episode_id", "episode %q of tenant %s is captured twice", e.EpisodeID, e.Tenant)
			}
			if episodes[e.Tenant] == nil {
				episodes[e.Tenant], later[e.Tenant] = map[string]bool{}, map[string]bool{}
			}
			episodes[e.Tenant][e.EpisodeID] = true
			if e.OccurredAt != nil {
				p.instant(path+".episode.occurred_at", e.OccurredAt)
			}
			st.When = "now"
			if len(st.Extract) > 0 {
				if err := json.Unmarshal(st.Extract, &st.When); err != nil {
					p.add(path+".extract", "with an episode, extract is now, later or never")
				}
			}
			if st.When == "later" {
				later[e.Tenant][e.EpisodeID] = true
			}
			for j := range st.Gold {
				g := &st.Gold[j]
				if g.Change == "" {
					g.Change = "new"
				}
				gp := fmt.Sprintf("%s.gold[%d]", path, j)
				if g.ValidFrom != nil {
					p.instant(gp+".valid_from", g.ValidFrom)
				}
				if g.Change != "retract" && isNull(g.Value) {
					p.add(gp+".value", "is required for a %s candidate", g.Change)
				}
			}
		case StepExtract:
			t := tenant(path+".tenant", st.Tenant)
			if err := json.Unmarshal(st.Extract, &st.Episodes); err != nil {
				p.add(path+".extract", "alone, extract lists the episodes to extract now")
			}
			st.Tenant = t
			for j, id := range st.Episodes {
				known(fmt.Sprintf("%s.extract[%d]", path, j), t, id)
			}
		case StepSchema:
			st.Schema.Tenant = tenant(path+".schema.tenant", st.Schema.Tenant)
			if (st.Schema.Text == "") == (st.Schema.File == "") {
				p.add(path+".schema", "give one of text and file")
				continue
			}
			st.Schema.line = p.lines[path+".schema.text"]
			if st.Schema.File != "" {
				text, err := os.ReadFile(filepath.Join(filepath.Dir(s.Path), st.Schema.File))
				if err != nil {
					p.add(path+".schema.file", "%v", err)
					continue
				}
				st.Schema.Text, st.Schema.line = string(text), 0
			}
			p.schemaText(path+".schema.text", st.Schema.Text, st.Schema.line)
		case StepCheck:
			c := st.Check
			c.Tenant = tenant(path+".check.tenant", c.Tenant)
			p.instant(path+".check.as_of", c.AsOf)
			p.instant(path+".check.known_at", c.KnownAt)
			for j, r := range c.Rejected {
				known(fmt.Sprintf("%s.check.rejected[%d].episode", path, j), c.Tenant, r.Episode)
			}
			for j, v := range c.Values {
				if len(v.Members) > 0 && !isNull(v.Value) {
					p.add(fmt.Sprintf("%s.check.values[%d]", path, j), "give value (one value) or members (a set), not both")
				}
			}
		case StepAsk:
			a := st.Ask
			a.Tenant = tenant(path+".ask.tenant", a.Tenant)
			for _, x := range []struct {
				field string
				i     *Instant
			}{{"as_of", a.AsOf}, {"known_at", a.KnownAt}, {"expect.as_of", a.Expect.AsOf}, {"expect.known_at", a.Expect.KnownAt}} {
				p.instant(path+".ask."+x.field, x.i)
			}
			for j, id := range a.Expect.Evidence {
				known(fmt.Sprintf("%s.ask.expect.evidence[%d]", path, j), a.Tenant, id)
			}
			for j := range a.Expect.Facts {
				if a.Expect.Facts[j].Status == "" {
					a.Expect.Facts[j].Status = "current"
				}
			}
		case StepForget:
			f := st.Forget
			f.Tenant = tenant(path+".forget.tenant", f.Tenant)
			if (f.Subject == "") == (f.Episode == "") {
				p.add(path+".forget", "give one of subject and episode")
			}
			if f.Episode != "" {
				known(path+".forget.episode", f.Tenant, f.Episode)
				delete(episodes[f.Tenant], f.Episode)
			}
		case StepConfirm, StepDismiss:
			r := st.Confirm
			if r == nil {
				r = st.Dismiss
			}
			r.Tenant = tenant(path+"."+st.Kind+".tenant", r.Tenant)
			if r.Episode != "" {
				if st.Kind == StepDismiss {
					p.add(path+".dismiss.episode", "belongs to confirm")
				}
				known(path+"."+st.Kind+".episode", r.Tenant, r.Episode)
			}
		}
	}
}

// checkGold names a gold candidate whose attribute no schema of its tenant
// in the scenario declares (the tenant's own, or one a schema step
// applies): the model could not propose it, so it would only count as a
// miss. A tenant without a schema takes any attribute.
func (p *reader) checkGold(s *Scenario) {
	declared := map[string][]*schema.Schema{}
	add := func(tenant, text string) {
		if text == "" {
			return
		}
		if sc, err := schema.Parse([]byte(text)); err == nil {
			declared[tenant] = append(declared[tenant], sc)
		}
	}
	for name, t := range s.Tenants {
		if t != nil {
			add(name, t.Schema)
		}
	}
	for _, st := range s.Steps {
		if st.Kind == StepSchema && st.Schema != nil {
			add(st.Schema.Tenant, st.Schema.Text)
		}
	}
	for i, st := range s.Steps {
		if st.Kind != StepEpisode || st.Episode == nil || len(declared[st.Episode.Tenant]) == 0 {
			continue
		}
		for j, g := range st.Gold {
			found := false
			for _, sc := range declared[st.Episode.Tenant] {
				if _, ok := sc.Attribute(g.Attribute); ok {
					found = true
					break
				}
			}
			if !found {
				p.add(fmt.Sprintf("steps[%d].gold[%d].attribute", i, j), "%q is declared by no schema of tenant %s in this scenario", g.Attribute, st.Episode.Tenant)
			}
		}
	}
}

func (p *reader) instant(path string, i *Instant) {
	if i != nil && i.IsZero() {
		p.add(path, "is not an instant")
	}
}

// schemaText adds the problems of a schema file, at their lines in the
// scenario when it is inline (first is the line of its first line).
func (p *reader) schemaText(path, text string, first int) {
	if text == "" {
		return
	}
	_, err := schema.Parse([]byte(text))
	var pe *schema.ParseError
	if errors.As(err, &pe) {
		for _, pr := range pe.Problems {
			line := p.line(path)
			if first > 0 && pr.Line > 0 {
				line = first + pr.Line - 1
			}
			p.problems = append(p.problems, schema.Problem{Line: line, Path: join(path, pr.Path), Message: pr.Message})
		}
	} else if err != nil {
		p.add(path, "%v", err)
	}
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none of them"
	}
	return strings.Join(ss, " and ")
}

func isNull(v json.RawMessage) bool {
	return len(v) == 0 || string(v) == "null"
}

// knownMetric reports whether name is a metric a threshold may bound.
func knownMetric(name string) bool {
	if strings.HasPrefix(name, "rejected.") {
		return slices.Contains(reasons, strings.TrimPrefix(name, "rejected."))
	}
	return slices.Contains(MetricNames(), name)
}
