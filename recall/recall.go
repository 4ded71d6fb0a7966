// Package recall is sgam's read path (DESIGN 4): a question in, the
// smallest cited context out. Exact state comes first, from the ledger's
// indexes, at the instants the question asks about; episodes found by
// full-text search, and facts reached through ref attributes, follow as
// cited support. Everything is read within the caller's tenant, and the
// rendered block never exceeds the caller's token budget. A superseded
// value is never presented as current: it appears only when the question
// asks about the past, marked past.
package recall

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/recall/when"
	"github.com/sgam-dev/sgam/schema"
)

// Store is what recall reads.
type Store interface {
	sgam.FactReader
	sgam.Episodes
	sgam.Schemas
	sgam.Search
	Extractions(ctx context.Context, tenant, episodeID string) ([]sgam.Extraction, error)
}

// Bounds and defaults of a Query.
const (
	DefaultBudget   = 800
	MinBudget       = 64
	MaxBudget       = 100_000
	DefaultEvidence = 5
	MaxEvidence     = 100
	DefaultHops     = 1
	MaxHops         = 3
	// None, as EvidenceLimit or Hops, turns evidence or graph expansion off.
	None = -1
	// MaxSubjects bounds the subjects in play (and those given).
	MaxSubjects = 8
	// MaxRelated bounds the subjects reached through ref attributes.
	MaxRelated = 8
	// MaxAttributes bounds the attributes given.
	MaxAttributes = 32
)

// Query is a question to recall.
type Query struct {
	Tenant   string
	Question string
	// Subjects, when set, are the subjects the question is about, instead
	// of those found in it. Attributes narrows the facts to these (old
	// names resolve through the schema's aliases).
	Subjects   []string
	Attributes []string
	// AsOf and KnownAt, when set, win over what the question says.
	AsOf, KnownAt time.Time
	// TokenBudget bounds the rendered block, counted by Tokens (default
	// DefaultBudget).
	TokenBudget int
	// Evidence says which evidence is cited: EvidenceAuto (the default),
	// EvidenceAlways or EvidenceNone.
	Evidence string
	// EvidenceLimit is the most episodes cited as evidence (default
	// DefaultEvidence; None: no search). Under EvidenceAlways exactly
	// that many are cited when the search finds them.
	EvidenceLimit int
	// Hops is how deep ref attributes are followed (default DefaultHops;
	// None: not at all).
	Hops int
	// Session, when set, is the conversation the question comes from: the
	// subjects of its latest episodes' facts are in play too.
	Session string
}

// Context is what recall answers: the instants it read at and why, the
// facts, the evidence and the related facts it cites, and the rendered
// block (a prompt-ready text of exactly those).
type Context struct {
	Question string    `json:"question"`
	AsOf     time.Time `json:"as_of"`
	KnownAt  time.Time `json:"known_at"`
	// Instants says where each instant came from: "given", "now", "the
	// question: \"on June 2, 2026\"", ...
	Instants Instants `json:"instants"`
	// Subjects are the subjects in play; Attributes those the question
	// names (empty: every attribute of the subjects).
	Subjects   []string `json:"subjects"`
	Attributes []string `json:"attributes"`
	Facts      []Fact   `json:"facts"`
	// Absent are the asked keys without a value at the instants, shown
	// as the block's "none" lines: what ended each value, or nothing when
	// none was ever believed.
	Absent   []Absent   `json:"absent"`
	Evidence []Evidence `json:"evidence"`
	Related  []Fact     `json:"related"`
	Rendered string     `json:"rendered"`
	Tokens   int        `json:"tokens"`
	Budget   int        `json:"budget"`
	// Omitted counts what was found but left out to keep to the budget.
	Omitted Omitted `json:"omitted"`
	// Search says how evidence was found: "lexical", or "lexical+vector
	// (MODEL)"; empty when nothing was searched: no evidence was asked
	// for, or (evidence auto) the facts answer the question, each line
	// quoting its source, so that no episode would be cited.
	Search string `json:"search,omitempty"`
	// Warnings say what recall could not do and did without (the
	// embedding endpoint failing: lexical evidence only).
	Warnings []string `json:"warnings,omitempty"`
}

// Absent is a key the question asks about that has no value at the
// read's instants. Ended is the row whose end left it without one (a
// tombstone: revoked; or a value whose validity ran out), with the quote
// of its source; nil when no value of the key was ever believed by
// known_at.
type Absent struct {
	Subject   string `json:"subject"`
	Attribute string `json:"attribute"`
	Ended     *Fact  `json:"ended"`
}

// Instants says why recall read at the instants it did.
type Instants struct {
	AsOf    string `json:"as_of"`
	KnownAt string `json:"known_at"`
}

