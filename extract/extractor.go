package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/words"
)

// Store is what an Extractor reads and writes.
type Store interface {
	sgam.Episodes
	sgam.FactReader
	sgam.Schemas
	sgam.Extractions
	// Budget is the tenant's token budget, checked before every call.
	Budget(ctx context.Context, tenant string) (sgam.Budget, error)
}

// ErrNoModel is the error of an extraction when no model is configured:
// Unavailable, and not mended by trying again.
var ErrNoModel error = noModelError{}

type noModelError struct{}

func (noModelError) Error() string {
	return "no model is configured: extraction needs one (see docs/extraction.md)"
}
func (noModelError) ErrorCode() sgam.Code { return sgam.Unavailable }
func (noModelError) Retryable() bool      { return false }

// Extractor extracts episodes: one model call per episode at most, none
// when the episode was extracted already or the same prompt was answered
// before. It is safe for concurrent use.
type Extractor struct {
	store Store
	model llm.Model  // nil: none configured
	clock sgam.Clock // the instant a first prompt shows beliefs at

	schemas schema.Cache // parsed schema bodies
}

// New returns an Extractor over store asking model (nil: no model; Extract
// then fails with ErrNoModel, and DryRun still builds the prompt).
func New(store Store, model llm.Model) *Extractor {
	return &Extractor{store: store, model: model, clock: sgam.SystemClock{}}
}

// WithClock sets the clock whose now a first extraction's prompt shows
// the stored beliefs at: the store's (default the system clock).
func (x *Extractor) WithClock(c sgam.Clock) *Extractor {
	x.clock = c
	return x
}

// Model returns the model asked, nil when none is configured.
func (x *Extractor) Model() llm.Model { return x.model }

// Options adjust one extraction.
type Options struct {
	// DryRun builds the prompt, asks the model and validates its answer,
	// and writes nothing (no facts, no record).
	DryRun bool
	// Again extracts an episode that was extracted already (re-extraction,
	// after a schema change say). A prompt identical to one answered
	// before is still answered from its record, at no token cost.
	Again bool
	// LastAttempt marks the attempt after which no other will be made: a
	// failure's record says the extraction gave up.
	LastAttempt bool
}

// BudgetError refuses a model call: the tenant's token budget for today is
// spent. Nothing is recorded; the extraction can run once the budget
// resets or is raised. It is Unavailable, retryable, and asks to wait
// until the budget resets.
type BudgetError struct{ Budget sgam.Budget }

func (e *BudgetError) Error() string {
	return fmt.Sprintf("tenant %s has spent its token budget for today (%d of %d tokens); it resets at %s, unless the operator raises it first",
		e.Budget.Tenant, e.Budget.SpentToday, e.Budget.TokensPerDay, sgam.FormatTime(e.Budget.ResetsAt))
}

func (e *BudgetError) ErrorCode() sgam.Code { return sgam.Unavailable }
func (e *BudgetError) Retryable() bool      { return true }

// RetryDelay is the time left until the budget resets.
func (e *BudgetError) RetryDelay() time.Duration { return time.Until(e.Budget.ResetsAt) }

// AnswerError is a model's answer that is not the schema's JSON:
// Unavailable, and retryable (the model may answer better).
type AnswerError struct{ Reason string }

func (e *AnswerError) Error() string        { return "the model's answer is unusable: " + e.Reason }
func (e *AnswerError) ErrorCode() sgam.Code { return sgam.Unavailable }
func (e *AnswerError) Retryable() bool      { return true }

// Result is the outcome of Extract.
type Result struct {
	// Record is the attempt's record, as stored (DryRun: as it would be).
	Record sgam.Extraction
	// Skipped is set when the episode had been extracted from the same
	// content already: Record is that earlier record, and nothing was
	// asked or written.
	Skipped bool
	Prompt  Prompt
}

