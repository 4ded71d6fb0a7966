// Package mcpserver is sgam's Model Context Protocol server: tools an agent
// calls to remember, correct and recall facts, and a resource per subject
// holding its current state, on the official MCP Go SDK.
//
// A server is bound to one tenant when it is built (by the operator's
// configuration for stdio, by the API key for HTTP): no tool takes a tenant,
// so a model can neither choose one nor reach another's data. Nor does a
// model choose the source of what it remembers: remember captures the quote
// it gives as a new episode of the configured kind, and that episode is the
// fact's source. Which row stays current is the ledger's rule, as on every
// other path.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"

	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/schema"
)

// Store is what the tools use of a store: episodes, and facts to read and
// write.
type Store interface {
	sgam.Episodes
	sgam.FactWriter
	sgam.FactReader
	sgam.ExtractionQueue
	recall.Store
}

// Config binds a server to a store, a tenant and a role.
type Config struct {
	Store  Store
	Tenant string
	// Role decides the tools offered: read offers recall, history and
	// trace; write and admin add observe, remember and forget_value.
	Role sgam.Role
	// EpisodeKind is the kind of the episodes remember captures; default
	// "message". It ranks the source under prefer_source, and only
	// user_confirmed makes a sensitive attribute a fact directly, which is
	// why the operator sets it and the model cannot.
	EpisodeKind string
	// Clock is the default instant of writes that name none; default the
	// system clock.
	Clock sgam.Clock
	// Version is reported to clients.
	Version string
	// Logger receives internal errors, which tools answer only as
	// "internal error"; default none.
	Logger *slog.Logger
	// Recaller answers recall; nil makes one over Store on Clock (a
	// server built per request should share one: it caches parsed
	// schemas).
	Recaller *recall.Recaller
}

// SubjectURITemplate names the resource of a subject's current state.
const SubjectURITemplate = "sgam://subjects/{subject}"

// New returns an MCP server with sgam's tools and resources for cfg's
// tenant. Building one is cheap enough to do per HTTP request.
func New(cfg Config) (*mcp.Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("mcpserver: no store")
	}
	if err := sgam.CheckTenant(cfg.Tenant); err != nil {
		return nil, err
	}
	if cfg.EpisodeKind != "" {
		if err := sgam.CheckEpisodeKind("episode_kind", cfg.EpisodeKind); err != nil {
			return nil, err
		}
	}
	if cfg.Role == "" {
		cfg.Role = sgam.RoleRead
	}
	if cfg.EpisodeKind == "" {
		cfg.EpisodeKind = sgam.KindMessage
	}
	if cfg.Clock == nil {
		cfg.Clock = sgam.SystemClock{}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Recaller == nil {
		cfg.Recaller = recall.New(cfg.Store).WithClock(cfg.Clock)
	}
	t := &tools{cfg: cfg, ingest: ingest.New(cfg.Store, nil)}
	s := mcp.NewServer(&mcp.Implementation{Name: "sgam", Title: "sgam memory", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions, SchemaCache: schemaCache,
	})
	offered := map[string]bool{"recall": true, "history": true, "trace": true}
	mcp.AddTool(s, &mcp.Tool{Name: "recall", Description: recallDoc, Annotations: readOnly}, answer(cfg.Logger, t.recall))
	mcp.AddTool(s, &mcp.Tool{Name: "history", Description: historyDoc, Annotations: readOnly}, answer(cfg.Logger, t.history))
	mcp.AddTool(s, &mcp.Tool{Name: "trace", Description: traceDoc, Annotations: readOnly}, answer(cfg.Logger, t.trace))
	if cfg.Role.Allows(sgam.RoleWrite) {
		mcp.AddTool(s, &mcp.Tool{Name: "observe", Description: observeDoc}, answer(cfg.Logger, t.observe))
		mcp.AddTool(s, &mcp.Tool{Name: "remember", Description: rememberDoc}, answer(cfg.Logger, t.remember))
		mcp.AddTool(s, &mcp.Tool{Name: "forget_value", Description: forgetValueDoc}, answer(cfg.Logger, t.forgetValue))
		offered["observe"], offered["remember"], offered["forget_value"] = true, true, true
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "subject-state", Title: "Current state of a subject",
		Description: "Every attribute of the subject that has a value now, with its sources, as JSON.",
		MIMEType:    "application/json", URITemplate: SubjectURITemplate}, t.subjectState)
	s.AddReceivingMiddleware(asWritten(offered, cfg.Logger))
	return s, nil
}

