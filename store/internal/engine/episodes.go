package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// AddEpisode implements sgam.Episodes.
func (s *Store) AddEpisode(ctx context.Context, e sgam.Episode) (out sgam.Episode, err error) {
	defer s.track("AddEpisode", s.start(), &err)
	out, _, err = s.addEpisode(ctx, e, false, 0)
	return out, err
}

// AddEpisodeToExtract implements sgam.ExtractionQueue.
func (s *Store) AddEpisodeToExtract(ctx context.Context, e sgam.Episode, hold time.Duration) (out sgam.Episode, queued bool, err error) {
	defer s.track("AddEpisodeToExtract", s.start(), &err)
	if hold < 0 || hold > sgam.MaxHold {
		return e, false, sgam.Errorf(sgam.Invalid, "hold", "must be between 0 and %s, not %s", sgam.MaxHold, hold)
	}
	return s.addEpisode(ctx, e, true, hold)
}

// addEpisode captures e and, when extract is set, queues it for
// extraction in the same transaction, due after hold.
func (s *Store) addEpisode(ctx context.Context, e sgam.Episode, extract bool, hold time.Duration) (out sgam.Episode, queued bool, err error) {
	explicitTime := !e.OccurredAt.IsZero()
	if e, err = s.limits.CheckNewEpisode(e, s.now()); err != nil {
		return e, false, err
	}
	var tenants []string // whose schema the write needs: a retention class must be declared
	if e.Retention != "" {
		if err := sgam.CheckRetentionClass("retention", e.Retention); err != nil {
			return e, false, err
		}
		tenants = []string{e.Tenant}
	}
	if e.ID == "" && e.IdempotencyKey == "" {
		e.ID = ledger.NewEpisodeID()
	}
	err = s.inWrite(ctx, e.Tenant, tenants, func(tx Tx, govs ledger.Govs) error {
		queued = false
		fresh, err := s.storeEpisode(tx, govs, e, explicitTime, &out)
		if err != nil || !extract {
			return err
		}
		if !fresh {
			// A repeat: queued again only if it was never extracted.
			done, err := tx.Extracted(out.Tenant, out.ID)
			if err != nil || done {
				return err
			}
		}
		now, err := tx.Instant(0)
		if err != nil {
			return err
		}
		queued = true
		return tx.QueueExtraction(out.Tenant, []string{out.ID}, false, now, now+hold.Microseconds())
	})
	return out, queued, err
}

// storeEpisode stores e in tx: new, filling in a placeholder, or a repeat
// of a stored episode (fresh false), which out is set to.
func (s *Store) storeEpisode(tx Tx, govs ledger.Govs, e sgam.Episode, explicitTime bool, out *sgam.Episode) (fresh bool, err error) {
	err = func() error {
		in := e
		if in.Retention != "" {
			if err := tx.CheckHeads(govs.Heads()); err != nil {
				return err
			}
			if err := govs.For(in.Tenant).CheckRetention(in.Retention); err != nil {
				return err
			}
		}
		if in.IdempotencyKey != "" {
			have, found, err := tx.EpisodeByKey(in.Tenant, in.IdempotencyKey)
			if err != nil {
				return err
			}
			if found {
				if in.ID == "" {
					in.ID = have.ID
				}
				if !ledger.SameEpisode(have, in, explicitTime) {
					return sgam.Errorf(sgam.Conflict, "idempotency_key", "episode %s was already captured under idempotency key %q with different content", have.ID, in.IdempotencyKey)
				}
				*out = have
				return nil
			}
			if in.ID == "" {
				in.ID = ledger.NewEpisodeID()
			}
		}
		have, found, err := tx.EpisodeByID(in.Tenant, in.ID)
		switch {
		case err != nil:
			return err
		case !found:
			now, err := tx.Instant(0)
			if err != nil {
				return err
			}
			in.RecordedAt = sgam.FromMicros(now)
			*out, fresh = in, true
			return tx.InsertEpisode(in)
		case ledger.IsPlaceholder(have):
			// A write named this episode before it was captured: fill it in,
			// keeping when the store first heard of it.
			in.RecordedAt = have.RecordedAt
			*out, fresh = in, true
			return tx.FillPlaceholder(in)
		case ledger.SameEpisode(have, in, explicitTime):
			*out = have
			return nil
		}
		return sgam.Errorf(sgam.Conflict, "episode_id", "episode %s already exists with different content", in.ID)
	}()
	return fresh, err
}