// Extract extracts one episode of tenant. It returns an error when the
// attempt failed (the model did not answer, or answered something that is
// not the schema's JSON): the record of the failure is stored (but for a
// DryRun), nothing else is written, and the caller may try again later;
// errors.As finds an *llm.Error for a model failure.
func (x *Extractor) Extract(ctx context.Context, tenant, episodeID string, opts Options) (Result, error) {
	var res Result
	ep, err := x.store.Episode(ctx, tenant, episodeID)
	if err != nil {
		return res, err
	}
	if ep.Kind == sgam.KindUnknown && ep.Content == "" {
		return res, sgam.Errorf(sgam.Invalid, "episode_id", "episode %s is a placeholder that was never captured: there is nothing to extract", episodeID)
	}
	contentDigest := ContentDigest(ep)
	recs, err := x.store.Extractions(ctx, ep.Tenant, ep.ID)
	if err != nil {
		return res, err
	}
	if !opts.Again && !opts.DryRun {
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].ContentDigest == contentDigest && recs[i].Status != sgam.ExtractionFailed {
				return Result{Record: recs[i], Skipped: true}, nil
			}
		}
	}
	knownAt := x.shownAt(recs)
	in, err := x.input(ctx, ep, knownAt)
	if err != nil {
		return res, err
	}
	res.Prompt = Build(in)
	if x.model == nil {
		if opts.DryRun {
			return res, nil
		}
		return res, ErrNoModel
	}
	rec := sgam.Extraction{Tenant: tenant, EpisodeID: ep.ID, Model: x.model.Name(), Mode: string(x.model.Mode()),
		SchemaVersion: in.Version, ContentDigest: contentDigest, Prompt: res.Prompt.Text(), ShownAt: knownAt}
	rec.PromptDigest = res.Prompt.Digest(rec.Model, rec.Mode)
	for _, r := range in.Recent {
		rec.ContextEpisodes = append(rec.ContextEpisodes, r.ID)
	}
	for _, sub := range in.Subjects {
		rec.Subjects = append(rec.Subjects, sub.ID)
		for _, f := range sub.Facts {
			rec.ShownFacts = append(rec.ShownFacts, f.ID)
		}
	}
	if len(ep.Content) > MaxEpisodeChars {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the episode is %d bytes; the model was shown the first %d", len(ep.Content), MaxEpisodeChars))
	}

	// An identical prompt answered before is answered from its record.
	answer := ""
	if prev, ok, err := x.store.ExtractionByPrompt(ctx, tenant, rec.PromptDigest); err != nil {
		return res, err
	} else if ok {
		answer, rec.Cached, rec.CachedFrom, rec.RawOutput = llm.Clean(prev.RawOutput), true, prev.ID, prev.RawOutput
	} else {
		// Every path that asks the model keeps to the tenant's budget.
		b, err := x.store.Budget(ctx, tenant)
		if err != nil {
			return res, err
		}
		if b.Exhausted() {
			return res, &BudgetError{Budget: b}
		}
		start := time.Now()
		resp, err := x.model.Complete(ctx, llm.Request{System: res.Prompt.System, User: res.Prompt.User, SchemaName: SchemaName, Schema: res.Prompt.Schema})
		rec.Latency = time.Since(start)
		rec.TokensIn, rec.TokensOut, rec.Calls = resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Attempts
		if resp.Usage.Estimated {
			rec.Warnings = append(rec.Warnings, "the model server's token count was missing or more than it could have spent: sgam's estimate is counted")
		}
		rec.RawOutput, rec.RawOutputCut = resp.Raw, resp.RawCut
		if err != nil {
			rec.Error = err.Error()
			return x.fail(ctx, res, rec, opts, err)
		}
		answer = resp.JSON
	}

	out, err := Decode(in, answer)
	if err != nil {
		ae := &AnswerError{Reason: err.Error()}
		rec.Error = ae.Error()
		return x.fail(ctx, res, rec, opts, ae)
	}
	rec.Rejected, rec.Unchanged = out.Rejected, out.Unchanged
	rec.Subjects = candidateSubjects(rec.Subjects, out)
	rec.Warnings = append(rec.Warnings, out.Warnings...)
	if opts.DryRun {
		for _, w := range out.Writes {
			rec.Accepted = append(rec.Accepted, w.Accepted)
		}
		res.Record = rec
		return res, nil
	}
	stored, err := x.commit(ctx, sgam.ExtractionCommit{Record: rec, Writes: out.Writes})
	if err != nil {
		return res, err
	}
	res.Record = stored
	return res, nil
}