// answer turns h's errors into tool errors a model can act on (toolError).
// On success it keeps the JSON of h's answer, as encoding/json writes it,
// for asWritten to send: the SDK decodes structured output into any to
// validate it, which makes every number a float64, and sends that.
func answer[In, Out any](log *slog.Logger, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, zero, errors.New(toolError(ctx, log, req.Params.Name, err))
		}
		if ex, ok := ctx.Value(exactKey{}).(*exactAnswer); ok {
			if b, err := json.Marshal(out); err == nil {
				// Without content of its own, the SDK makes the text from
				// the structured output.
				ex.json, ex.text = b, res == nil || res.Content == nil
			}
		}
		return res, out, nil
	}
}

// toolError is the text of a tool error: the code, the field and the rule
// ("invalid: valid_from: ..."), or only "internal error" when the fault is
// ours (logged, never shown). The text is the coded error's alone (an
// *sgam.Error, a spent budget): what a store wrapped it in ("write: ...")
// names no argument.
func toolError(ctx context.Context, log *slog.Logger, tool string, err error) string {
	code := sgam.ErrorCode(err)
	var e interface {
		error
		ErrorCode() sgam.Code
	}
	if code == sgam.Internal || !errors.As(err, &e) {
		log.LogAttrs(ctx, slog.LevelError, "mcp tool", slog.String("tool", tool), slog.String("error", err.Error()))
		return "internal error"
	}
	return fmt.Sprintf("%s: %s", code, e.Error())
}

// exactKey carries an *exactAnswer from asWritten to answer.
type exactKey struct{}

// exactAnswer is the JSON of a tool's answer as encoding/json wrote it
// (json.Number keeps a number's digits), and whether the SDK made the
// answer's text from it.
type exactAnswer struct {
	json []byte
	text bool
}

// asWritten is a receiving middleware that keeps the numbers of a tool
// call as written, both ways. The SDK decodes arguments into any before a
// tool sees them, and re-encodes them, so that 9223372036854775807 or 1e30
// reaches an int64 as a garbled decoding error and 9007199254740993 as
// 9007199254740992; and it decodes a tool's structured output the same way
// and sends the re-encoded JSON, 12345678901234567890 as
// 12345678901234567000. So before the SDK decodes a call to an offered
// tool, this refuses arguments it would read other than as written
// (checkArguments), as a tool error naming the argument; and once the SDK
// has answered, it puts the answer's JSON as encoding/json wrote it (see
// answer) in place of the SDK's, as structured content and as the text the
// SDK made from it. The output schema is the SDK's to check, as before:
// the two differ only in the digits a float64 keeps.
func asWritten(offered map[string]bool, log *slog.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || call.Params == nil || !offered[call.Params.Name] {
				return next(ctx, method, req)
			}
			if err := checkArguments(call.Params.Name, call.Params.Arguments); err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(errors.New(toolError(ctx, log, call.Params.Name, err)))
				return res, nil
			}
			ex := &exactAnswer{}
			res, err := next(context.WithValue(ctx, exactKey{}, ex), method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil && !r.IsError && ex.json != nil {
				r.StructuredContent = json.RawMessage(ex.json)
				if ex.text {
					r.Content = []mcp.Content{&mcp.TextContent{Text: string(ex.json)}}
				}
			}
			return res, err
		}
	}
}

// wholeArgs are the whole-number arguments of the tools, each with the
// range its refusal names. The SDK reads them through a float64, which
// holds every whole number up to 2^53-1 (sgam.MaxFactID) exactly and no
// larger one: beyond that range they are refused here, within it the tool
// checks them.
var wholeArgs = map[string]map[string]wholeArg{
	"trace": {"fact_id": {min: 1, max: sgam.MaxFactID, what: fmt.Sprintf("fact ids go from 1 to %d", sgam.MaxFactID)}},
	"recall": {
		"budget": {min: -sgam.MaxFactID, max: sgam.MaxFactID,
			what: fmt.Sprintf("the budget is %d to %d tokens", recall.MinBudget, recall.MaxBudget)},
		"evidence_limit": {min: -sgam.MaxFactID, max: sgam.MaxFactID,
			what: fmt.Sprintf("the limit is 1 to %d, or -1 for none", recall.MaxEvidence)},
	},
}

type wholeArg struct {
	min, max int64
	what     string // the range, in words
}

