// Package replay runs a JSONL script of ledger operations against a store
// and writes one JSONL result per operation, in order. It is how fixed
// episode sequences are replayed and the ledger inspected after each turn.
//
// Operations (tenant may be left out: the runner's default tenant applies):
//
//	{"op":"clock","now":"2026-06-03T10:00:00Z"}
//	{"op":"episode","tenant":"acme","episode_id":"e2","kind":"message","content":"...","occurred_at":"..."}
//	{"op":"assert","tenant":"acme","subject":"mira","attribute":"passport_deadline","value":"2026-06-30","valid_from":"...","source":"e2"}
//	{"op":"retract","tenant":"acme","subject":"mira","attribute":"passport_deadline","at":"...","source":"e3"}
//	{"op":"get","tenant":"acme","subject":"mira","attribute":"passport_deadline","as_of":"...","known_at":"..."}
//	{"op":"history","tenant":"acme","subject":"mira","attribute":"passport_deadline"}
//	{"op":"state","tenant":"acme","subject":"mira","as_of":"...","known_at":"..."}
//	{"op":"trace","tenant":"acme","fact_id":4}
//	{"op":"schema","schema":{"attributes":{"allergies":{"memory":"profile","type":"string","cardinality":"many"}}}}
//	{"op":"add","subject":"mira","attribute":"allergies","value":"peanuts","valid_from":"...","source":"e4"}
//	{"op":"remove","subject":"mira","attribute":"allergies","value":"peanuts","at":"...","source":"e5"}
//	{"op":"traverse","subject":"mira","path":["account","policy"],"as_of":"...","known_at":"..."}
//	{"op":"pending","subject":"mira"}
//	{"op":"confirm","pending_id":"pd_...","episode_id":"e6"}   (or "subject" and "attribute" instead of "pending_id")
//	{"op":"dismiss","pending_id":"pd_..."}                     (likewise)
//
// "get" on a set returns its members as "facts".
//
// Results: {"ok":true}, {"ok":true,"fact":{...}}, {"ok":true,"fact":null},
// {"ok":true,"no_change":true,"fact":{...}}, {"ok":true,"facts":[...]},
// {"ok":true,"episode":{...}}, {"ok":true,"trace":{...}},
// {"ok":true,"pending":{...}} (a held-back write), {"ok":true,"candidates":[...]},
// {"ok":true,"hops":[...]}, {"ok":true,"schema":{...}} or
// {"ok":false,"error":{"code":"conflict","field":"valid_from","message":"..."}}.
// A failed line changes nothing and the replay goes on. Blank lines are
// skipped and produce no result.
package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
)

// MaxLineBytes bounds one script line.
const MaxLineBytes = 8 << 20

// Op is one parsed script line.
type Op struct {
	Name           string
	Now            time.Time
	Tenant         string
	EpisodeID      string
	Session        string
	Kind           string
	Content        string
	OccurredAt     time.Time
	Metadata       json.RawMessage
	IdempotencyKey string
	Retention      string
	Subject        string
	Attribute      string
	Value          json.RawMessage
	ValidFrom      time.Time
	At             time.Time
	Source         string
	AsOf           time.Time
	KnownAt        time.Time
	FactID         int64
	Path           []string
	PendingID      string
	Schema         json.RawMessage
}

