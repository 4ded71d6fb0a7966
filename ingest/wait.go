package ingest

import (
	"context"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/queue"
)

// Summary sums the records that ended a set of extractions.
type Summary struct {
	Episodes int            `json:"episodes"`
	Ended    int            `json:"ended"`
	Failed   int            `json:"failed"`
	Facts    int            `json:"facts_written"`
	Pending  int            `json:"pending"`
	Rejected map[string]int `json:"rejected"` // by reason
	Calls    int            `json:"model_calls"`
	Tokens   int            `json:"tokens"`
}

// Wait waits until the extraction of every episode of refs has ended
// since an instant (queue.Wait: a usable record, or one that gave up),
// polling every poll and calling progress after each round, and sums what
// they did. It returns early, with what ended so far, when ctx ends.
func Wait(ctx context.Context, store queue.Store, refs []queue.Ref, since time.Time, poll time.Duration, progress func(queue.Progress)) (Summary, error) {
	ended, err := queue.Wait(ctx, store, refs, since, poll, progress)
	return summarize(ended, len(refs)), err
}

func summarize(ended map[queue.Ref]*sgam.Extraction, total int) Summary {
	s := Summary{Episodes: total, Rejected: map[string]int{}}
	for _, r := range ended {
		s.Ended++
		if r == nil {
			continue // forgotten meanwhile
		}
		if r.Status == sgam.ExtractionFailed {
			s.Failed++
		}
		for _, c := range r.Accepted {
			switch c.Outcome {
			case sgam.OutcomeWritten:
				s.Facts++
			case sgam.OutcomePending:
				s.Pending++
			}
		}
		for _, rj := range r.Rejected {
			s.Rejected[rj.Reason]++
		}
		s.Calls += r.Calls
		s.Tokens += r.TokensIn + r.TokensOut
	}
	return s
}