// checkArguments refuses a tool's arguments that the SDK would read other
// than as written: a whole-number argument that is not one, or is beyond
// what a float64 holds exactly; and text that is not strict JSON
// (sgam.CheckJSON: an argument or a key given twice, invalid UTF-8, a
// number beyond a float64 such as a value of 1e400).
func checkArguments(tool string, args json.RawMessage) error {
	if len(args) == 0 {
		return nil
	}
	if ints := wholeArgs[tool]; len(ints) > 0 {
		// Before CheckJSON, whose message for 1e400 is about floats.
		var fields map[string]json.RawMessage
		if json.Unmarshal(args, &fields) == nil {
			for _, name := range slices.Sorted(maps.Keys(ints)) {
				w := ints[name]
				raw := bytes.TrimSpace(fields[name])
				if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
					continue // absent, or not a number: the SDK's schema says so
				}
				n, whole, fits := wholeNumber(string(raw))
				switch {
				case !whole:
					return sgam.Errorf(sgam.Invalid, name, "must be a whole number, not %s", raw)
				case !fits || n < w.min || n > w.max:
					return sgam.Errorf(sgam.Invalid, name, "%s is out of range: %s", raw, w.what)
				}
			}
		}
	}
	return sgam.CheckJSON("arguments", args)
}

// wholeNumber reads the JSON number s exactly, fraction and exponent
// included: whole says it is a whole number ("1e2" is, "1.5" and
// "4.0000000000000001" are not), fits that it has at most 16 digits (every
// number within ±sgam.MaxFactID does), and then n is its value.
func wholeNumber(s string) (n int64, whole, fits bool) {
	neg := strings.HasPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(strings.TrimPrefix(s, "-")), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, true, true // zero, whatever its exponent
	}
	// The value is digits × 10^(e - len(frac)), and digits' trailing zeros
	// are powers of ten too.
	e, err := strconv.ParseInt(strings.TrimPrefix(exp, "+"), 10, 64)
	if !hasExp {
		e, err = 0, nil
	}
	if err != nil {
		// An exponent beyond int64: a huge number, or a tiny fraction.
		return 0, !strings.HasPrefix(exp, "-"), false
	}
	trimmed := strings.TrimRight(digits, "0")
	e += int64(len(digits)-len(trimmed)) - int64(len(frac))
	switch {
	case e < 0:
		return 0, false, false
	case int64(len(trimmed))+e > 16:
		return 0, true, false
	}
	n, err = strconv.ParseInt(trimmed+strings.Repeat("0", int(e)), 10, 64)
	if err != nil {
		return 0, true, false
	}
	if neg {
		n = -n
	}
	return n, true, true
}

// schemaCache keeps the tools' JSON Schemas, inferred once, across the
// servers built per request.
var schemaCache = mcp.NewSchemaCache()

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

// HTTPHandler serves MCP over streamable HTTP, statelessly: each request
// gets a server built by bind, which decides the tenant and role from the
// request (its API key), never from anything the model sends.
func HTTPHandler(bind func(*http.Request) (Config, error), maxBody int64) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		cfg, err := bind(r)
		if err != nil {
			return nil // the SDK answers 400; bind's caller authenticated first
		}
		s, err := New(cfg)
		if err != nil {
			return nil
		}
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: maxBody})
}

const instructions = `sgam is a bitemporal memory: facts about subjects (a person, an account,
a task), each with a valid time (when it is true in the world) and a
transaction time (when it was recorded). A correction closes the old value
instead of deleting it, so you can ask what is true now, what was true at an
instant (as_of), and what was believed at an instant (known_at).

Use observe to hand what the user said to memory as it was said: sgam's
extraction turns it into typed facts under the tenant's schema in the
background. Use remember when you know the exact fact, quoting their words;
recall before answering from memory; forget_value when the user says a value
no longer holds. Cite the sources recall returns.`

const (
	observeDoc     = `Capture what the user said (or a tool returned), in their words, for memory: it is stored as an episode and extracted into typed facts in the background under the tenant's schema (one model call at most; the schema and the ledger decide what is stored). Nothing to structure yourself; name the subjects it is about when you know their ids. Returns the episode id and whether it was queued for extraction (false when it was captured and extracted before).`
	rememberDoc    = `Remember a fact: subject's attribute has value from valid_from on. Quote the words it came from: the quote is stored as the fact's source episode. A later value for the same attribute closes the earlier one at its valid_from (a correction), and the earlier one stays in history. Returns the stored fact; kept=true means a stronger source already holds a value there and nothing was written; pending means the value waits for confirmation (and fact is null).`
	forgetValueDoc = `Record that subject's attribute no longer has a value from at on ("I no longer prefer X"), quoting the words that say so. This is a retraction, not an erasure: history keeps the earlier value. For a set attribute, name the member in value.`
	recallDoc      = `Recall what memory holds to answer a question: the values of the subjects and attributes it names, at the instants it names ("on June 2, 2026", "last week", "as we believed on ..."; as_of and known_at win; default now), each with its valid window, fact id, source episode ids and the quote that supports it; values superseded earlier only when the question is about the past, marked past; then episodes that match the question, as evidence. The text is a prompt-ready block within budget tokens; the structured content has the same as JSON (facts, evidence, related, instants and why). Name subject (and attribute) to read them without a question.`
	historyDoc     = `Every recorded version of one attribute of a subject, corrections and retractions included, in the order they were written, with their valid and belief windows.`
	traceDoc       = `The provenance of a fact by its fact_id: the chain of rows it superseded and the source episodes of each, with their content.`
)