// fields lists, for each operation, the fields it takes; required ones
// are marked with a leading '!'.
var fields = map[string][]string{
	"clock":    {"!now"},
	"episode":  {"tenant", "episode_id", "session", "kind", "content", "occurred_at", "metadata", "idempotency_key", "retention"},
	"assert":   {"tenant", "!subject", "!attribute", "!value", "!valid_from", "!source"},
	"retract":  {"tenant", "!subject", "!attribute", "!at", "!source"},
	"get":      {"tenant", "!subject", "!attribute", "as_of", "known_at"},
	"history":  {"tenant", "!subject", "!attribute"},
	"state":    {"tenant", "!subject", "as_of", "known_at"},
	"trace":    {"tenant", "!fact_id"},
	"schema":   {"tenant", "!schema"},
	"add":      {"tenant", "!subject", "!attribute", "!value", "!valid_from", "!source"},
	"remove":   {"tenant", "!subject", "!attribute", "!value", "!at", "!source"},
	"traverse": {"tenant", "!subject", "!path", "as_of", "known_at"},
	"pending":  {"tenant", "subject"},
	"confirm":  {"tenant", "pending_id", "subject", "attribute", "!episode_id"},
	"dismiss":  {"tenant", "pending_id", "subject", "attribute"},
}

func opNames() string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// scriptLine is every field a line may hold, as sgam.DecodeStrict reads
// them; which of them an operation takes is fields'.
type scriptLine struct {
	Op             string          `json:"op"`
	Now            string          `json:"now"`
	Tenant         string          `json:"tenant"`
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     string          `json:"occurred_at"`
	Metadata       json.RawMessage `json:"metadata"`
	IdempotencyKey string          `json:"idempotency_key"`
	Retention      string          `json:"retention"`
	Subject        string          `json:"subject"`
	Attribute      string          `json:"attribute"`
	Value          json.RawMessage `json:"value"`
	ValidFrom      string          `json:"valid_from"`
	At             string          `json:"at"`
	Source         string          `json:"source"`
	AsOf           string          `json:"as_of"`
	KnownAt        string          `json:"known_at"`
	FactID         int64           `json:"fact_id"`
	Path           []string        `json:"path"`
	PendingID      string          `json:"pending_id"`
	Schema         json.RawMessage `json:"schema"`
}

// nullable are the fields whose value may be JSON null: a value is any
// JSON (the ledger judges it), and null metadata is none.
var nullable = map[string]bool{"value": true, "schema": true, "metadata": true}

