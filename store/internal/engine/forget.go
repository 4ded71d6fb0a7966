package engine

import (
	"context"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// Forgetting and expiry (DESIGN 5) delete for real, each in one write
// transaction: the engine decides every row's fate and builds the receipt,
// the driver deletes. What a later issue derives from an episode (index
// rows, embeddings, extraction records) is forgotten here with it.

// Forget implements sgam.Lifecycle.
func (s *Store) Forget(ctx context.Context, r sgam.ForgetRequest) (rc sgam.Receipt, err error) {
	defer s.track("Forget", s.start(), &err)
	r, kind, err := r.Check()
	if err != nil {
		return rc, err
	}
	err = s.d.Write(ctx, r.Tenant, func(tx Tx) error {
		if err := tx.PrepareForget(); err != nil {
			return err
		}
		switch kind {
		case sgam.ReceiptSubject:
			secret, err := tx.Secret()
			if err != nil {
				return err
			}
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, ledger.SubjectTarget(secret, r.Tenant, r.Subject), 0)
			d, err := tx.ForgetSubject(r.Tenant, r.Subject)
			if err != nil {
				return err
			}
			deleted(&rc, d)
			if err := tx.DeleteShowing(r.Tenant, d.EpisodeIDs, []string{r.Subject}, d.FactIDs); err != nil {
				return err
			}
			if err := tx.ForgetJobs(r.Tenant, d.EpisodeIDs); err != nil {
				return err
			}
		case sgam.ReceiptEpisode:
			found, err := tx.HasEpisode(r.Tenant, r.Episode)
			if err != nil {
				return err
			}
			if !found {
				return notFound("episode", "tenant %s has no episode %s", r.Tenant, r.Episode)
			}
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, r.Episode, 0)
			if err := s.forgetEpisodes(tx, r.Tenant, []string{r.Episode}, nil, &rc); err != nil {
				return err
			}
		case sgam.ReceiptTenant:
			rc = ledger.NewReceipt(r.Tenant, r.Actor, kind, "", 0)
			d, err := tx.ForgetTenant(r.Tenant)
			if err != nil {
				return err
			}
			deleted(&rc, d)
		}
		return audit(tx, &rc)
	})
	if err != nil {
		return sgam.Receipt{}, err
	}
	return rc, nil
}

func deleted(rc *sgam.Receipt, d Deleted) {
	rc.FactIDs, rc.FactsDeleted = append(rc.FactIDs, d.FactIDs...), rc.FactsDeleted+len(d.FactIDs)
	rc.EpisodeIDs, rc.EpisodesDeleted = append(rc.EpisodeIDs, d.EpisodeIDs...), rc.EpisodesDeleted+len(d.EpisodeIDs)
	rc.PendingDeleted += d.Pending
}

// audit records receipts in the transaction of what they report, at its
// instant (fixed last: mending may have needed a later one).
func audit(tx Tx, rcs ...*sgam.Receipt) error {
	now, err := tx.Instant(0)
	if err != nil {
		return err
	}
	for _, rc := range rcs {
		rc.At = sgam.FromMicros(now)
		ledger.Finish(rc)
		if err := tx.InsertReceipt(*rc); err != nil {
			return err
		}
	}
	return nil
}

// keepFunc says whether a fact row's attribute retention keeps it once no
// episode supports it (expiry); nil keeps nothing (Forget).
type keepFunc func(attribute string, recordedAt int64) bool