// Fact statuses.
const (
	// Current: the value at the instants used (as_of, as believed at
	// known_at); not necessarily the value now when as_of is past.
	Current = "current"
	// Past: a value that held before as_of and was superseded by then.
	Past = "past"
)

// Fact is a fact row in a context, with its status and the quote of its
// source that supports it. Via, on a related fact, is the id of the ref
// fact that led to its subject.
type Fact struct {
	sgam.Fact
	Status string `json:"status"`
	Quote  string `json:"quote,omitempty"`
	Via    int64  `json:"via,omitempty"`
}

// Evidence is an episode cited as support.
type Evidence struct {
	EpisodeID  string    `json:"episode_id"`
	Session    string    `json:"session"`
	OccurredAt time.Time `json:"occurred_at"`
	Score      float64   `json:"score"`
	Snippet    string    `json:"snippet"`
	// Superseded are its statements on the keys the answer is about that
	// are no longer current at the read's instants, each with what ended
	// it: an episode that says what is no longer so says so.
	Superseded []Superseded `json:"superseded,omitempty"`
}

// Omitted counts what the budget left out.
type Omitted struct {
	Facts    int `json:"facts"`
	Related  int `json:"related"`
	Evidence int `json:"evidence"`
}

// Recaller answers questions from a store.
type Recaller struct {
	store Store
	clock sgam.Clock
	// embed, when set with vectors, embeds questions, whose nearest
	// episodes (by the vectors kept for embed's model) are fused with the
	// lexical ranking.
	embed   llm.Embedder
	vectors sgam.VectorSearch

	schemas schema.Cache // parsed schema bodies
	turns   *turns       // WithConcurrency's; nil: no bound
}

// New returns a Recaller over store, on the system clock.
func New(store Store) *Recaller {
	return &Recaller{store: store, clock: sgam.SystemClock{}}
}

// WithEmbedder makes recall search episodes by vector too: the question
// is embedded by e, and the episodes whose vectors in vectors (of e's
// model, written by the queue's embedding job) are nearest to it are
// fused with the lexical ranking (fuse: the lexical score plus 0.7 times
// the relative similarity, weights.vector). Without it (or with a nil e or vectors) recall is
// lexical.
func (r *Recaller) WithEmbedder(e llm.Embedder, vectors sgam.VectorSearch) *Recaller {
	r.embed, r.vectors = e, vectors
	if e == nil || vectors == nil {
		r.embed, r.vectors = nil, nil
	}
	return r
}

// WithClock sets the clock that "now" and relative phrases are read by.
func (r *Recaller) WithClock(c sgam.Clock) *Recaller {
	r.clock = c
	return r
}

// check validates q and fills in its defaults.
func (q Query) check() (Query, error) {
	if err := sgam.CheckTenant(q.Tenant); err != nil {
		return q, err
	}
	switch {
	case len(q.Question) > sgam.MaxQuestionBytes:
		return q, sgam.Errorf(sgam.Invalid, "question", "is %d bytes; at most %d", len(q.Question), sgam.MaxQuestionBytes)
	case !utf8.ValidString(q.Question):
		return q, sgam.Errorf(sgam.Invalid, "question", "is not valid UTF-8")
	case strings.TrimSpace(q.Question) == "" && len(q.Subjects) == 0:
		return q, sgam.Errorf(sgam.Invalid, "question", "is required (or name the subjects)")
	}
	// The question is echoed in the rendered block: a control character
	// would reach the model's prompt or a terminal as it is.
	if i := strings.IndexFunc(q.Question, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(q.Question[i:])
		return q, sgam.Errorf(sgam.Invalid, "question", "holds the control character %U at byte %d", r, i)
	}
	if len(q.Subjects) > MaxSubjects {
		return q, sgam.Errorf(sgam.Invalid, "subjects", "names %d subjects; at most %d", len(q.Subjects), MaxSubjects)
	}
	for i, s := range q.Subjects {
		if err := sgam.CheckSubject(s); err != nil {
			return q, renamed(err, fmt.Sprintf("subjects[%d]", i))
		}
	}
	if len(q.Attributes) > MaxAttributes {
		return q, sgam.Errorf(sgam.Invalid, "attributes", "names %d attributes; at most %d", len(q.Attributes), MaxAttributes)
	}
	for i, a := range q.Attributes {
		if err := sgam.CheckAttribute(a); err != nil {
			return q, renamed(err, fmt.Sprintf("attributes[%d]", i))
		}
	}
	var err error
	if !q.AsOf.IsZero() {
		if q.AsOf, err = sgam.CheckTime("as_of", q.AsOf); err != nil {
			return q, err
		}
	}
	if !q.KnownAt.IsZero() {
		if q.KnownAt, err = sgam.CheckTime("known_at", q.KnownAt); err != nil {
			return q, err
		}
	}
	switch {
	case q.TokenBudget == 0:
		q.TokenBudget = DefaultBudget
	case q.TokenBudget < MinBudget || q.TokenBudget > MaxBudget:
		return q, sgam.Errorf(sgam.Invalid, "budget", "must be between %d and %d tokens, not %d", MinBudget, MaxBudget, q.TokenBudget)
	}
	switch q.Evidence {
	case "":
		q.Evidence = EvidenceAuto
	case EvidenceAuto, EvidenceAlways:
	case EvidenceNone:
		if q.EvidenceLimit > 0 {
			return q, sgam.Errorf(sgam.Invalid, "evidence_limit", "is %d, but evidence is %q", q.EvidenceLimit, EvidenceNone)
		}
		q.EvidenceLimit = None
	default:
		return q, sgam.Errorf(sgam.Invalid, "evidence", "must be %q, %q or %q, not %q", EvidenceAuto, EvidenceAlways, EvidenceNone, q.Evidence)
	}
	switch {
	case q.EvidenceLimit == 0:
		q.EvidenceLimit = DefaultEvidence
	case q.EvidenceLimit != None && (q.EvidenceLimit < 1 || q.EvidenceLimit > MaxEvidence):
		return q, sgam.Errorf(sgam.Invalid, "evidence_limit", "must be between 1 and %d, or %d for none; not %d", MaxEvidence, None, q.EvidenceLimit)
	}
	switch {
	case q.Hops == 0:
		q.Hops = DefaultHops
	case q.Hops != None && (q.Hops < 1 || q.Hops > MaxHops):
		return q, sgam.Errorf(sgam.Invalid, "hops", "must be between 1 and %d, or %d for none; not %d", MaxHops, None, q.Hops)
	}
	if q.Session != "" {
		if err := sgam.CheckSession(q.Session); err != nil {
			return q, err
		}
	}
	return q, nil
}