// ParseLine parses one script line with sgam.DecodeStrict. Errors are
// *sgam.Error naming the field: a missing or unknown field, a field the
// operation does not take, a malformed timestamp or JSON value.
func ParseLine(line []byte) (Op, error) {
	// Which fields the line holds, to say which its operation takes
	// before anything else: strict JSON first, so that a map reads it as
	// written.
	if err := sgam.CheckJSON("line", line); err != nil {
		return Op{}, err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(line, &present); err != nil || present == nil {
		var l scriptLine
		return Op{}, sgam.DecodeStrict("line", line, &l) // says what the line is instead
	}
	var name string
	if v, ok := present["op"]; ok && json.Unmarshal(v, &name) != nil {
		return Op{}, sgam.Errorf(sgam.Invalid, "op", "must be a JSON string")
	}
	op := Op{Name: name}
	allowed, ok := fields[op.Name]
	if !ok {
		if op.Name == "" {
			return op, sgam.Errorf(sgam.Invalid, "op", "is required: one of %s", opNames())
		}
		return op, sgam.Errorf(sgam.Invalid, "op", "%q is not an operation: one of %s", op.Name, opNames())
	}
	takes := map[string]bool{"op": true}
	for _, f := range allowed {
		takes[strings.TrimPrefix(f, "!")] = true
	}
	keys := make([]string, 0, len(present))
	for k := range present {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !takes[k] {
			if k == "" || len(k) > 64 {
				return op, sgam.Errorf(sgam.Invalid, "line", "has a field %.64q that %s does not take (it takes %s)", k, op.Name, strings.Join(trimBang(allowed), ", "))
			}
			return op, sgam.Errorf(sgam.Invalid, k, "is not a field of %s (it takes %s)", op.Name, strings.Join(trimBang(allowed), ", "))
		}
		if string(present[k]) == "null" && !nullable[k] {
			return op, sgam.Errorf(sgam.Invalid, k, "is null: leave the field out instead")
		}
	}
	for _, f := range allowed {
		if name, required := strings.CutPrefix(f, "!"); required {
			if _, ok := present[name]; !ok {
				return op, sgam.Errorf(sgam.Invalid, name, "is required by %s", op.Name)
			}
		}
	}
	var l scriptLine
	if err := sgam.DecodeStrict("line", line, &l); err != nil {
		return op, err
	}
	if _, ok := present["tenant"]; ok && l.Tenant == "" {
		return op, sgam.Errorf(sgam.Invalid, "tenant", "is empty; leave it out to use the default tenant")
	}
	op.Tenant, op.EpisodeID, op.Session, op.Kind, op.Content = l.Tenant, l.EpisodeID, l.Session, l.Kind, l.Content
	op.IdempotencyKey, op.Retention, op.Subject, op.Attribute = l.IdempotencyKey, l.Retention, l.Subject, l.Attribute
	op.Source, op.PendingID, op.Path, op.FactID = l.Source, l.PendingID, l.Path, l.FactID
	op.Value, op.Schema = l.Value, l.Schema
	if string(l.Metadata) != "null" {
		op.Metadata = l.Metadata
	}
	for _, t := range []struct {
		name string
		text string
		dst  *time.Time
	}{{"now", l.Now, &op.Now}, {"occurred_at", l.OccurredAt, &op.OccurredAt}, {"valid_from", l.ValidFrom, &op.ValidFrom},
		{"at", l.At, &op.At}, {"as_of", l.AsOf, &op.AsOf}, {"known_at", l.KnownAt, &op.KnownAt}} {
		if _, ok := present[t.name]; !ok {
			continue
		}
		v, err := sgam.ParseTime(t.name, t.text)
		if err != nil {
			return op, err
		}
		*t.dst = v
	}
	if _, ok := present["fact_id"]; ok && (op.FactID <= 0 || op.FactID > sgam.MaxFactID) {
		return op, sgam.Errorf(sgam.Invalid, "fact_id", "must be a positive integer")
	}
	if op.Name == "confirm" || op.Name == "dismiss" {
		_, byID := present["pending_id"]
		_, bySubject := present["subject"]
		_, byAttribute := present["attribute"]
		if byID == (bySubject || byAttribute) || bySubject != byAttribute {
			return op, sgam.Errorf(sgam.Invalid, "pending_id", "name the candidate by pending_id, or by subject and attribute")
		}
	}
	return op, nil
}

func trimBang(fs []string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = strings.TrimPrefix(f, "!")
	}
	return out
}

// Result is one line of output.
type Result struct {
	OK       bool            `json:"ok"`
	NoChange bool            `json:"no_change,omitempty"`
	Fact     json.RawMessage `json:"fact,omitempty"` // "null" when a read found no value, or a write was held pending
	Facts    *[]sgam.Fact    `json:"facts,omitempty"`
	Episode  *sgam.Episode   `json:"episode,omitempty"`
	Trace    *sgam.Trace     `json:"trace,omitempty"`
	// Kept: prefer_source kept the stored fact; Pending: the write was held
	// back as a candidate.
	Kept       bool                `json:"kept,omitempty"`
	Pending    *sgam.Candidate     `json:"pending,omitempty"`
	Candidates *[]sgam.Candidate   `json:"candidates,omitempty"`
	Hops       *[]sgam.Hop         `json:"hops,omitempty"`
	Schema     *sgam.SchemaVersion `json:"schema,omitempty"`
	Error      *sgam.ErrorDetail   `json:"error,omitempty"`
}

// Store is what a script uses of a store.
type Store interface {
	sgam.Episodes
	sgam.FactWriter
	sgam.FactReader
	sgam.Review
	sgam.Schemas
}

// Runner executes script lines against a store.
type Runner struct {
	Store Store
	// Clock is the store's transaction-time clock, set by "clock" lines.
	Clock *sgam.ManualClock
	// Tenant applies to lines that name none.
	Tenant string
	// OnlyTenant refuses lines that name another tenant than Tenant (a
	// replay on behalf of a caller bound to one tenant, as over HTTP).
	OnlyTenant bool
}

