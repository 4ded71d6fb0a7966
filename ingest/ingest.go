package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
)

// Mode is how a captured episode is extracted.
type Mode string

// Modes of capture.
const (
	// ModeNone captures only.
	ModeNone Mode = "none"
	// ModeBackground captures with the episode's place in the extraction
	// queue, in one transaction: the workers extract it.
	ModeBackground Mode = "background"
	// ModeNow captures as ModeBackground, held, and extracts at once: the
	// immediate path (immediate.go).
	ModeNow Mode = "now"
)

// Store is what capture needs of a store: episodes, and the extraction
// queue they are captured into. (An extraction reads through its
// Extractor's store.)
type Store interface {
	sgam.Episodes
	sgam.ExtractionQueue
}

// Ingester captures episodes in a mode. It is safe for concurrent use;
// Close ends the immediate extractions that outlived their callers.
type Ingester struct {
	store Store
	now   *immediate // nil: no model
}

// New returns an Ingester over store that extracts with x; x nil, or
// without a model, extracts nothing now, and ModeNow is refused.
func New(store Store, x *extract.Extractor) *Ingester {
	in := &Ingester{store: store}
	if x != nil && x.Model() != nil {
		in.now = newImmediate(store, x)
	}
	return in
}

// Mode reads a requested mode (field "extract"): empty is the default,
// background with a model and none without; now needs a model.
func (in *Ingester) Mode(requested string) (Mode, error) {
	switch m := Mode(requested); m {
	case "":
		if in.now != nil {
			return ModeBackground, nil
		}
		return ModeNone, nil
	case ModeNone, ModeBackground:
		return m, nil
	case ModeNow:
		if in.now == nil {
			return "", sgam.Errorf(sgam.Invalid, "extract", `"now" needs a model, and none is configured; use "background" or "none"`)
		}
		return m, nil
	}
	return "", sgam.Errorf(sgam.Invalid, "extract", "%q is none of background, now, none", requested)
}

// Result is what capturing an episode did.
type Result struct {
	// Episode is the episode as stored (the one captured before, for a
	// repeat).
	Episode sgam.Episode
	// Queued is set when the extraction workers will extract it: queued in
	// the transaction that captured it, or, in ModeNow, when its
	// extraction outlived the caller's wait or failed in a way a retry
	// may mend.
	Queued bool
	// Record is, in ModeNow, the extraction's record when it ended while
	// the caller waited (its status may be failed); Skipped when that is
	// the record of an earlier extraction of the same content.
	Record  *sgam.Extraction
	Skipped bool
}

// Capture captures e in mode (empty: the default, as Mode reads it); in
// ModeNow it extracts e at once and waits
// for the extraction until ctx ends (see immediate.Extract). A tenant
// whose token budget is spent gets e captured and queued all the same,
// and an unavailable error, field extract, that says so (Result holds the
// episode). A model that failed is no error: the record says so.
func (in *Ingester) Capture(ctx context.Context, e sgam.Episode, mode Mode) (Result, error) {
	mode, err := in.Mode(string(mode))
	if err != nil {
		return Result{}, err
	}
	switch mode {
	case ModeNone:
		ep, err := in.store.AddEpisode(ctx, e)
		return Result{Episode: ep}, err
	case ModeBackground:
		ep, queued, err := in.store.AddEpisodeToExtract(ctx, e, 0)
		return Result{Episode: ep, Queued: queued}, err
	}
	// ModeNow: Mode refused it without a model.
	res, err := in.now.Extract(ctx, e)
	var be *extract.BudgetError
	if errors.As(err, &be) {
		return res, &sgam.Error{Code: sgam.Unavailable, Field: "extract", Err: err, Message: fmt.Sprintf(
			"episode %s was captured and not extracted now: %v; it is queued, and the extraction workers extract it once the budget allows", res.Episode.ID, be)}
	}
	return res, err
}

// Close ends the immediate extractions that outlived their callers: they
// get until ctx ends to finish, then give their episodes to the workers.
func (in *Ingester) Close(ctx context.Context) {
	if in.now != nil {
		in.now.Close(ctx)
	}
}
