package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/queue"
)

// line is one line of a JSONL file of episodes.
type line struct {
	Tenant         string          `json:"tenant"`
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     string          `json:"occurred_at"`
	Subjects       []string        `json:"subjects"`
	Metadata       json.RawMessage `json:"metadata"`
	Retention      string          `json:"retention"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// MaxLineBytes bounds one line of a JSONL file of episodes: an episode's
// content and metadata with room for the rest.
const MaxLineBytes = sgam.DefaultMaxContentBytes + sgam.DefaultMaxMetadataBytes + 64<<10

// ParseLine checks and decodes one line of a JSONL file of episodes,
// naming the field at fault; tenant fills a line that names none. A line
// with neither an episode_id nor an idempotency_key gets Key("ingest",
// its text): reading the file again captures nothing new.
func ParseLine(raw []byte, tenant string) (sgam.Episode, error) {
	var l line
	if err := sgam.DecodeStrict("line", raw, &l); err != nil {
		return sgam.Episode{}, err
	}
	if l.Tenant == "" {
		l.Tenant = tenant
	}
	e := sgam.Episode{Tenant: l.Tenant, ID: l.EpisodeID, Session: l.Session, Kind: l.Kind, Content: l.Content, Subjects: l.Subjects,
		Metadata: l.Metadata, Retention: l.Retention, IdempotencyKey: l.IdempotencyKey}
	if l.OccurredAt != "" {
		t, err := sgam.ParseTime("occurred_at", l.OccurredAt)
		if err != nil {
			return e, err
		}
		e.OccurredAt = t
	}
	if e.ID == "" && e.IdempotencyKey == "" {
		e.IdempotencyKey = Key("ingest", string(bytes.TrimSpace(raw)))
	}
	return e, nil
}

// Lines is what capturing a file of episodes did.
type Lines struct {
	// Refs are the episodes queued for extraction.
	Refs []queue.Ref
	// Captured counts the episodes captured, Repeats those of them that
	// were there already (recorded before the capture began, by the
	// store's clock).
	Captured, Repeats int
	// Bad are the lines refused, each error naming the line ("line 3")
	// and the field.
	Bad []error
	// Since is an instant before the capture began: the records of the
	// extractions it queued are later (for Wait).
	Since time.Time
}

// CaptureLines captures every good line of r, one JSON object an
// episode, in mode (none or background); tenant fills a line that names
// none. A bad line is refused with its error in Bad, and the others go
// in. The error is the store's, when it failed (the lines before are
// captured).
func (in *Ingester) CaptureLines(ctx context.Context, r io.Reader, tenant string, mode Mode) (Lines, error) {
	start := time.Now()
	// A millisecond of slack for Wait: a record committed in the same
	// instant as the capture began still counts.
	out := Lines{Since: start.Add(-time.Millisecond)}
	if mode == ModeNow {
		return out, sgam.Errorf(sgam.Invalid, "extract", `a file is captured with "background" or "none", not "now"`)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		raw, rerr := readLine(br, MaxLineBytes)
		if rerr == io.EOF && len(raw) == 0 {
			return out, nil
		}
		if rerr != nil && rerr != io.EOF {
			if errors.Is(rerr, errLineTooLong) {
				out.Bad = append(out.Bad, sgam.Errorf(sgam.Invalid, fmt.Sprintf("line %d", n), "is longer than %d bytes", MaxLineBytes))
				continue
			}
			return out, rerr
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		res, err := func() (Result, error) {
			e, err := ParseLine(raw, tenant)
			if err != nil {
				return Result{}, err
			}
			return in.Capture(ctx, e, mode)
		}()
		if err != nil {
			if c := sgam.ErrorCode(err); c != sgam.Invalid && c != sgam.Conflict {
				return out, fmt.Errorf("line %d: %w", n, err)
			}
			name := fmt.Sprintf("line %d", n)
			if sgam.ErrorField(err) == "line" { // the line as a whole (not JSON)
				out.Bad = append(out.Bad, sgam.RenameField(err, "line", name))
			} else {
				out.Bad = append(out.Bad, sgam.PrefixField(name, err))
			}
			continue
		}
		out.Captured++
		if res.Episode.RecordedAt.Before(start) {
			out.Repeats++
		}
		if res.Queued {
			out.Refs = append(out.Refs, queue.Ref{Tenant: res.Episode.Tenant, EpisodeID: res.Episode.ID})
		}
		if rerr == io.EOF {
			return out, nil
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most limit bytes (without its newline);
// a longer one is skipped whole and errLineTooLong returned.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}