// renamed gives an *sgam.Error the field it has in the query.
func renamed(err error, field string) error {
	if e, ok := err.(*sgam.Error); ok {
		c := *e
		c.Field = field
		return &c
	}
	return err
}

// Recall answers q in three steps: gather does every store read, and
// ranks what it read as the next read needs; render, pure, writes the
// context within the budget.
func (r *Recaller) Recall(ctx context.Context, q Query) (*Context, error) {
	q, err := q.check()
	if err != nil {
		return nil, err
	}
	t := &turn{set: r.turns}
	if err := t.take(ctx); err != nil {
		return nil, err
	}
	defer t.give()
	out := &Context{Question: q.Question, Budget: q.TokenBudget, Subjects: []string{}, Attributes: []string{},
		Facts: []Fact{}, Absent: []Absent{}, Evidence: []Evidence{}, Related: []Fact{}}
	a, err := newGather(r, ctx, q, out, t).read(r.clock.Now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return nil, err
	}
	if err := render(out, a); err != nil {
		return nil, err
	}
	return out, nil
}

// instants fixes the instants of the read: given ones win, then what the
// question says, then now. A question about what was believed at K (and
// nothing about valid time) reads the state as of K as believed at K.
func instants(out *Context, q Query, found when.Found, sc *tenantSchema, now time.Time) {
	out.KnownAt, out.Instants.KnownAt = now, "now"
	moved := true // known_at is not now
	switch {
	case !q.KnownAt.IsZero():
		out.KnownAt, out.Instants.KnownAt = q.KnownAt, "given"
	case !found.KnownAt.IsZero():
		out.KnownAt, out.Instants.KnownAt = found.KnownAt, fmt.Sprintf("the question: %q", found.KnownAtWhy)
	case found.BeforeMigration:
		if m := sc.migratedAt; !m.IsZero() {
			out.KnownAt = m.Add(-time.Microsecond)
			out.Instants.KnownAt = fmt.Sprintf("the question: %q (schema version %d, with migrations, was applied at %s)", found.KnownAtWhy, sc.version, m.Format(time.RFC3339Nano))
		} else {
			out.Instants.KnownAt = fmt.Sprintf("now (the question says %q, but the tenant's schema has no migration)", found.KnownAtWhy)
			moved = false
		}
	default:
		moved = false
	}
	out.AsOf, out.Instants.AsOf = now, "now"
	switch {
	case !q.AsOf.IsZero():
		out.AsOf, out.Instants.AsOf = q.AsOf, "given"
	case !found.AsOf.IsZero():
		out.AsOf, out.Instants.AsOf = found.AsOf, fmt.Sprintf("the question: %q", found.AsOfWhy)
	case moved:
		out.AsOf, out.Instants.AsOf = out.KnownAt, "known_at (what was believed then about then)"
	}
}