// tools holds the handlers of one bound server.
type tools struct {
	cfg    Config
	ingest *ingest.Ingester // captures observe's episodes for the workers
}

// RememberInput is the input of remember.
type RememberInput struct {
	Subject   string `json:"subject" jsonschema:"who or what the fact is about, e.g. mira or acct-42"`
	Attribute string `json:"attribute" jsonschema:"what is known about the subject, e.g. passport_deadline"`
	Value     any    `json:"value" jsonschema:"the value, any JSON: a string, number, boolean, object or list"`
	Quote     string `json:"quote" jsonschema:"the words the fact comes from, quoted; stored as its source episode"`
	ValidFrom string `json:"valid_from,omitempty" jsonschema:"when the value starts to hold: RFC 3339 (2026-06-03T10:00:00Z) or a date (2026-06-03, midnight UTC); default now"`
	Session   string `json:"session,omitempty" jsonschema:"the conversation the quote is from, to group episodes"`
}

// ObserveInput is the input of observe.
type ObserveInput struct {
	Text     string   `json:"text" jsonschema:"what the user said or a tool returned, as it was said"`
	Session  string   `json:"session,omitempty" jsonschema:"the conversation it is from, to group episodes"`
	Subjects []string `json:"subjects,omitempty" jsonschema:"ids of the subjects it is about, when known (e.g. mira): their stored values are shown to the extraction"`
}

// ObserveOutput is the output of observe.
type ObserveOutput struct {
	EpisodeID string `json:"episode_id" jsonschema:"the episode holding the text"`
	Queued    bool   `json:"queued" jsonschema:"queued for extraction; false when it was captured and extracted before"`
}

// ForgetValueInput is the input of forget_value.
type ForgetValueInput struct {
	Subject   string `json:"subject" jsonschema:"who or what the fact is about"`
	Attribute string `json:"attribute" jsonschema:"the attribute that no longer has a value"`
	Quote     string `json:"quote" jsonschema:"the words that say the value no longer holds, quoted; stored as the source episode"`
	At        string `json:"at,omitempty" jsonschema:"from when it no longer holds: RFC 3339 or a date (midnight UTC); default now"`
	Value     any    `json:"value,omitempty" jsonschema:"for a set attribute, the member to remove"`
	Session   string `json:"session,omitempty" jsonschema:"the conversation the quote is from"`
}

// WriteOutput is the answer of remember and forget_value.
type WriteOutput struct {
	Fact      *FactView `json:"fact" jsonschema:"the row that now holds the value; null when the value is held as pending"`
	EpisodeID string    `json:"episode_id" jsonschema:"the source episode holding the quote"`
	NoChange  bool      `json:"no_change,omitempty" jsonschema:"the same value was already stored there; the quote was added as evidence"`
	Kept      bool      `json:"kept,omitempty" jsonschema:"a stronger source holds a different value there; nothing was written"`
	Pending   any       `json:"pending,omitempty" jsonschema:"the candidate held for confirmation, when the value was not written"`
}