// Stats counts what a run did.
type Stats struct {
	Lines  int `json:"lines"`
	Failed int `json:"failed"`
}

// Run executes every line of in and writes one result line per operation to
// out. It stops only on an I/O error or a cancelled context; a failed
// operation is reported in its result line.
func (r *Runner) Run(ctx context.Context, in io.Reader, out io.Writer) (Stats, error) {
	var st Stats
	br := bufio.NewReaderSize(in, 1<<16)
	bw := bufio.NewWriter(out)
	defer bw.Flush()
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		line, tooLong, err := readLine(br, MaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return st, err
		}
		eof := errors.Is(err, io.EOF)
		line = bytes.TrimSpace(line)
		if len(line) > 0 || tooLong {
			st.Lines++
			var res Result
			if tooLong {
				res = failure(sgam.Errorf(sgam.Invalid, "line", "is longer than %d bytes", MaxLineBytes))
			} else {
				res = r.Line(ctx, line)
			}
			if !res.OK {
				st.Failed++
			}
			if err := enc.Encode(res); err != nil {
				return st, err
			}
			// Flush per line, so a caller driving the replay interactively
			// sees each result as soon as it exists.
			if err := bw.Flush(); err != nil {
				return st, err
			}
		}
		if eof {
			return st, nil
		}
	}
}

// readLine reads one line of at most max bytes. A longer line is consumed
// to its end and reported as tooLong, so the next line can still be read.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			tooLong = true
			line = line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// Line executes one script line.
func (r *Runner) Line(ctx context.Context, line []byte) Result {
	op, err := ParseLine(line)
	if err != nil {
		return failure(err)
	}
	res, err := r.Exec(ctx, op)
	if err != nil {
		return failure(err)
	}
	return res
}

func failure(err error) Result {
	d := sgam.Detail(err)
	return Result{Error: &d}
}

