package queue

import (
	"context"
	"time"

	"github.com/sgam-dev/sgam"
)

// Ref names an episode.
type Ref struct {
	Tenant    string `json:"tenant"`
	EpisodeID string `json:"episode_id"`
}

// Progress is how far the extraction of a set of episodes has got.
type Progress struct {
	Total  int `json:"episodes"`
	Ended  int `json:"ended"`  // done, rejected or failed
	Failed int `json:"failed"` // gave up after its retries
}

// Ended returns the record that ends ep's extraction since an instant:
// the latest recorded at or after since that is usable (done or
// rejected) or that gave up; nil while it is still to come.
func Ended(ctx context.Context, store Store, ep Ref, since time.Time) (*sgam.Extraction, error) {
	recs, err := store.Extractions(ctx, ep.Tenant, ep.EpisodeID)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.At.Before(since) {
			break
		}
		if r.Status != sgam.ExtractionFailed || r.GaveUp {
			return &r, nil
		}
	}
	return nil, nil
}

// Wait polls until the extraction of every episode in refs has ended
// since an instant (see Ended), calling progress after each round, and
// returns the ending records by ref. An episode forgotten meanwhile ends
// with no record. It returns early when ctx ends.
func Wait(ctx context.Context, store Store, refs []Ref, since time.Time, poll time.Duration, progress func(Progress)) (map[Ref]*sgam.Extraction, error) {
	out := make(map[Ref]*sgam.Extraction, len(refs))
	pending := append([]Ref(nil), refs...)
	p := Progress{Total: len(refs)}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		left := pending[:0]
		for _, r := range pending {
			rec, err := Ended(ctx, store, r, since)
			switch {
			case sgam.ErrorCode(err) == sgam.NotFound:
				out[r] = nil
				p.Ended++
			case err != nil:
				return out, err
			case rec == nil:
				left = append(left, r)
			default:
				out[r] = rec
				p.Ended++
				if rec.Status == sgam.ExtractionFailed {
					p.Failed++
				}
			}
		}
		pending = left
		if progress != nil {
			progress(p)
		}
		if len(pending) == 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-t.C:
		}
	}
}