// RecallInput is the input of recall.
type RecallInput struct {
	Question      string   `json:"question,omitempty" jsonschema:"the question, in words; the subjects, attributes and instants it names are found in it"`
	Subject       string   `json:"subject,omitempty" jsonschema:"the subject to recall, instead of those the question names"`
	Subjects      []string `json:"subjects,omitempty" jsonschema:"the subjects to recall (at most 8), instead of those the question names; not with subject"`
	Attribute     string   `json:"attribute,omitempty" jsonschema:"only this attribute of the subject"`
	AsOf          string   `json:"as_of,omitempty" jsonschema:"what was true at this instant: RFC 3339 or a date (midnight UTC); default what the question says, else now"`
	KnownAt       string   `json:"known_at,omitempty" jsonschema:"as memory believed it at this instant: RFC 3339 or a date; default what the question says, else now"`
	Budget        int      `json:"budget,omitempty" jsonschema:"most tokens of the answer's text (64 to 100000; 0 or absent: the default, 800)"`
	Evidence      string   `json:"evidence,omitempty" jsonschema:"which evidence is cited: auto (default: episodes near the best match, and only what the facts' quotes leave out when the facts answer), always (the best evidence_limit episodes) or none"`
	EvidenceLimit int      `json:"evidence_limit,omitempty" jsonschema:"most episodes cited as evidence (1 to 100, -1 for none; 0 or absent: the default, 5)"`
	Hops          int      `json:"hops,omitempty" jsonschema:"how deep references to other subjects are followed for related facts (1 to 3, -1 for none; 0 or absent: the default, 1)"`
	Session       string   `json:"session,omitempty" jsonschema:"the conversation asking: the subjects of its latest facts are in play too"`
}

// HistoryInput is the input of history.
type HistoryInput struct {
	Subject   string `json:"subject"`
	Attribute string `json:"attribute"`
}

// HistoryOutput is the answer of history.
type HistoryOutput struct {
	Facts []FactView `json:"facts" jsonschema:"every row of the attribute, oldest write first"`
}

// TraceInput is the input of trace.
type TraceInput struct {
	FactID int64 `json:"fact_id" jsonschema:"a fact_id from recall or history"`
}

// TraceOutput is the answer of trace.
type TraceOutput struct {
	Chain    []FactView `json:"chain" jsonschema:"the fact, then each row it superseded"`
	Episodes []Source   `json:"episodes" jsonschema:"the source episodes of every row in the chain"`
}

// FactView is a fact as tools show it: times as RFC 3339 text, values as
// JSON, sources with their quotes.
type FactView struct {
	FactID      int64    `json:"fact_id"`
	Subject     string   `json:"subject"`
	Attribute   string   `json:"attribute"`
	Member      any      `json:"member,omitempty" jsonschema:"the set member this row is about"`
	Value       any      `json:"value" jsonschema:"the value; null for a retraction"`
	Retraction  bool     `json:"retraction,omitempty" jsonschema:"this row records that the attribute had no value"`
	ValidFrom   string   `json:"valid_from"`
	ValidTo     string   `json:"valid_to,omitempty" jsonschema:"when the value stopped holding; absent while it holds"`
	RecordedAt  string   `json:"recorded_at"`
	RetractedAt string   `json:"retracted_at,omitempty" jsonschema:"when memory stopped believing this row; absent while believed"`
	Supersedes  int64    `json:"supersedes,omitempty" jsonschema:"the fact_id of the row this one replaced or shortened"`
	Sources     []Source `json:"sources"`
}

// Source is an episode that supports a fact.
type Source struct {
	EpisodeID  string `json:"episode_id"`
	Kind       string `json:"kind,omitempty"`
	Quote      string `json:"quote,omitempty" jsonschema:"the episode's content"`
	OccurredAt string `json:"occurred_at,omitempty"`
	Session    string `json:"session,omitempty"`
}

func (t *tools) remember(ctx context.Context, req *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, WriteOutput, error) {
	value, err := sgam.CanonicalValue("value", rawValue(req), sgam.DefaultMaxValueBytes)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	from, err := t.instant("valid_from", in.ValidFrom)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	key := sgam.Key{Tenant: t.cfg.Tenant, Subject: in.Subject, Attribute: in.Attribute}
	if err := key.Check(); err != nil {
		return nil, WriteOutput{}, err
	}
	ep, err := t.episode(in.Quote, in.Session, "remember", in.Subject, in.Attribute, string(value), in.ValidFrom)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	res, err := t.write(ctx, ep, in.Attribute, false, func() (sgam.WriteResult, error) {
		return t.cfg.Store.Assert(ctx, sgam.Assertion{Key: key, Value: value, ValidFrom: from, Source: ep.ID}) // on a set, adds the member
	})
	if err != nil {
		return nil, WriteOutput{}, err
	}
	return nil, t.writeOutput(ctx, ep.ID, res), nil
}