// forgetEpisodes forgets a set of episodes of one tenant: rows they alone
// support go (their neighbours mended), rows with other evidence lose them,
// rows that keep (expiry) lose them and are kept by the retention actor;
// then the episodes' pending candidates and the episodes themselves go.
func (s *Store) forgetEpisodes(tx Tx, tenant string, ids []string, keep keepFunc, rc *sgam.Receipt) error {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	citing, err := tx.CitingFacts(tenant, ids)
	if err != nil {
		return err
	}
	var changes []SupportChange
	var dead []Doomed
	for _, c := range citing {
		sp := c.Support
		out := ledger.Unsupport(sp, func(e string) bool { return gone[e] }, keep != nil && keep(c.Key.Attribute, c.RecordedAt))
		switch out.Fate {
		case ledger.Untouched:
			continue
		case ledger.Deleted:
			dead = append(dead, Doomed{ID: sp.ID, Key: c.Key, Believed: c.Believed})
			rc.FactIDs = append(rc.FactIDs, sp.ID)
			rc.FactsDeleted++
			continue
		case ledger.Retained:
			rc.FactsRetained++
		default:
			rc.LinksRemoved++
		}
		if out.Source != sp.Source || out.Actor != sp.Actor {
			ch := SupportChange{ID: sp.ID, Source: out.Source, Actor: out.Actor}
			if out.Fate == ledger.Promoted {
				ch.Promoted = out.Source
			}
			changes = append(changes, ch)
		}
	}
	if len(changes) > 0 {
		if err := tx.SetSupport(tenant, changes); err != nil {
			return err
		}
	}
	if err := tx.Unlink(tenant, ids); err != nil {
		return err
	}
	if err := s.removeFacts(tx, tenant, dead, rc); err != nil {
		return err
	}
	n, err := tx.DeletePendingOf(tenant, ids)
	if err != nil {
		return err
	}
	rc.PendingDeleted += n
	gone2, err := tx.DeleteEpisodes(tenant, ids)
	if err != nil {
		return err
	}
	// Other episodes' extraction records that showed these as context
	// hold copies of what they said, and those that showed the values of
	// the rows deleted hold copies of those values.
	deadIDs := make([]int64, len(dead))
	for i, d := range dead {
		deadIDs[i] = d.ID
	}
	if err := tx.DeleteShowing(tenant, gone2, nil, deadIDs); err != nil {
		return err
	}
	if err := tx.ForgetJobs(tenant, gone2); err != nil {
		return err
	}
	rc.EpisodeIDs = append(rc.EpisodeIDs, gone2...)
	rc.EpisodesDeleted += len(gone2)
	return nil
}

// removeFacts deletes fact rows of one tenant and mends the believed rows
// of their keys: the believed predecessor of a deleted believed row is
// retracted and re-inserted over the deleted row's window
// (ledger.PlanMend). The keys are locked.
func (s *Store) removeFacts(tx Tx, tenant string, dead []Doomed, rc *sgam.Receipt) error {
	if len(dead) == 0 {
		return nil
	}
	isDead := make(map[int64]bool, len(dead))
	ids := make([]int64, 0, len(dead))
	var keys, mendKeys []sgam.Key
	seen, mendSeen := map[sgam.Key]bool{}, map[sgam.Key]bool{}
	for _, d := range dead {
		isDead[d.ID] = true
		ids = append(ids, d.ID)
		if !seen[d.Key] {
			seen[d.Key] = true
			keys = append(keys, d.Key)
		}
		if d.Believed && !mendSeen[d.Key] {
			mendSeen[d.Key] = true
			mendKeys = append(mendKeys, d.Key)
		}
	}
	var mends []ledger.Mend
	var latest int64 // the newest recorded_at among the rows to retract
	if len(mendKeys) > 0 {
		believed, err := tx.Believed(tenant, mendKeys)
		if err != nil {
			return err
		}
		for _, k := range mendKeys {
			recorded := map[int64]int64{}
			for _, r := range believed[k] {
				recorded[r.ID] = r.RecordedAt
			}
			for _, m := range ledger.PlanMend(believed[k], func(id int64) bool { return isDead[id] }) {
				mends = append(mends, m)
				latest = max(latest, recorded[m.Of])
			}
		}
	}
	if err := tx.DeleteFacts(tenant, ids, keys); err != nil {
		return err
	}
	if len(mends) == 0 {
		return nil
	}
	now, err := tx.Instant(latest)
	if err != nil {
		return err
	}
	if err := tx.Mend(tenant, mends, now); err != nil {
		return err
	}
	rc.FactsMended += len(mends)
	return nil
}