// commitTimeout bounds the commit of an attempt's record.
const commitTimeout = time.Minute

// commit commits an attempt whose answer is in hand (or whose failure is
// known) under a deadline of its own: a deadline of the attempt's that
// passed during the model call must not lose what the call cost.
func (x *Extractor) commit(ctx context.Context, c sgam.ExtractionCommit) (sgam.Extraction, error) {
	c.Record = keepable(c.Record)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	return x.store.CommitExtraction(cctx, c)
}

// keepable cuts a record's texts to what a record keeps, and marks them
// so: an answer too long to keep is still recorded, with what it cost.
func keepable(rec sgam.Extraction) sgam.Extraction {
	if n := len(rec.RawOutput); n > sgam.MaxRecordText {
		rec.RawOutput, rec.RawOutputCut = llm.CutText(rec.RawOutput, sgam.MaxRecordText), true
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the model's answer is %d bytes; the record keeps the first %d", n, len(rec.RawOutput)))
	}
	if n := len(rec.Prompt); n > sgam.MaxRecordText {
		rec.Prompt = llm.CutText(rec.Prompt, sgam.MaxRecordText)
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the prompt is %d bytes; the record keeps the first %d", n, len(rec.Prompt)))
	}
	if len(rec.Warnings) > sgam.MaxRecordList {
		rec.Warnings = rec.Warnings[:sgam.MaxRecordList]
	}
	return rec
}

// fail stores the record of a failed attempt (but for a dry run) and
// returns cause. An attempt whose context was cancelled (a shutdown, an
// interrupt) is no failure to record: it is given back, losing nothing;
// one whose deadline passed (a job's timeout, the immediate path's) is a
// failed attempt like any other, with what it cost.
func (x *Extractor) fail(ctx context.Context, res Result, rec sgam.Extraction, opts Options, cause error) (Result, error) {
	rec.GaveUp = opts.LastAttempt || !sgam.Retryable(cause)
	res.Record = rec
	if opts.DryRun || errors.Is(ctx.Err(), context.Canceled) {
		return res, cause
	}
	stored, err := x.commit(ctx, sgam.ExtractionCommit{Record: rec})
	if err != nil {
		return res, errors.Join(cause, err)
	}
	res.Record = stored
	return res, cause
}

// shownAt is the instant whose beliefs a prompt shows: the one the
// episode's first usable extraction showed, so that extracting it again
// shows the model what it was shown the first time (not the values that
// extraction, or others since, wrote) and an unchanged prompt is answered
// from its record; now for a first extraction.
func (x *Extractor) shownAt(recs []sgam.Extraction) time.Time {
	for _, r := range recs {
		if r.Status != sgam.ExtractionFailed && !r.ShownAt.IsZero() {
			return r.ShownAt
		}
	}
	// A microsecond back: a write committed in the same instant as the
	// read (a coarse or manual clock) is not shown, now or later.
	return x.clock.Now().UTC().Truncate(time.Microsecond).Add(-time.Microsecond)
}

