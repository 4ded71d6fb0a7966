package sgam

import (
	"context"
	"encoding/json"
	"time"
)

// Extraction is the record of one extraction attempt of an episode: what
// the model was asked and answered, what of it became memory and what was
// rejected, and what it cost. It is stored with its episode and forgotten
// with it.
type Extraction struct {
	ID        string    `json:"extraction_id"`
	Tenant    string    `json:"tenant"`
	EpisodeID string    `json:"episode_id"`
	At        time.Time `json:"at"` // when it was recorded
	// Status is ExtractionDone, ExtractionRejected or ExtractionFailed.
	Status string `json:"status"`
	Model  string `json:"model"`
	Mode   string `json:"mode"`
	// SchemaVersion is the version of the tenant's schema the prompt was
	// built from (0: none).
	SchemaVersion int `json:"schema_version"`
	// PromptDigest identifies the prompt (model, mode, schema and text):
	// an identical prompt is answered from this record. ContentDigest
	// identifies the episode's content.
	PromptDigest  string `json:"prompt_digest"`
	ContentDigest string `json:"content_digest"`
	// ShownAt is the transaction time whose beliefs the prompt showed:
	// when the episode was first extracted, for every later attempt too,
	// so that an unchanged episode gets an unchanged prompt.
	ShownAt time.Time `json:"shown_at"`
	// ContextEpisodes are the other episodes whose content the prompt
	// showed (earlier turns of the session), and Subjects every subject
	// whose data the record holds (the subjects in play, shown with their
	// values, and those its candidates name). The record holds a copy of
	// what they said, so forgetting any of them deletes it too.
	ContextEpisodes []string `json:"context_episodes,omitempty"`
	Subjects        []string `json:"subjects,omitempty"`
	// ShownFacts are the ids of the fact rows whose values the prompt
	// showed: forgetting what deletes any of them (the episode that alone
	// supported it, its subject) deletes this record, which holds a copy
	// of the value.
	ShownFacts []int64 `json:"shown_facts,omitempty"`
	Prompt     string  `json:"prompt"`
	RawOutput  string  `json:"raw_output"`
	// RawOutputCut is set when the model's answer was longer than
	// MaxRecordText: RawOutput holds its beginning.
	RawOutputCut bool `json:"raw_output_cut,omitempty"`
	// Cached is set when the answer was not asked of the model but taken
	// from an earlier record of the same prompt (CachedFrom).
	Cached     bool   `json:"cached,omitempty"`
	CachedFrom string `json:"cached_from,omitempty"`

	Accepted []Accepted  `json:"accepted"`
	Rejected []Rejection `json:"rejected"`
	Warnings []string    `json:"warnings"`
	// Unchanged counts the updates the model marked no_change (dropped).
	Unchanged int `json:"unchanged"`
	// Facts are the ids of the fact rows the extraction wrote or
	// corroborated; Pending the candidates it left for review.
	Facts   []int64  `json:"facts"`
	Pending []string `json:"pending"`

	TokensIn  int           `json:"tokens_in"`
	TokensOut int           `json:"tokens_out"`
	Calls     int           `json:"calls"` // requests sent to the model, retries included
	Latency   time.Duration `json:"latency_ns"`
	Error     string        `json:"error,omitempty"`
	// GaveUp marks a failure after which no attempt follows (the last of
	// its job, or one that a retry cannot mend) until the episode is queued
	// again.
	GaveUp bool `json:"gave_up,omitempty"`
}

// Bounds of an extraction record: the texts a model answers are kept for
// inspection, not without limit.
const (
	MaxRecordText = 1 << 20 // bytes of the prompt, and of the raw output
	MaxRecordList = 1024    // candidates, rejections, warnings
)

// MaxTokenCount bounds a count of tokens a store keeps or sums: a
// record's and a day's sums saturate there instead of wrapping.
const MaxTokenCount = 1 << 50

// MaxHold bounds how long the immediate path may hold an episode's queue
// entry back from the workers (AddEpisodeToExtract).
const MaxHold = 24 * time.Hour

// Extraction statuses.
const (
	// ExtractionDone: the answer was used; some candidates may have been
	// rejected.
	ExtractionDone = "done"
	// ExtractionRejected: the model proposed updates and every one of them
	// was rejected.
	ExtractionRejected = "rejected"
	// ExtractionFailed: no usable answer (the model failed, or answered
	// something that is not the schema's JSON); nothing was written.
	ExtractionFailed = "failed"
)

// Accepted is a candidate that passed validation, and what the ledger
// made of it.
type Accepted struct {
	Index     int             `json:"index"` // its place in the model's updates
	Evidence  string          `json:"evidence"`
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Change    string          `json:"change"`          // new, update, retract, or no_change for a corroboration, as the model said
	Value     json.RawMessage `json:"value,omitempty"` // canonical JSON; none for a retraction
	ValidFrom time.Time       `json:"valid_from"`
	// Outcome is written, unchanged (an idempotent repeat: the row gained
	// the episode as evidence), kept (prefer_source kept a stronger
	// source's row), pending (held for review) or promoted.
	Outcome   string `json:"outcome"`
	FactID    int64  `json:"fact_id,omitempty"`
	PendingID string `json:"pending_id,omitempty"`
}

// Outcomes of an accepted candidate.
const (
	OutcomeWritten   = "written"
	OutcomeUnchanged = "unchanged"
	OutcomeKept      = "kept"
	OutcomePending   = "pending"
)

