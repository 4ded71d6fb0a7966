package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// CommitExtraction implements sgam.Extractions.
func (s *Store) CommitExtraction(ctx context.Context, x sgam.ExtractionCommit) (rec sgam.Extraction, err error) {
	defer s.track("CommitExtraction", s.start(), &err)
	rec = x.Record
	if err := checkRecord(rec, len(x.Writes)); err != nil {
		return rec, err
	}
	if rec.ID == "" {
		rec.ID = newExtractionID()
	}
	// Each candidate is one write of the episode's tenant, from the
	// episode: whatever a candidate says, neither can be another.
	var parts []candidatePart
	for _, w := range x.Writes {
		b := candidateBuild(s.limits, rec, w)
		if b.Err != nil {
			rec.Rejected = append(rec.Rejected, rejection(w, b.Err))
			continue
		}
		parts = append(parts, candidatePart{w, b})
	}
	for {
		var results []sgam.WriteResult
		var stored sgam.Extraction
		failed := -1
		builds, writes := make([]ledger.Build, len(parts)), make([]sgam.CandidateWrite, len(parts))
		for i, p := range parts {
			builds[i], writes[i] = p.build, p.w
		}
		err := s.inWrite(ctx, rec.Tenant, []string{rec.Tenant}, func(tx Tx, govs ledger.Govs) error {
			results, failed = nil, -1
			if _, found, err := tx.EpisodeByID(rec.Tenant, rec.EpisodeID); err != nil {
				return err
			} else if !found {
				return notFound("episode_id", "tenant %s has no episode %q", rec.Tenant, rec.EpisodeID)
			}
			if len(parts) > 0 {
				ops, err := buildEach(builds, govs, s.now(), &failed)
				if err != nil {
					return err
				}
				b := ledger.New(ops)
				b.Govs = govs
				if results, err = s.apply(tx, b, "", nil, true); err != nil {
					if b.Failed >= 0 {
						failed = b.Failed
					}
					return err
				}
			}
			// The write fixed the transaction's instant, if there was one.
			now, err := tx.Instant(0)
			if err != nil {
				return err
			}
			stored = finish(rec, writes, results, now)
			if err := tx.InsertExtraction(stored); err != nil {
				return err
			}
			return tx.SettleQueued(stored.Tenant, stored.EpisodeID, stored.Status != sgam.ExtractionFailed || stored.GaveUp, now)
		})
		if err == nil {
			return stored, nil
		}
		if failed < 0 || sgam.ErrorCode(err) == sgam.Internal || sgam.ErrorCode(err) == sgam.Unavailable {
			return x.Record, err
		}
		// The ledger refused one candidate: it is rejected, and the rest
		// are written without it.
		rec.Rejected = append(rec.Rejected, rejection(parts[failed].w, err))
		parts = append(parts[:failed:failed], parts[failed+1:]...)
	}
}

// candidatePart is a candidate and its write.
type candidatePart struct {
	w     sgam.CandidateWrite
	build ledger.Build
}

// buildEach builds each part's op under govs; a part that fails sets
// failed to its index.
func buildEach(builds []ledger.Build, govs ledger.Govs, now time.Time, failed *int) ([]ledger.Op, error) {
	ops := make([]ledger.Op, 0, len(builds))
	for i, b := range builds {
		o, err := b.Ops(govs, now)
		if err != nil {
			*failed = i
			return nil, err
		}
		ops = append(ops, o...)
	}
	return ops, nil
}

// candidateBuild is the write of one candidate: an Assert (a set's Add)
// or a Retract (a set's Remove), in the record's tenant, from its episode.
func candidateBuild(l sgam.Limits, rec sgam.Extraction, w sgam.CandidateWrite) ledger.Build {
	key := sgam.Key{Tenant: rec.Tenant, Subject: w.Subject, Attribute: w.Attribute}
	if w.Retract {
		return ledger.RetractOne(l, sgam.Retraction{Key: key, At: w.ValidFrom, Source: rec.EpisodeID, Value: w.Value}, false)
	}
	return ledger.AssertOne(l, sgam.Assertion{Key: key, Value: w.Value, ValidFrom: w.ValidFrom, Source: rec.EpisodeID}, false)
}