func (t *tools) observe(ctx context.Context, _ *mcp.CallToolRequest, in ObserveInput) (*mcp.CallToolResult, ObserveOutput, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, ObserveOutput{}, sgam.Errorf(sgam.Invalid, "text", "is required: what was said")
	}
	// A retried call is the same episode: the key is the call's content.
	key := ingest.Key("mcp", append([]string{"observe", in.Text, in.Session}, in.Subjects...)...)
	res, err := t.ingest.Capture(ctx, sgam.Episode{Tenant: t.cfg.Tenant, Session: in.Session, Kind: t.cfg.EpisodeKind,
		Content: in.Text, Subjects: in.Subjects, IdempotencyKey: key}, ingest.ModeBackground)
	if err != nil {
		return nil, ObserveOutput{}, sgam.RenameField(err, "content", "text") // the store names an episode's fields, a tool its arguments
	}
	return nil, ObserveOutput{EpisodeID: res.Episode.ID, Queued: res.Queued}, nil
}

func (t *tools) forgetValue(ctx context.Context, req *mcp.CallToolRequest, in ForgetValueInput) (*mcp.CallToolResult, WriteOutput, error) {
	at, err := t.instant("at", in.At)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	key := sgam.Key{Tenant: t.cfg.Tenant, Subject: in.Subject, Attribute: in.Attribute}
	if err := key.Check(); err != nil {
		return nil, WriteOutput{}, err
	}
	var member json.RawMessage
	if in.Value != nil {
		if member, err = sgam.CanonicalValue("value", rawValue(req), sgam.DefaultMaxValueBytes); err != nil {
			return nil, WriteOutput{}, err
		}
	}
	ep, err := t.episode(in.Quote, in.Session, "forget_value", in.Subject, in.Attribute, string(member), in.At)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	res, err := t.write(ctx, ep, in.Attribute, true, func() (sgam.WriteResult, error) {
		r := sgam.Retraction{Key: key, At: at, Source: ep.ID, Value: member}
		if member != nil {
			return t.cfg.Store.Remove(ctx, r)
		}
		return t.cfg.Store.Retract(ctx, r)
	})
	if err != nil {
		return nil, WriteOutput{}, err
	}
	return nil, t.writeOutput(ctx, ep.ID, res), nil
}

// episode returns the source episode of a write, holding its quote,
// validated but not stored (write stores it). Its id is derived from the
// whole call, so a client that retries a call gets the same episode back
// instead of a second one.
func (t *tools) episode(quote, session string, call ...string) (sgam.Episode, error) {
	if strings.TrimSpace(quote) == "" {
		return sgam.Episode{}, sgam.Errorf(sgam.Invalid, "quote", "is required: the words the fact comes from")
	}
	h := sha256.New()
	for _, s := range append(call, quote, session, t.cfg.EpisodeKind) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	// As the store's ids are made ("ep_" and 16 of these), from the hash.
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	id := []byte("ep_")
	for _, c := range h.Sum(nil)[:16] {
		id = append(id, alphabet[c&31])
	}
	e := sgam.Episode{ID: string(id), Tenant: t.cfg.Tenant, Session: session, Kind: t.cfg.EpisodeKind, Content: quote}
	if _, err := (sgam.Limits{}).CheckNewEpisode(e, t.cfg.Clock.Now()); err != nil {
		return e, sgam.RenameField(err, "content", "quote")
	}
	return e, nil
}

// write runs w, a write whose source is ep, and stores ep, so that a write
// the ledger refuses writes nothing, not even its quote.
//
// Mostly the write goes first: it names ep before ep is stored, so the
// store creates ep as an empty placeholder in the write's own transaction,
// and a refusal leaves neither; the quote then fills the placeholder in
// (AddEpisode). The ledger weighs the kind of a write's source only for an
// attribute the tenant's schema declares sensitive or settles by
// prefer_source, and a placeholder has no kind yet: for those, ep is
// stored first, and a refused write leaves its quote behind (docs/mcp.md).
// A fault between the two steps leaves a written fact whose source is an
// empty placeholder until the call is retried, which fills it in.
func (t *tools) write(ctx context.Context, ep sgam.Episode, attribute string, retraction bool, w func() (sgam.WriteResult, error)) (sgam.WriteResult, error) {
	first, err := t.kindCounts(ctx, attribute, retraction)
	if err != nil {
		return sgam.WriteResult{}, err
	}
	if first {
		if _, err := t.cfg.Store.AddEpisode(ctx, ep); err != nil {
			return sgam.WriteResult{}, sgam.RenameField(err, "content", "quote")
		}
		return w()
	}
	res, err := w()
	if err != nil {
		return res, err
	}
	if _, err := t.cfg.Store.AddEpisode(ctx, ep); err != nil {
		return res, sgam.RenameField(err, "content", "quote")
	}
	return res, nil
}

// parsedSchemas keeps the tenants' parsed schemas across the servers built
// per request.
var parsedSchemas schema.Cache