// input gathers what the prompt of ep shows: the tenant's schema, the
// subjects in play with their values at occurred_at as believed at
// knownAt, and the session's latest episodes before it captured by then. Every read is
// bounded, so the prompt does not grow with the store.
func (x *Extractor) input(ctx context.Context, ep sgam.Episode, knownAt time.Time) (Input, error) {
	in := Input{Episode: ep}
	sv, err := x.store.Schema(ctx, ep.Tenant)
	if err != nil {
		return in, err
	}
	if sv.Version > 0 {
		if in.Schema, err = x.schemas.Parsed(sv); err != nil {
			return in, err
		}
		in.Version = sv.Version
	}
	if ep.Session != "" {
		recent, err := x.store.Episodes(ctx, sgam.EpisodeQuery{Tenant: ep.Tenant, Session: ep.Session, Before: ep.OccurredAt, Latest: true, Limit: 4 * MaxRecent})
		if err != nil {
			return in, err
		}
		// Only what was there at knownAt (episodes captured later were not
		// shown to the first extraction), the latest MaxRecent, oldest first.
		var shown []sgam.Episode
		for i := len(recent) - 1; i >= 0 && len(shown) < MaxRecent; i-- {
			if r := recent[i]; r.ID != ep.ID && !r.RecordedAt.After(knownAt) {
				shown = append(shown, r)
			}
		}
		slices.Reverse(shown)
		in.Recent = shown
	}
	cands, err := x.subjectsInPlay(ctx, ep, in.Recent, knownAt)
	if err != nil {
		return in, err
	}
	for i, c := range cands {
		// Bounded reads: a text may name many known subjects that had no
		// value at the instant.
		if len(in.Subjects) == MaxSubjects || i == 4*MaxSubjects {
			break
		}
		facts, err := x.store.State(ctx, ep.Tenant, c.id, sgam.At{AsOf: ep.OccurredAt, KnownAt: knownAt})
		if err != nil {
			return in, err
		}
		// A subject the text names counts when it had values then: one
		// the episode itself introduced was not known to its first
		// extraction, and is not shown to a later one either.
		if len(facts) == 0 && c.named {
			continue
		}
		in.Subjects = append(in.Subjects, Subject{ID: c.id, Facts: facts})
	}
	return in, nil
}

// candidate is a subject that may be in play; named: found in the text.
type candidate struct {
	id    string
	named bool
}

// subjectsInPlay are, in order: the episode's subjects hint, known
// subjects its text names by id, then by one of their names, and the
// subjects of the facts the session's recent episodes are the source of,
// as believed at knownAt.
func (x *Extractor) subjectsInPlay(ctx context.Context, ep sgam.Episode, recent []sgam.Episode, knownAt time.Time) ([]candidate, error) {
	var out []candidate
	seen := map[string]bool{}
	add := func(id string, named bool) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, candidate{id, named})
		}
	}
	for _, s := range ep.Subjects {
		add(s, false)
	}
	known, err := x.store.Subjects(ctx, ep.Tenant, words.Candidates(ep.Content, sgam.MaxSubjectsLookup))
	if err != nil {
		return nil, err
	}
	for _, s := range known {
		add(s, true)
	}
	// Subjects the text calls by one of their names (alias): known ones,
	// shown even when they had no value at the instant.
	byName, err := x.store.SubjectsNamed(ctx, ep.Tenant, words.Names(ep.Content, sgam.MaxNamesLookup), sgam.At{AsOf: ep.OccurredAt, KnownAt: knownAt})
	if err != nil {
		return nil, err
	}
	for _, n := range byName {
		add(n.Subject, false)
	}
	if len(recent) > 0 {
		ids := make([]string, len(recent))
		for i, r := range recent {
			ids[i] = r.ID
		}
		from, err := x.store.SubjectsFrom(ctx, ep.Tenant, ids, knownAt)
		if err != nil {
			return nil, err
		}
		for _, s := range from {
			add(s, false)
		}
	}
	return out, nil
}

// candidateSubjects adds to shown the subjects the answer's candidates
// name, accepted or rejected, each once.
func candidateSubjects(shown []string, out Outcome) []string {
	add := func(id string) {
		if id != "" && !slices.Contains(shown, id) {
			shown = append(shown, id)
		}
	}
	for _, w := range out.Writes {
		add(w.Accepted.Subject)
	}
	for _, r := range out.Rejected {
		var u struct {
			Subject string `json:"subject"`
		}
		if json.Unmarshal(r.Update, &u) == nil {
			add(u.Subject)
		}
	}
	return shown
}
