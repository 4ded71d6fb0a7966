// Package archive is sgam's lossless export format: JSONL, one record per
// line, every row exactly as stored (ids, both time axes, sources and
// corroborating evidence), so that a database can be backed up, restored
// or moved between stores.
//
//	{"type":"header","format":"sgam-export","version":2,"exported_at":"2026-06-05T12:00:00Z"}
//	{"type":"schema","tenant":"acme","version":2,"hash":"…","applied_at":"…","schema":{…}}
//	{"type":"episode","tenant":"acme","episode_id":"e1","session":"","kind":"message","content":"...","occurred_at":"...","recorded_at":"..."}
//	{"type":"fact","fact_id":3,"tenant":"acme","subject":"mira","attribute":"passport_deadline","value":"2026-07-15",
//	 "valid_from":"...","valid_to":null,"recorded_at":"...","retracted_at":"...","supersedes":null,"schema_version":0,
//	 "source":"e1","evidence":[{"episode_id":"e9","recorded_at":"..."}]}
//
// Schema versions (the store default's with "store_default":true and no
// tenant) come first, so that the rows' schema_version names a stored
// schema when they arrive; episodes come before the facts that cite them.
// A tombstone has "tombstone":true and "value":null. Version 1 exports
// (no schema lines) are read too.
package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
)

// Format and Version identify the export format in its header line.
// Version 2 added schema lines; this package reads 1 and 2.
const (
	Format  = "sgam-export"
	Version = 2
)

// MaxLineBytes bounds one line: an episode's content is at most 1 MiB, and
// JSON escaping can grow it sixfold.
const MaxLineBytes = 8 << 20

type header struct {
	Type       string `json:"type"`
	Format     string `json:"format"`
	Version    int    `json:"version"`
	ExportedAt string `json:"exported_at"`
}