// kindCounts reports whether the ledger will weigh the kind of the source
// of a write of attribute under the tenant's schema: a sensitive
// attribute's assertions (only user_confirmed makes them facts directly),
// and the writes of an attribute whose conflicts prefer_source settles. An
// attribute the schema does not declare is refused whatever its source.
func (t *tools) kindCounts(ctx context.Context, attribute string, retraction bool) (bool, error) {
	sv, err := t.cfg.Store.Schema(ctx, t.cfg.Tenant)
	if err != nil || sv.Version == 0 {
		return false, err
	}
	sc, err := parsedSchemas.Parsed(sv)
	if err != nil {
		return false, err
	}
	a, ok := sc.Attribute(attribute)
	if !ok {
		if to, renamed := sc.DualRead(attribute, t.cfg.Clock.Now()); renamed {
			a, ok = sc.Attribute(to)
		}
	}
	return ok && (a.Conflict == schema.PreferSource || a.Sensitive && !retraction), nil
}

func (t *tools) writeOutput(ctx context.Context, episodeID string, res sgam.WriteResult) WriteOutput {
	out := WriteOutput{EpisodeID: episodeID, NoChange: res.NoChange, Kept: res.Kept}
	if res.Pending != nil {
		out.Pending = asJSON(res.Pending)
	}
	if res.Fact != nil {
		v := t.view(ctx, *res.Fact, map[string]Source{})
		out.Fact = &v
	}
	return out
}

// recall answers with the rendered block as text and the context as
// structured content. The output is declared an object, not the context's
// Go type: its facts carry values of any JSON type.
func (t *tools) recall(ctx context.Context, _ *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, map[string]any, error) {
	q := recall.Query{Tenant: t.cfg.Tenant, Question: in.Question, TokenBudget: in.Budget, Evidence: in.Evidence, EvidenceLimit: in.EvidenceLimit,
		Hops: in.Hops, Session: in.Session, Subjects: in.Subjects}
	if in.Subject != "" {
		if len(in.Subjects) > 0 {
			return nil, nil, sgam.Errorf(sgam.Invalid, "subjects", "give subject or subjects, not both")
		}
		q.Subjects = []string{in.Subject}
	}
	if in.Attribute != "" {
		q.Attributes = []string{in.Attribute}
	}
	var err error
	if in.AsOf != "" {
		if q.AsOf, err = parseInstant("as_of", in.AsOf); err != nil {
			return nil, nil, err
		}
	}
	if in.KnownAt != "" {
		if q.KnownAt, err = parseInstant("known_at", in.KnownAt); err != nil {
			return nil, nil, err
		}
	}
	c, err := t.cfg.Recaller.Recall(ctx, q)
	var se *sgam.Error
	if errors.As(err, &se) && (in.Subject != "" && se.Field == "subjects[0]" || se.Field == "attributes[0]") {
		// subject and attribute are one each, by those names.
		named := *se
		named.Field = strings.TrimSuffix(se.Field, "s[0]")
		err = &named
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, nil, err
	}
	var out map[string]any
	if err := decodeExact(b, &out); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: c.Rendered}}}, out, nil
}

// read returns one attribute's value (or members), or a subject's state.
func (t *tools) read(ctx context.Context, subject, attribute string, at sgam.At) ([]sgam.Fact, error) {
	if attribute == "" {
		return t.cfg.Store.State(ctx, t.cfg.Tenant, subject, at)
	}
	// Members answers a set's members, and a single value as a list of
	// zero or one.
	return t.cfg.Store.Members(ctx, sgam.Key{Tenant: t.cfg.Tenant, Subject: subject, Attribute: attribute}, at)
}

func (t *tools) history(ctx context.Context, _ *mcp.CallToolRequest, in HistoryInput) (*mcp.CallToolResult, HistoryOutput, error) {
	facts, err := t.cfg.Store.History(ctx, sgam.Key{Tenant: t.cfg.Tenant, Subject: in.Subject, Attribute: in.Attribute})
	if err != nil {
		return nil, HistoryOutput{}, err
	}
	return nil, HistoryOutput{Facts: t.views(ctx, facts)}, nil
}