// finish fills in what the ledger made of each written candidate, the
// record's fact and pending ids, its status and its instant.
func finish(rec sgam.Extraction, writes []sgam.CandidateWrite, results []sgam.WriteResult, now int64) sgam.Extraction {
	rec.At = sgam.FromMicros(now)
	rec.Accepted = make([]sgam.Accepted, 0, len(writes))
	rec.Facts, rec.Pending = []int64{}, []string{}
	for i, w := range writes {
		a := w.Accepted
		r := results[i]
		switch {
		case r.Pending != nil:
			a.Outcome, a.PendingID = sgam.OutcomePending, r.Pending.ID
			rec.Pending = append(rec.Pending, r.Pending.ID)
		case r.Kept:
			a.Outcome = sgam.OutcomeKept
		case r.NoChange:
			a.Outcome = sgam.OutcomeUnchanged
		default:
			a.Outcome = sgam.OutcomeWritten
		}
		if r.Fact != nil {
			a.FactID = r.Fact.ID
			if !r.Kept {
				rec.Facts = append(rec.Facts, r.Fact.ID)
			}
		}
		rec.Accepted = append(rec.Accepted, a)
	}
	if rec.Rejected == nil {
		rec.Rejected = []sgam.Rejection{}
	}
	if rec.Warnings == nil {
		rec.Warnings = []string{}
	}
	switch {
	case rec.Error != "":
		rec.Status = sgam.ExtractionFailed
	case len(rec.Accepted) == 0 && len(rec.Rejected) > 0:
		rec.Status = sgam.ExtractionRejected
	default:
		rec.Status = sgam.ExtractionDone
	}
	return rec
}

// rejection records why the ledger refused a candidate: the reason the
// rule that refused it gave (sgam.RejectionReason).
func rejection(w sgam.CandidateWrite, err error) sgam.Rejection {
	// JSON, not Go quoting: a subject may hold any text.
	u, _ := json.Marshal(map[string]string{"subject": w.Subject, "attribute": w.Attribute, "change": w.Change})
	return sgam.Rejection{Index: w.Index, Update: u, Reason: sgam.RejectionReason(err), Field: sgam.ErrorField(err), Message: sgam.ErrorMessage(err)}
}

func checkRecord(rec sgam.Extraction, writes int) error {
	if err := sgam.CheckTenant(rec.Tenant); err != nil {
		return err
	}
	if err := sgam.CheckEpisodeID("episode_id", rec.EpisodeID); err != nil {
		return err
	}
	switch {
	case len(rec.Prompt) > sgam.MaxRecordText:
		return sgam.Errorf(sgam.Invalid, "prompt", "is %d bytes; at most %d are kept", len(rec.Prompt), sgam.MaxRecordText)
	case len(rec.RawOutput) > sgam.MaxRecordText:
		return sgam.Errorf(sgam.Invalid, "raw_output", "is %d bytes; at most %d are kept", len(rec.RawOutput), sgam.MaxRecordText)
	case writes > sgam.MaxRecordList || len(rec.Rejected) > sgam.MaxRecordList || len(rec.Warnings) > sgam.MaxRecordList:
		return sgam.Errorf(sgam.Invalid, "candidates", "at most %d candidates, rejections and warnings each", sgam.MaxRecordList)
	case rec.TokensIn < 0 || rec.TokensOut < 0 || rec.TokensIn > sgam.MaxTokenCount || rec.TokensOut > sgam.MaxTokenCount:
		return sgam.Errorf(sgam.Invalid, "tokens", "must be between 0 and %d", sgam.MaxTokenCount)
	}
	return nil
}

func newExtractionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "x_" + hex.EncodeToString(b[:])
}

// Extractions implements sgam.Extractions.
func (s *Store) Extractions(ctx context.Context, tenant, episodeID string) (out []sgam.Extraction, err error) {
	defer s.track("Extractions", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := sgam.CheckEpisodeID("episode_id", episodeID); err != nil {
		return nil, err
	}
	if _, found, err := s.d.Episode(ctx, tenant, episodeID); err != nil {
		return nil, err
	} else if !found {
		return nil, notFound("episode_id", "tenant %s has no episode %q", tenant, episodeID)
	}
	return s.d.Extractions(ctx, tenant, episodeID)
}

// ExtractionByPrompt implements sgam.Extractions.
func (s *Store) ExtractionByPrompt(ctx context.Context, tenant, digest string) (x sgam.Extraction, found bool, err error) {
	defer s.track("ExtractionByPrompt", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return x, false, err
	}
	if digest == "" || len(digest) > 128 {
		return x, false, sgam.Errorf(sgam.Invalid, "prompt_digest", "must be 1 to 128 characters")
	}
	return s.d.ExtractionByPrompt(ctx, tenant, digest)
}

// TokensSpent implements sgam.Extractions.
func (s *Store) TokensSpent(ctx context.Context, tenant string, since time.Time) (n int, err error) {
	defer s.track("TokensSpent", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return 0, err
	}
	return s.d.TokensSpent(ctx, tenant, sgam.Micros(since))
}