type episodeLine struct {
	Type           string          `json:"type"`
	Tenant         string          `json:"tenant"`
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     string          `json:"occurred_at"`
	RecordedAt     string          `json:"recorded_at"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Retention      string          `json:"retention,omitempty"`
	Subjects       []string        `json:"subjects,omitempty"`
}

type schemaLine struct {
	Type         string          `json:"type"`
	Tenant       string          `json:"tenant,omitempty"`
	StoreDefault bool            `json:"store_default,omitempty"`
	Version      int             `json:"version"`
	Hash         string          `json:"hash"`
	AppliedAt    string          `json:"applied_at"`
	Schema       json.RawMessage `json:"schema"`
}

type evidenceLine struct {
	EpisodeID  string `json:"episode_id"`
	RecordedAt string `json:"recorded_at"`
}

type factLine struct {
	Type          string          `json:"type"`
	FactID        int64           `json:"fact_id"`
	Tenant        string          `json:"tenant"`
	Subject       string          `json:"subject"`
	Attribute     string          `json:"attribute"`
	Member        json.RawMessage `json:"member,omitempty"`
	Value         json.RawMessage `json:"value"`
	Tombstone     bool            `json:"tombstone,omitempty"`
	ValidFrom     string          `json:"valid_from"`
	ValidTo       *string         `json:"valid_to"`
	RecordedAt    string          `json:"recorded_at"`
	RetractedAt   *string         `json:"retracted_at"`
	Supersedes    *int64          `json:"supersedes"`
	SchemaVersion int             `json:"schema_version"`
	Source        string          `json:"source,omitempty"`
	Evidence      []evidenceLine  `json:"evidence"`
	Actor         string          `json:"actor,omitempty"`
}

// Counts reports how many rows an export wrote.
type Counts struct {
	Schemas  int `json:"schemas"`
	Episodes int `json:"episodes"`
	Facts    int `json:"facts"`
}

// Export writes every row of tenant (all tenants when empty) to w.
func Export(ctx context.Context, store sgam.Admin, tenant string, now time.Time, w io.Writer) (Counts, error) {
	var c Counts
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(header{Type: "header", Format: Format, Version: Version, ExportedAt: sgam.FormatTime(now)}); err != nil {
		return c, err
	}
	schemas, err := store.ExportSchemas(ctx, tenant)
	if err != nil {
		return c, err
	}
	for _, v := range schemas {
		c.Schemas++
		if err := enc.Encode(schemaLine{Type: "schema", Tenant: v.Tenant, StoreDefault: v.StoreDefault, Version: v.Version, Hash: v.Hash,
			AppliedAt: sgam.FormatTime(v.AppliedAt), Schema: v.Body}); err != nil {
			return c, err
		}
	}
	err = store.Export(ctx, tenant, func(e sgam.Episode) error {
		c.Episodes++
		return enc.Encode(episodeLine{Type: "episode", Tenant: e.Tenant, EpisodeID: e.ID, Session: e.Session, Kind: e.Kind,
			Content: e.Content, OccurredAt: sgam.FormatTime(e.OccurredAt), RecordedAt: sgam.FormatTime(e.RecordedAt),
			Metadata: e.Metadata, IdempotencyKey: e.IdempotencyKey, Retention: e.Retention, Subjects: e.Subjects})
	}, func(f sgam.StoredFact) error {
		c.Facts++
		return enc.Encode(toFactLine(f))
	})
	if err != nil {
		return c, err
	}
	return c, bw.Flush()
}

func toFactLine(f sgam.StoredFact) factLine {
	l := factLine{Type: "fact", FactID: f.ID, Tenant: f.Tenant, Subject: f.Subject, Attribute: f.Attribute, Member: f.Member, Actor: f.Actor,
		Value: f.Value, Tombstone: f.Tombstone, ValidFrom: sgam.FormatTime(f.ValidFrom), RecordedAt: sgam.FormatTime(f.RecordedAt),
		Supersedes: f.Supersedes, SchemaVersion: f.SchemaVersion, Source: f.Source, Evidence: []evidenceLine{}}
	if f.Tombstone {
		l.Value = json.RawMessage("null")
	}
	if f.ValidTo != nil {
		s := sgam.FormatTime(*f.ValidTo)
		l.ValidTo = &s
	}
	if f.RetractedAt != nil {
		s := sgam.FormatTime(*f.RetractedAt)
		l.RetractedAt = &s
	}
	for _, e := range f.Evidence {
		l.Evidence = append(l.Evidence, evidenceLine{EpisodeID: e.EpisodeID, RecordedAt: sgam.FormatTime(e.RecordedAt)})
	}
	return l
}

// Record is one decoded line: an episode or a fact.
type Record struct {
	Line    int
	Schema  *sgam.SchemaVersion
	Episode *sgam.Episode
	Fact    *sgam.StoredFact
}

// Reader decodes an export line by line.
type Reader struct {
	sc         *bufio.Scanner
	line       int
	sawHeader  bool
	sawEpisode bool
	sawFact    bool
}

// NewReader returns a Reader of r. The first line must be the header.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), MaxLineBytes)
	return &Reader{sc: sc}
}

// LineError is a bad line: its number and the error, which names the field.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Next returns the next record, or io.EOF at the end.
func (r *Reader) Next() (Record, error) {
	for r.sc.Scan() {
		r.line++
		raw := bytes.TrimSpace(r.sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		rec, err := r.decode(raw)
		if err != nil {
			return Record{}, &LineError{Line: r.line, Err: err}
		}
		if rec.Schema == nil && rec.Episode == nil && rec.Fact == nil {
			continue // the header
		}
		rec.Line = r.line
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Record{}, &LineError{Line: r.line + 1, Err: sgam.Errorf(sgam.Invalid, "line", "is longer than %d bytes", MaxLineBytes)}
		}
		return Record{}, err
	}
	if !r.sawHeader {
		return Record{}, &LineError{Line: r.line, Err: sgam.Errorf(sgam.Invalid, "header", "the input is empty: an export starts with a header line")}
	}
	return Record{}, io.EOF
}

func (r *Reader) decode(raw []byte) (Record, error) {
	var probe struct {
		Type string `json:"type"`
	}
	// The line is strict JSON before its type is read (DecodeStrict
	// decodes it whole below, by its type).
	if err := sgam.CheckJSON("line", raw); err != nil {
		return Record{}, err
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Record{}, sgam.Errorf(sgam.Invalid, "line", "must be a JSON object")
	}
	if !r.sawHeader && probe.Type != "header" {
		return Record{}, sgam.Errorf(sgam.Invalid, "type", "the first line must be the header {\"type\":\"header\",\"format\":%q,...}", Format)
	}
	switch probe.Type {
	case "header":
		var h header
		if err := sgam.DecodeStrict("line", raw, &h); err != nil {
			return Record{}, err
		}
		if r.sawHeader {
			return Record{}, sgam.Errorf(sgam.Invalid, "type", "a second header")
		}
		if h.Format != Format {
			return Record{}, sgam.Errorf(sgam.Invalid, "format", "is %q, not %q", h.Format, Format)
		}
		if h.Version < 1 || h.Version > Version {
			return Record{}, sgam.Errorf(sgam.Invalid, "version", "is %d; this sgam reads versions 1 to %d", h.Version, Version)
		}
		r.sawHeader = true
		return Record{}, nil
	case "schema":
		if r.sawEpisode || r.sawFact {
			return Record{}, sgam.Errorf(sgam.Invalid, "type", "schemas must come before episodes and facts")
		}
		var l schemaLine
		if err := sgam.DecodeStrict("line", raw, &l); err != nil {
			return Record{}, err
		}
		v := sgam.SchemaVersion{Tenant: l.Tenant, StoreDefault: l.StoreDefault, Version: l.Version, Hash: l.Hash, Body: l.Schema}
		var err error
		if v.AppliedAt, err = sgam.ParseTime("applied_at", l.AppliedAt); err != nil {
			return Record{}, err
		}
		if len(v.Body) == 0 {
			return Record{}, sgam.Errorf(sgam.Invalid, "schema", "is required: the schema's canonical JSON")
		}
		return Record{Schema: &v}, nil
	case "episode":
		r.sawEpisode = true
		if r.sawFact {
			return Record{}, sgam.Errorf(sgam.Invalid, "type", "episodes must come before facts")
		}
		var l episodeLine
		if err := sgam.DecodeStrict("line", raw, &l); err != nil {
			return Record{}, err
		}
		e := sgam.Episode{Tenant: l.Tenant, ID: l.EpisodeID, Session: l.Session, Kind: l.Kind, Content: l.Content,
			Metadata: l.Metadata, IdempotencyKey: l.IdempotencyKey, Retention: l.Retention, Subjects: l.Subjects}
		var err error
		if e.OccurredAt, err = sgam.ParseTime("occurred_at", l.OccurredAt); err != nil {
			return Record{}, err
		}
		if e.RecordedAt, err = sgam.ParseTime("recorded_at", l.RecordedAt); err != nil {
			return Record{}, err
		}
		return Record{Episode: &e}, nil
	case "fact":
		r.sawFact = true
		var l factLine
		if err := sgam.DecodeStrict("line", raw, &l); err != nil {
			return Record{}, err
		}
		f, err := fromFactLine(l)
		if err != nil {
			return Record{}, err
		}
		return Record{Fact: &f}, nil
	case "":
		return Record{}, sgam.Errorf(sgam.Invalid, "type", "is required: header, schema, episode or fact")
	default:
		return Record{}, sgam.Errorf(sgam.Invalid, "type", "%q is not a record type: header, schema, episode or fact", probe.Type)
	}
}

func fromFactLine(l factLine) (sgam.StoredFact, error) {
	f := sgam.StoredFact{Fact: sgam.Fact{ID: l.FactID, Tenant: l.Tenant, Subject: l.Subject, Attribute: l.Attribute, Member: l.Member,
		Value: l.Value, Tombstone: l.Tombstone, Supersedes: l.Supersedes, SchemaVersion: l.SchemaVersion}, Source: l.Source, Actor: l.Actor}
	var err error
	if f.ValidFrom, err = sgam.ParseTime("valid_from", l.ValidFrom); err != nil {
		return f, err
	}
	if f.RecordedAt, err = sgam.ParseTime("recorded_at", l.RecordedAt); err != nil {
		return f, err
	}
	if l.ValidTo != nil {
		t, err := sgam.ParseTime("valid_to", *l.ValidTo)
		if err != nil {
			return f, err
		}
		f.ValidTo = &t
	}
	if l.RetractedAt != nil {
		t, err := sgam.ParseTime("retracted_at", *l.RetractedAt)
		if err != nil {
			return f, err
		}
		f.RetractedAt = &t
	}
	for i, e := range l.Evidence {
		at, err := sgam.ParseTime("recorded_at", e.RecordedAt)
		if err != nil {
			return f, sgam.PrefixField(fmt.Sprintf("evidence[%d]", i), err)
		}
		f.Evidence = append(f.Evidence, sgam.Evidence{EpisodeID: e.EpisodeID, RecordedAt: at})
	}
	return f, nil
}

// ImportOptions control Import.
type ImportOptions struct {
	// BatchRecords is the number of records per transaction; default 1,000.
	BatchRecords int
	// Committed is called after every committed batch with the running
	// totals and the last input line the batch covered: everything up to it
	// is durable.
	Committed func(total sgam.ImportStats, lastLine int)
}

// Import reads an export from r and restores it into store in batches.
// Every batch is one transaction; a failed batch writes nothing and stops
// the import, with the line at fault in the error. Rows already present and
// identical are skipped, so an interrupted import can simply be run again.
func Import(ctx context.Context, store sgam.Admin, r io.Reader, opts ImportOptions) (sgam.ImportStats, error) {
	if opts.BatchRecords <= 0 {
		opts.BatchRecords = 1000
	}
	var total sgam.ImportStats
	rd := NewReader(r)
	var batch sgam.ImportBatch
	var lines []int
	flush := func() error {
		if len(lines) == 0 {
			return nil
		}
		st, err := store.Import(ctx, batch)
		if err != nil {
			return batchError(err, batch, lines)
		}
		total.Episodes += st.Episodes
		total.Facts += st.Facts
		total.EpisodesPresent += st.EpisodesPresent
		total.FactsPresent += st.FactsPresent
		if opts.Committed != nil {
			opts.Committed(total, lines[len(lines)-1])
		}
		batch, lines = sgam.ImportBatch{}, lines[:0]
		return nil
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return total, err
		}
		if rec.Schema != nil {
			// Schemas come first, each in a transaction of its own, so
			// that the rows after them are checked under them.
			present, err := store.ImportSchema(ctx, *rec.Schema)
			if err != nil {
				return total, &LineError{Line: rec.Line, Err: err}
			}
			if present {
				total.SchemasPresent++
			} else {
				total.Schemas++
			}
			if opts.Committed != nil {
				opts.Committed(total, rec.Line)
			}
			continue
		}
		if rec.Episode != nil {
			batch.Episodes = append(batch.Episodes, *rec.Episode)
		} else {
			batch.Facts = append(batch.Facts, *rec.Fact)
		}
		lines = append(lines, rec.Line)
		if len(lines) >= opts.BatchRecords {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	return total, flush()
}

// batchError maps an error about "episodes[i]" or "facts[i]" of a batch to
// the input line it came from.
func batchError(err error, b sgam.ImportBatch, lines []int) error {
	field := sgam.ErrorField(err)
	var kind string
	var i int
	if n, _ := fmt.Sscanf(field, "episodes[%d]", &i); n == 1 {
		kind = "episodes"
	} else if n, _ := fmt.Sscanf(field, "facts[%d]", &i); n == 1 {
		kind = "facts"
		i += len(b.Episodes)
	}
	if kind == "" || i >= len(lines) {
		return err
	}
	rest := field[strings.Index(field, "]")+1:]
	rest = strings.TrimPrefix(rest, ".")
	var se *sgam.Error
	if errors.As(err, &se) {
		c := *se
		c.Field = rest
		return &LineError{Line: lines[i], Err: &c}
	}
	return &LineError{Line: lines[i], Err: err}
}
