package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sgam-dev/sgam"
)

// maxQueueBatch bounds the episodes of one QueueExtraction or
// DequeueExtractions call, and a QueuedExtractions listing.
const maxQueueBatch = 10000

// QueueExtraction implements sgam.ExtractionQueue.
func (s *Store) QueueExtraction(ctx context.Context, tenant string, ids []string, again bool) (err error) {
	defer s.track("QueueExtraction", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	if len(ids) > maxQueueBatch {
		return sgam.Errorf(sgam.Invalid, "episode_ids", "has %d ids; at most %d at once", len(ids), maxQueueBatch)
	}
	for i, id := range ids {
		if err := sgam.CheckEpisodeID(fmt.Sprintf("episode_ids[%d]", i), id); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return s.d.Write(ctx, tenant, func(tx Tx) error {
		for _, id := range ids {
			found, err := tx.HasEpisode(tenant, id)
			if err != nil {
				return err
			}
			if !found {
				return notFound("episode_id", "tenant %s has no episode %q", tenant, id)
			}
		}
		now, err := tx.Instant(0)
		if err != nil {
			return err
		}
		return tx.QueueExtraction(tenant, ids, again, now, now)
	})
}

// QueuedExtractions implements sgam.ExtractionDispatch.
func (s *Store) QueuedExtractions(ctx context.Context, limit int, dueOnly bool) (out []sgam.QueuedExtraction, err error) {
	defer s.track("QueuedExtractions", s.start(), &err)
	if limit <= 0 || limit > maxQueueBatch {
		return nil, sgam.Errorf(sgam.Invalid, "limit", "must be between 1 and %d, not %d", maxQueueBatch, limit)
	}
	dueBy := sgam.Micros(sgam.MaxTime())
	if dueOnly {
		dueBy = sgam.Micros(s.now())
	}
	return s.d.QueuedExtractions(ctx, limit, dueBy)
}

// DequeueExtractions implements sgam.ExtractionDispatch.
func (s *Store) DequeueExtractions(ctx context.Context, q []sgam.QueuedExtraction) (err error) {
	defer s.track("DequeueExtractions", s.start(), &err)
	if len(q) > maxQueueBatch {
		return sgam.Errorf(sgam.Invalid, "queued", "has %d entries; at most %d at once", len(q), maxQueueBatch)
	}
	if len(q) == 0 {
		return nil
	}
	return s.d.Write(ctx, "", func(tx Tx) error { return tx.Dequeue(q) })
}

// SetBudget implements sgam.Admin.
func (s *Store) SetBudget(ctx context.Context, tenant string, tokensPerDay int) (err error) {
	defer s.track("SetBudget", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	if tokensPerDay < 0 || tokensPerDay > 1<<50 {
		return sgam.Errorf(sgam.Invalid, "tokens_per_day", "must be between 0 (no limit) and 2^50, not %d", tokensPerDay)
	}
	return s.d.Write(ctx, tenant, func(tx Tx) error { return tx.SetBudget(tenant, tokensPerDay) })
}

// Budget implements sgam.ExtractionQueue: spent today is what the
// tenant's extraction records since the last UTC midnight cost.
func (s *Store) Budget(ctx context.Context, tenant string) (b sgam.Budget, err error) {
	defer s.track("Budget", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return b, err
	}
	now := s.now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	b = sgam.Budget{Tenant: tenant, ResetsAt: midnight.AddDate(0, 0, 1)}
	if b.TokensPerDay, err = s.d.TokensPerDay(ctx, tenant); err != nil {
		return b, err
	}
	b.SpentToday, err = s.d.TokensSpent(ctx, tenant, sgam.Micros(midnight))
	b.SpentToday = min(max(b.SpentToday, 0), sgam.MaxTokenCount)
	return b, err
}