// Episode implements sgam.Episodes.
func (s *Store) Episode(ctx context.Context, tenant, id string) (e sgam.Episode, err error) {
	defer s.track("Episode", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return e, err
	}
	if err := sgam.CheckEpisodeID("episode_id", id); err != nil {
		return e, err
	}
	e, found, err := s.d.Episode(ctx, tenant, id)
	if err == nil && !found {
		err = notFound("episode_id", "tenant %s has no episode %s", tenant, id)
	}
	return e, err
}

// Episodes implements sgam.Episodes.
func (s *Store) Episodes(ctx context.Context, q sgam.EpisodeQuery) (out []sgam.Episode, err error) {
	defer s.track("Episodes", s.start(), &err)
	if q, err = q.Check(); err != nil {
		return nil, err
	}
	return s.d.Episodes(ctx, q)
}

// Around implements sgam.Episodes.
func (s *Store) Around(ctx context.Context, tenant string, at []sgam.Episode, n int, knownAt time.Time) (out map[string]sgam.Window, err error) {
	defer s.track("Around", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if len(at) > sgam.MaxAroundLookup {
		return nil, sgam.Errorf(sgam.Invalid, "at", "has %d episodes; at most %d", len(at), sgam.MaxAroundLookup)
	}
	if n < 1 || n > sgam.MaxAround {
		return nil, sgam.Errorf(sgam.Invalid, "n", "must be between 1 and %d, not %d", sgam.MaxAround, n)
	}
	if knownAt.IsZero() {
		knownAt = s.now()
	} else if knownAt, err = sgam.CheckTime("known_at", knownAt); err != nil {
		return nil, err
	}
	ok := make([]sgam.Episode, 0, len(at))
	for i, e := range at {
		if err := sgam.CheckEpisodeID(fmt.Sprintf("at[%d].episode_id", i), e.ID); err != nil {
			return nil, err
		}
		if e.Tenant != "" && e.Tenant != tenant {
			return nil, sgam.Errorf(sgam.Invalid, fmt.Sprintf("at[%d].tenant", i), "is another tenant's episode")
		}
		if _, err := sgam.CheckTime(fmt.Sprintf("at[%d].occurred_at", i), e.OccurredAt); err != nil {
			return nil, err
		}
		if e.Session != "" && !slices.ContainsFunc(ok, func(o sgam.Episode) bool { return o.ID == e.ID }) {
			ok = append(ok, e)
		}
	}
	if len(ok) == 0 {
		return map[string]sgam.Window{}, nil
	}
	out, err = s.d.Around(ctx, tenant, ok, n, sgam.Micros(knownAt))
	for _, w := range out {
		slices.Reverse(w.Before) // the driver's nearest first, oldest first
	}
	return out, err
}

// Pending implements sgam.Review.
func (s *Store) Pending(ctx context.Context, q sgam.PendingQuery) (out []sgam.Candidate, err error) {
	defer s.track("Pending", s.start(), &err)
	if q, err = q.Check(); err != nil {
		return nil, err
	}
	return s.d.Pending(ctx, q)
}

// Confirm implements sgam.Review.
func (s *Store) Confirm(ctx context.Context, tenant, pendingID, episodeID string) (res sgam.WriteResult, err error) {
	defer s.track("Confirm", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return res, err
	}
	if err := sgam.CheckEpisodeID("episode_id", episodeID); err != nil {
		return res, err
	}
	c, found, err := s.d.Candidate(ctx, tenant, pendingID)
	if err != nil {
		return res, err
	}
	if !found {
		return res, NoCandidate(tenant, pendingID)
	}
	build := ledger.Build{Tenants: []string{tenant}, Ops: func(g ledger.Govs, now time.Time) ([]ledger.Op, error) {
		return g.For(tenant).Candidate(c, episodeID, now)
	}}
	out, err := s.write(ctx, writeReq{build: build, confirm: &c})
	if err != nil {
		return res, err
	}
	// The last write's fact cites the confirming episode too; whether
	// anything changed is the candidate's own write's to say (the
	// confirmer's link alone is always a repeat).
	res = out[len(out)-1]
	res.NoChange, res.Kept = out[0].NoChange, out[0].Kept
	return res, nil
}

// Dismiss implements sgam.Review.
func (s *Store) Dismiss(ctx context.Context, tenant, pendingID string) (err error) {
	defer s.track("Dismiss", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return err
	}
	return s.d.Write(ctx, tenant, func(tx Tx) error {
		found, err := tx.DeletePending(tenant, pendingID)
		if err == nil && !found {
			err = NoCandidate(tenant, pendingID)
		}
		return err
	})
}

// NoCandidate is the error of a pending candidate the tenant does not have
// (LoadBatch's, when the one to confirm is gone).
func NoCandidate(tenant, id string) error {
	return notFound("pending_id", "tenant %s has no pending candidate %q", tenant, id)
}