// Exec executes one parsed operation.
func (r *Runner) Exec(ctx context.Context, op Op) (Result, error) {
	tenant := op.Tenant
	if tenant == "" {
		tenant = r.Tenant
	}
	if r.OnlyTenant && tenant != r.Tenant {
		return Result{}, sgam.Errorf(sgam.Invalid, "tenant", "this replay acts within its caller's tenant only; leave tenant out")
	}
	key := sgam.Key{Tenant: tenant, Subject: op.Subject, Attribute: op.Attribute}
	at := sgam.At{AsOf: op.AsOf, KnownAt: op.KnownAt}
	switch op.Name {
	case "clock":
		if r.Clock == nil {
			return Result{}, sgam.Errorf(sgam.Invalid, "op", "this replay has no settable clock")
		}
		r.Clock.Set(op.Now)
		return Result{OK: true}, nil
	case "episode":
		e, err := r.Store.AddEpisode(ctx, sgam.Episode{Tenant: tenant, ID: op.EpisodeID, Session: op.Session, Kind: op.Kind,
			Content: op.Content, OccurredAt: op.OccurredAt, Metadata: op.Metadata, IdempotencyKey: op.IdempotencyKey, Retention: op.Retention})
		if err != nil {
			return Result{}, err
		}
		return Result{OK: true, Episode: &e}, nil
	case "assert":
		w, err := r.Store.Assert(ctx, sgam.Assertion{Key: key, Value: op.Value, ValidFrom: op.ValidFrom, Source: op.Source})
		if err != nil {
			return Result{}, err
		}
		return written(w)
	case "retract":
		w, err := r.Store.Retract(ctx, sgam.Retraction{Key: key, At: op.At, Source: op.Source})
		if err != nil {
			return Result{}, err
		}
		return written(w)
	case "add":
		w, err := r.Store.Add(ctx, sgam.Assertion{Key: key, Value: op.Value, ValidFrom: op.ValidFrom, Source: op.Source})
		if err != nil {
			return Result{}, err
		}
		return written(w)
	case "remove":
		w, err := r.Store.Remove(ctx, sgam.Retraction{Key: key, Value: op.Value, At: op.At, Source: op.Source})
		if err != nil {
			return Result{}, err
		}
		return written(w)
	case "get":
		f, err := r.Store.Get(ctx, key, at)
		if errors.Is(err, sgam.ErrSet) {
			return facts(r.Store.Members(ctx, key, at))
		}
		if err != nil {
			return Result{}, err
		}
		b, err := json.Marshal(f)
		return Result{OK: true, Fact: b}, err
	case "history":
		fs, err := r.Store.History(ctx, key)
		return facts(fs, err)
	case "state":
		fs, err := r.Store.State(ctx, tenant, op.Subject, at)
		return facts(fs, err)
	case "trace":
		tr, err := r.Store.Trace(ctx, tenant, op.FactID)
		if err != nil {
			return Result{}, err
		}
		return Result{OK: true, Trace: &tr}, nil
	case "schema":
		v, err := r.Store.ApplySchema(ctx, tenant, op.Schema, false)
		if err != nil {
			return Result{}, err
		}
		v.Body = nil
		return Result{OK: true, Schema: &v}, nil
	case "traverse":
		var clock sgam.Clock = sgam.SystemClock{}
		if r.Clock != nil {
			clock = r.Clock
		}
		hops, err := sgam.Traverse(ctx, r.Store, clock, tenant, op.Subject, op.Path, at)
		if err != nil {
			return Result{}, err
		}
		return Result{OK: true, Hops: &hops}, nil
	case "pending":
		cs, err := r.Store.Pending(ctx, sgam.PendingQuery{Tenant: tenant, Subject: op.Subject})
		if err != nil {
			return Result{}, err
		}
		return Result{OK: true, Candidates: &cs}, nil
	case "confirm", "dismiss":
		id, err := r.pendingID(ctx, tenant, op)
		if err != nil {
			return Result{}, err
		}
		if op.Name == "dismiss" {
			return Result{OK: true}, r.Store.Dismiss(ctx, tenant, id)
		}
		w, err := r.Store.Confirm(ctx, tenant, id, op.EpisodeID)
		if err != nil {
			return Result{}, err
		}
		return written(w)
	}
	return Result{}, sgam.Errorf(sgam.Invalid, "op", "%q is not an operation", op.Name)
}

func written(w sgam.WriteResult) (Result, error) {
	if w.Pending != nil {
		return Result{OK: true, Pending: w.Pending, Fact: json.RawMessage("null")}, nil
	}
	b, err := json.Marshal(w.Fact)
	return Result{OK: true, NoChange: w.NoChange, Kept: w.Kept, Fact: b}, err
}

// pendingID resolves the candidate a confirm or dismiss names: by id, or
// as the only pending candidate of subject.attribute (ids are random, so a
// script cannot know them in advance).
func (r *Runner) pendingID(ctx context.Context, tenant string, op Op) (string, error) {
	if op.PendingID != "" {
		return op.PendingID, nil
	}
	cs, err := r.Store.Pending(ctx, sgam.PendingQuery{Tenant: tenant, Subject: op.Subject, Limit: 10000})
	if err != nil {
		return "", err
	}
	var found []string
	for _, c := range cs {
		if c.Attribute == op.Attribute {
			found = append(found, c.ID)
		}
	}
	if len(found) != 1 {
		return "", sgam.Errorf(sgam.NotFound, "pending_id", "%s.%s has %d pending candidates; name one by pending_id", op.Subject, op.Attribute, len(found))
	}
	return found[0], nil
}

func facts(fs []sgam.Fact, err error) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	if fs == nil {
		fs = []sgam.Fact{}
	}
	return Result{OK: true, Facts: &fs}, nil
}