func (t *tools) trace(ctx context.Context, _ *mcp.CallToolRequest, in TraceInput) (*mcp.CallToolResult, TraceOutput, error) {
	tr, err := t.cfg.Store.Trace(ctx, t.cfg.Tenant, in.FactID)
	if err != nil {
		return nil, TraceOutput{}, err
	}
	out := TraceOutput{Chain: make([]FactView, len(tr.Chain)), Episodes: make([]Source, len(tr.Episodes))}
	known := map[string]Source{}
	for i, e := range tr.Episodes {
		out.Episodes[i] = source(e)
		known[e.ID] = out.Episodes[i]
	}
	for i, f := range tr.Chain {
		out.Chain[i] = t.view(ctx, f, known)
	}
	return nil, out, nil
}

// subjectState reads the resource sgam://subjects/{subject}.
func (t *tools) subjectState(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	raw, ok := strings.CutPrefix(uri, "sgam://subjects/")
	if !ok || raw == "" || strings.Contains(raw, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	subject, err := url.PathUnescape(raw)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	facts, err := t.cfg.Store.State(ctx, t.cfg.Tenant, subject, sgam.At{})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(map[string]any{"subject": subject, "facts": t.views(ctx, facts)})
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (t *tools) views(ctx context.Context, facts []sgam.Fact) []FactView {
	out := make([]FactView, len(facts))
	known := map[string]Source{}
	for i, f := range facts {
		out[i] = t.view(ctx, f, known)
	}
	return out
}

// view shows f with its sources' quotes, reading each episode once per
// answer (known caches them). An episode that cannot be read is still
// named by its id.
func (t *tools) view(ctx context.Context, f sgam.Fact, known map[string]Source) FactView {
	v := FactView{FactID: f.ID, Subject: f.Subject, Attribute: f.Attribute, Value: asJSON(f.Value), Retraction: f.Tombstone,
		ValidFrom: sgam.FormatTime(f.ValidFrom), RecordedAt: sgam.FormatTime(f.RecordedAt), Sources: make([]Source, 0, len(f.Sources))}
	if len(f.Member) > 0 {
		v.Member = asJSON(f.Member)
	}
	if f.ValidTo != nil {
		v.ValidTo = sgam.FormatTime(*f.ValidTo)
	}
	if f.RetractedAt != nil {
		v.RetractedAt = sgam.FormatTime(*f.RetractedAt)
	}
	if f.Supersedes != nil {
		v.Supersedes = *f.Supersedes
	}
	for _, id := range f.Sources {
		s, ok := known[id]
		if !ok {
			s = Source{EpisodeID: id}
			if e, err := t.cfg.Store.Episode(ctx, t.cfg.Tenant, id); err == nil {
				s = source(e)
			}
			known[id] = s
		}
		v.Sources = append(v.Sources, s)
	}
	return v
}

func source(e sgam.Episode) Source {
	s := Source{EpisodeID: e.ID, Kind: e.Kind, Quote: e.Content, Session: e.Session}
	if !e.OccurredAt.IsZero() {
		s.OccurredAt = sgam.FormatTime(e.OccurredAt)
	}
	return s
}

// instant parses an optional write instant; empty is now.
func (t *tools) instant(field, s string) (time.Time, error) {
	if s == "" {
		return t.cfg.Clock.Now(), nil
	}
	return parseInstant(field, s)
}

// parseInstant takes RFC 3339 with an offset, or a bare date as midnight
// UTC: models often write dates, and a date has no offset to get wrong.
func parseInstant(field, s string) (time.Time, error) {
	if len(s) == len("2006-01-02") {
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			if d.IsZero() { // 0001-01-01 is no "not given" here
				return sgam.ParseTime(field, s+"T00:00:00Z")
			}
			return sgam.CheckTime(field, d)
		}
	}
	return sgam.ParseTime(field, s)
}

func show(t, now time.Time) string {
	if t.IsZero() {
		t = now.Truncate(time.Microsecond)
	}
	return sgam.FormatTime(t)
}

// rawValue is a call's "value" argument as the client wrote it. The SDK
// decodes arguments into any, which makes every number a float64:
// 12345678901234567890 would be stored as 12345678901234567000.
func rawValue(req *mcp.CallToolRequest) json.RawMessage {
	var args struct {
		Value json.RawMessage `json:"value"`
	}
	json.Unmarshal(req.Params.Arguments, &args) // the SDK has decoded them already
	return args.Value
}

// asJSON decodes stored JSON for a tool's answer.
func asJSON(v any) any {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	default:
		var err error
		if b, err = json.Marshal(x); err != nil {
			return nil
		}
	}
	var out any
	if len(b) == 0 || decodeExact(b, &out) != nil {
		return nil
	}
	return out
}

// decodeExact decodes JSON into v keeping numbers as written
// (json.Number), so that an answer shows 12345678901234567890 as stored,
// not rounded through a float64.
func decodeExact(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