// Rejection is a candidate that did not become memory, and why.
type Rejection struct {
	Index int `json:"index"`
	// Update is the candidate as the model wrote it.
	Update json.RawMessage `json:"update"`
	// Reason is one of the Reject* codes; Field names the update's field
	// at fault, when one is.
	Reason  string `json:"reason"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// Why a candidate was rejected.
const (
	RejectUngrounded       = "ungrounded"         // the quote is not whole words of the episode, or does not state the value (docs/extraction.md)
	RejectUnknownAttribute = "unknown_attribute"  // not declared in the tenant's schema
	RejectInvalidValue     = "invalid_value"      // not of the attribute's declared type
	RejectInvalidSubject   = "invalid_subject"    // neither a subject shown to the model nor a new lowercase id
	RejectInvalidTime      = "invalid_valid_from" // not a time or date, before 1900, or too far after the episode
	RejectInvalidChange    = "invalid_change"     // change is none of new, update, no_change, retract
	RejectUnexpectedField  = "unexpected_field"   // a field the update may not have (tenant, source, ...)
	RejectMalformed        = "malformed"          // not an object, a field of the wrong JSON type, or missing
	RejectConflict         = "conflict"           // the ledger refused it (a different value at the same valid_from)
)

// ExtractionCommit is what an extraction writes in one transaction: the
// candidates, in order, and the record. The tenant and the source of every
// write are the record's, whatever the candidates say.
type ExtractionCommit struct {
	Record Extraction
	Writes []CandidateWrite
}

// CandidateWrite is one validated candidate to write: an assertion, or a
// retraction when Retract is set (At is ValidFrom; on a set, Value names
// the member).
type CandidateWrite struct {
	Accepted
	Retract bool
	Set     bool // the attribute is a set: Value is a member
}

// Extractions keeps the records of extraction attempts.
type Extractions interface {
	// CommitExtraction writes the candidates of x and its record in one
	// transaction, at one transaction time. A candidate the ledger refuses
	// (a conflict, a value the schema in force no longer takes) is moved to
	// the record's Rejected and nothing of it is written; the others are.
	// In the same transaction, a record that ends the episode's extraction
	// (usable, or gave up) clears its queue entry (but one that asks for
	// it again), and a failed one makes the entry due now: an entry held
	// for the immediate path goes only when its record is there. It
	// returns the record as stored, with outcomes and fact ids. NotFound
	// when the episode does not exist.
	CommitExtraction(ctx context.Context, x ExtractionCommit) (Extraction, error)
	// Extractions lists the records of an episode, oldest first (NotFound
	// when the tenant has no such episode).
	Extractions(ctx context.Context, tenant, episodeID string) ([]Extraction, error)
	// ExtractionByPrompt returns the latest usable record (not failed) of a
	// prompt digest in tenant, if any.
	ExtractionByPrompt(ctx context.Context, tenant, digest string) (Extraction, bool, error)
	// TokensSpent sums the model tokens of tenant's records since an
	// instant.
	TokensSpent(ctx context.Context, tenant string, since time.Time) (int, error)
}

// QueuedExtraction is an episode waiting in the store's extraction queue:
// recorded in the transaction that captured it (or asked for it again),
// so that no crash can lose it, until a queue's dispatcher hands it to the
// workers.
type QueuedExtraction struct {
	Tenant    string    `json:"tenant"`
	EpisodeID string    `json:"episode_id"`
	Again     bool      `json:"again,omitempty"` // extract even if extracted already
	QueuedAt  time.Time `json:"queued_at"`
	// DueAt is when the dispatcher may hand it to the workers: QueuedAt,
	// or later for an episode the immediate path is extracting (held).
	DueAt time.Time `json:"due_at"`
}

// Budget is a tenant's token budget: what extraction may spend per UTC
// day (0: no limit), and what it spent today.
type Budget struct {
	Tenant       string `json:"tenant"`
	TokensPerDay int    `json:"tokens_per_day"` // 0: unlimited
	SpentToday   int    `json:"spent_today"`
	// ResetsAt is the next UTC midnight, when SpentToday starts over.
	ResetsAt time.Time `json:"resets_at"`
}

// Exhausted reports whether the budget has nothing left today.
func (b Budget) Exhausted() bool { return b.TokensPerDay > 0 && b.SpentToday >= b.TokensPerDay }

// ExtractionQueue is a tenant's side of the extraction queue, and its
// token budget.
type ExtractionQueue interface {
	// AddEpisodeToExtract captures e as AddEpisode does and, in the same
	// transaction, queues it for extraction; an identical episode captured
	// before is queued again only when it has no usable extraction record.
	// queued reports whether it was queued. hold > 0 is the immediate
	// path's: the caller extracts the episode now, and the entry is due to
	// the workers only after hold (at most MaxHold), in case the caller
	// dies first; the record's commit clears it (CommitExtraction).
	AddEpisodeToExtract(ctx context.Context, e Episode, hold time.Duration) (out Episode, queued bool, err error)
	// QueueExtraction queues stored episodes of tenant for extraction,
	// due now (an entry held for the immediate path is given back to the
	// workers); again: even those extracted already (their unchanged
	// prompts are answered from their records). NotFound names an unknown
	// episode, and then none is queued.
	QueueExtraction(ctx context.Context, tenant string, episodeIDs []string, again bool) error
	// Budget returns a tenant's budget and what it spent today.
	Budget(ctx context.Context, tenant string) (Budget, error)
}

// ExtractionDispatch is the extraction queue's store-wide side: a queue's
// dispatcher takes every tenant's entries from it and hands them to the
// workers. It is for a worker process, never for a tenant's caller.
type ExtractionDispatch interface {
	// QueuedExtractions lists up to limit queued episodes of every tenant,
	// the earliest due first. dueOnly: only those due now.
	QueuedExtractions(ctx context.Context, limit int, dueOnly bool) ([]QueuedExtraction, error)
	// DequeueExtractions removes dispatched entries, each only if it is
	// still as listed (an episode queued again meanwhile stays).
	DequeueExtractions(ctx context.Context, q []QueuedExtraction) error
}