// Receipts implements sgam.Lifecycle.
func (s *Store) Receipts(ctx context.Context, tenant string) (out []sgam.Receipt, err error) {
	defer s.track("Receipts", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	return s.d.Receipts(ctx, tenant)
}

// Stats implements sgam.Overview.
func (s *Store) Stats(ctx context.Context, tenant string) (st sgam.TenantStats, err error) {
	defer s.track("Stats", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return st, err
	}
	return s.d.Stats(ctx, tenant)
}

// SubjectDigest implements sgam.Lifecycle.
func (s *Store) SubjectDigest(ctx context.Context, tenant, subject string) (digest string, err error) {
	defer s.track("SubjectDigest", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return "", err
	}
	if err := sgam.CheckSubject(subject); err != nil {
		return "", err
	}
	// The secret is created by the first forget; reading it is a write
	// transaction that creates it if needed, so that a digest asked for
	// first is the one a forget will use.
	err = s.d.Write(ctx, tenant, func(tx Tx) error {
		secret, err := tx.Secret()
		digest = ledger.SubjectTarget(secret, tenant, subject)
		return err
	})
	return digest, err
}

// Expire implements sgam.Admin: for each schema in force, transaction
// after transaction, each of at most ledger.ExpireBatch episodes and as
// many expired fact rows, until nothing more of the tenants it serves has
// expired. Each transaction records one receipt per tenant it touched.
func (s *Store) Expire(ctx context.Context) (out []sgam.Receipt, err error) {
	defer s.track("Expire", s.start(), &err)
	out = []sgam.Receipt{}
	err = s.bySchema(ctx, func(g schemaGroup) error {
		for {
			rcs, more, err := s.expireBatch(ctx, g)
			out = append(out, rcs...)
			if err != nil || !more {
				return err
			}
		}
	})
	return out, err
}

func (s *Store) expireBatch(ctx context.Context, g schemaGroup) ([]sgam.Receipt, bool, error) {
	now := s.now()
	episodeCuts, attributeCuts := g.gov.EpisodeCutoffs(now), g.gov.AttributeCutoffs(now)
	if len(episodeCuts) == 0 && len(attributeCuts) == 0 {
		return nil, false, nil
	}
	def := ""
	for _, c := range episodeCuts {
		if c.Default {
			def = c.Class
		}
	}
	var out []sgam.Receipt
	var more bool
	err := s.d.Write(ctx, g.scope.Tenant, func(tx Tx) error {
		out, more = nil, false
		// No schema is applied before this commits (PostgreSQL; SQLite's
		// write lock holds them off anyway), and the schema must still be
		// the one in force for the tenants whose rows are selected: a
		// tenant that applied its first own schema since the groups were
		// read is no longer the default's.
		if err := tx.LockSchemas(); err != nil {
			return err
		}
		if err := tx.CheckHeads(map[string]ledger.Head{g.scope.Tenant: g.gov.Head}); err != nil {
			return err
		}
		var expired []ledger.EpisodeRef
		var err error
		if len(episodeCuts) > 0 {
			if expired, err = tx.ExpiredEpisodes(g.scope, episodeCuts, def, ledger.ExpireBatch); err != nil {
				return err
			}
		}
		findFacts := func() ([]FactRef, error) {
			if len(attributeCuts) == 0 {
				return nil, nil
			}
			return tx.ExpiredFacts(g.scope, attributeCuts, ledger.ExpireBatch)
		}
		facts, err := findFacts()
		if err != nil {
			return err
		}
		if len(expired) == 0 && len(facts) == 0 {
			return nil
		}
		heads := map[string]ledger.Head{}
		for _, e := range expired {
			heads[e.Tenant] = g.gov.Head
		}
		for _, f := range facts {
			heads[f.Tenant] = g.gov.Head
		}
		if err := tx.CheckHeads(heads); err != nil {
			return err
		}
		if err := tx.PrepareForget(); err != nil {
			return err
		}
		receipts := map[string]*sgam.Receipt{}
		var order []*sgam.Receipt
		receipt := func(tenant string) *sgam.Receipt {
			rc := receipts[tenant]
			if rc == nil {
				r := ledger.NewReceipt(tenant, sgam.ActorRetention, sgam.ReceiptExpire, "", 0)
				rc = &r
				receipts[tenant] = rc
				order = append(order, rc)
			}
			return rc
		}
		keep := func(attribute string, recordedAt int64) bool { return g.gov.RetentionKeeps(attribute, recordedAt, now) }
		for i := 0; i < len(expired); {
			tenant := expired[i].Tenant
			var ids []string
			for ; i < len(expired) && expired[i].Tenant == tenant; i++ {
				ids = append(ids, expired[i].ID)
			}
			if err := s.forgetEpisodes(tx, tenant, ids, keep, receipt(tenant)); err != nil {
				return err
			}
		}
		// Rows deleted with the episodes are gone from the list; mended
		// copies are recorded now and have not expired.
		if len(expired) > 0 {
			if facts, err = findFacts(); err != nil {
				return err
			}
		}
		for i := 0; i < len(facts); {
			tenant := facts[i].Tenant
			var ids []int64
			for ; i < len(facts) && facts[i].Tenant == tenant; i++ {
				ids = append(ids, facts[i].ID)
			}
			dead, err := tx.FactsByID(tenant, ids)
			if err != nil {
				return err
			}
			rc := receipt(tenant)
			for _, d := range dead {
				rc.FactIDs = append(rc.FactIDs, d.ID)
				rc.FactsDeleted++
			}
			if err := s.removeFacts(tx, tenant, dead, rc); err != nil {
				return err
			}
		}
		if err := audit(tx, order...); err != nil {
			return err
		}
		for _, rc := range order {
			out = append(out, *rc)
		}
		more = len(expired) == ledger.ExpireBatch || len(facts) == ledger.ExpireBatch
		return nil
	})
	return out, more, err
}
