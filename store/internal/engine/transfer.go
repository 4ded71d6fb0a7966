package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/schema"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// Import implements sgam.Admin.
func (s *Store) Import(ctx context.Context, b sgam.ImportBatch) (st sgam.ImportStats, err error) {
	defer s.track("Import", s.start(), &err)
	if err := s.limits.CheckImportBatch(b); err != nil {
		return st, err
	}
	var tenants []string
	var keys []sgam.Key
	seen := map[sgam.Key]bool{}
	addTenant := func(t string) {
		if !slices.Contains(tenants, t) {
			tenants = append(tenants, t)
		}
	}
	for _, e := range b.Episodes {
		addTenant(e.Tenant)
	}
	for _, f := range b.Facts {
		addTenant(f.Tenant)
		if !seen[f.Key()] {
			seen[f.Key()] = true
			keys = append(keys, f.Key())
		}
	}
	// An import spans tenants by nature: fact ids are store-wide.
	err = s.inWrite(ctx, "", tenants, func(tx Tx, govs ledger.Govs) error {
		st = sgam.ImportStats{}
		if err := tx.CheckHeads(govs.Heads()); err != nil {
			return err
		}
		for _, t := range tenants {
			if err := govs.For(t).CheckImport(b, t); err != nil {
				return err
			}
		}
		if err := tx.LockKeys(keys); err != nil {
			return err
		}
		for i, e := range b.Episodes {
			have, found, err := tx.EpisodeByID(e.Tenant, e.ID)
			switch {
			case err != nil:
				return err
			case !found:
				if err := govs.For(e.Tenant).CheckRetention(e.Retention); err != nil {
					return sgam.PrefixField(fmt.Sprintf("episodes[%d]", i), err)
				}
				if err := tx.InsertEpisode(e); err != nil {
					return sgam.PrefixField(fmt.Sprintf("episodes[%d]", i), err)
				}
				st.Episodes++
			case sgam.EpisodesEqual(have, e):
				st.EpisodesPresent++
			default:
				return sgam.Errorf(sgam.Conflict, fmt.Sprintf("episodes[%d]", i), "tenant %s already has a different episode %s", e.Tenant, e.ID)
			}
		}
		plan, err := ledger.PlanImport(tx, b)
		if err != nil {
			return err
		}
		st.FactsPresent = plan.FactsPresent
		fresh := make([]sgam.StoredFact, len(plan.Fresh))
		for i, j := range plan.Fresh {
			fresh[i] = b.Facts[j]
		}
		if len(fresh) > 0 {
			if err := tx.InsertFacts(fresh); err != nil {
				return err
			}
		}
		st.Facts = len(fresh)
		return tx.Observe(sgam.Micros(b.LatestInstant()))
	})
	if err != nil {
		return sgam.ImportStats{}, err
	}
	return st, nil
}

// Export implements sgam.Admin. Episode vectors (sgam.Embeddings) are not
// exported: they are derived from the episodes' content by a model, and an
// imported store gets them by embedding its episodes again (the embedding
// job of package queue finds every episode without a vector).
func (s *Store) Export(ctx context.Context, tenant string, episode func(sgam.Episode) error, fact func(sgam.StoredFact) error) (err error) {
	defer s.track("Export", s.start(), &err)
	if tenant != "" {
		if err := sgam.CheckTenant(tenant); err != nil {
			return err
		}
	}
	return s.d.Export(ctx, tenant, episode, fact)
}

// Check implements sgam.Admin.
func (s *Store) Check(ctx context.Context) (out []sgam.Violation, err error) {
	defer s.track("Check", s.start(), &err)
	return s.d.Check(ctx)
}

// Compact implements sgam.Admin.
func (s *Store) Compact(ctx context.Context) (err error) {
	defer s.track("Compact", s.start(), &err)
	return s.d.Compact(ctx)
}

// ExportSchemas implements sgam.Admin. The versions are read before the
// rows' snapshot: a schema applied while an export runs may be missing
// from it, never one the rows do not name.
func (s *Store) ExportSchemas(ctx context.Context, tenant string) (out []sgam.SchemaVersion, err error) {
	defer s.track("ExportSchemas", s.start(), &err)
	owners := []string{tenant}
	if tenant == "" {
		if owners, err = s.d.SchemaOwners(ctx); err != nil {
			return nil, err
		}
	} else if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	for _, owner := range append([]string{""}, owners...) {
		vs, err := s.d.SchemaVersions(ctx, owner)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// ImportSchema implements sgam.Admin.
func (s *Store) ImportSchema(ctx context.Context, v sgam.SchemaVersion) (present bool, err error) {
	defer s.track("ImportSchema", s.start(), &err)
	owner := v.Tenant
	switch {
	case v.StoreDefault && owner != "":
		return false, sgam.Errorf(sgam.Invalid, "tenant", "a store default schema belongs to no tenant")
	case !v.StoreDefault:
		if err := sgam.CheckTenant(owner); err != nil {
			return false, err
		}
	}
	if v.Version < 1 {
		return false, sgam.Errorf(sgam.Invalid, "version", "must be at least 1")
	}
	if v.AppliedAt, err = sgam.CheckTime("applied_at", v.AppliedAt); err != nil {
		return false, err
	}
	parsed, err := schema.Parse(v.Body)
	if err != nil {
		return false, sgam.Errorf(sgam.Invalid, "schema", "%v", err)
	}
	if parsed.Hash() != v.Hash {
		return false, sgam.Errorf(sgam.Invalid, "hash", "%q is not the hash of the schema given (%s)", v.Hash, parsed.Hash())
	}
	v.Body, v.Diff = parsed.Canonical(), nil
	whose := "tenant " + owner + "'s schema"
	if owner == "" {
		whose = "the store default schema"
	}
	err = s.d.Write(ctx, owner, func(tx Tx) error {
		if err := tx.LockSchemas(); err != nil {
			return err
		}
		h, err := tx.SchemaHead(owner)
		if err != nil {
			return err
		}
		latest := 0
		if h.Owner == owner {
			latest = h.Version
		}
		if v.Version > latest {
			return tx.InsertSchema(v)
		}
		have, err := tx.SchemaVersion(ledger.Head{Owner: owner, Version: v.Version})
		switch {
		case err != nil && sgam.ErrorCode(err) == sgam.Internal:
			return sgam.Errorf(sgam.Conflict, "version", "%s has versions after %d but not %d itself, so it cannot be imported in order", whose, v.Version, v.Version)
		case err != nil:
			return err
		case have.Hash != v.Hash:
			return sgam.Errorf(sgam.Conflict, "version", "%s already has a different version %d (hash %s, not %s)", whose, v.Version, have.Hash, v.Hash)
		}
		present = true
		return nil
	})
	if err == nil && !present {
		s.schemas.forget(owner)
	}
	return present, err
}
