package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/store/internal/ledger"
)

// schemaCache holds each tenant's schema head as last seen, and the parsed
// schema of every head (a stored version never changes). Writes check the
// heads they used inside their transaction (Tx.CheckHeads, LoadBatch), so a
// stale head costs a retry, never a write under the wrong schema; reads look
// a head up again when it is older than headTTL, so that a schema applied by
// another process serves reads within that.
type schemaCache struct {
	mu    sync.RWMutex
	heads map[string]headEntry // by tenant
	govs  map[ledger.Head]ledger.Gov
}

type headEntry struct {
	head ledger.Head
	seen time.Time
}

// headTTL is how long a read trusts a head without looking again.
const headTTL = time.Second

// maxCached bounds each map of the cache; when full it starts over.
const maxCached = 1 << 16

func newSchemaCache() *schemaCache {
	return &schemaCache{heads: map[string]headEntry{}, govs: map[ledger.Head]ledger.Gov{}}
}

func (c *schemaCache) head(tenant string) (headEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.heads[tenant]
	return e, ok
}

func (c *schemaCache) setHeads(heads map[string]ledger.Head) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heads)+len(heads) > maxCached {
		clear(c.heads)
	}
	for t, h := range heads {
		c.heads[t] = headEntry{head: h, seen: now}
	}
}

// forget drops the head of tenant, or every head when the default changed
// (tenant ""), since the default serves every tenant without its own.
func (c *schemaCache) forget(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tenant == "" {
		clear(c.heads)
		return
	}
	delete(c.heads, tenant)
}

// gov returns the parsed schema of h, loading it once.
func (s *Store) gov(ctx context.Context, h ledger.Head) (ledger.Gov, error) {
	if h.Version == 0 {
		return ledger.Gov{Head: h}, nil
	}
	c := s.schemas
	c.mu.RLock()
	g, ok := c.govs[h]
	c.mu.RUnlock()
	if ok {
		return g, nil
	}
	v, found, err := s.d.SchemaVersion(ctx, h)
	if err != nil {
		return g, err
	}
	if !found {
		return g, &sgam.Error{Code: sgam.Internal, Message: "a schema version in force is not stored"}
	}
	if g, err = ledger.LoadGov(h, v.Body); err != nil {
		return g, err
	}
	c.mu.Lock()
	if len(c.govs) >= maxCached {
		clear(c.govs)
	}
	c.govs[h] = g
	c.mu.Unlock()
	return g, nil
}

// readGov is the schema a read of tenant resolves attribute names under.
func (s *Store) readGov(ctx context.Context, tenant string) (ledger.Gov, error) {
	if e, ok := s.schemas.head(tenant); ok && time.Since(e.seen) < headTTL {
		return s.gov(ctx, e.head)
	}
	h, err := s.d.SchemaHead(ctx, tenant)
	if err != nil {
		return ledger.Gov{}, err
	}
	s.schemas.setHeads(map[string]ledger.Head{tenant: h})
	return s.gov(ctx, h)
}

// govsFor returns the schemas a write of tenants builds under: the heads
// last seen, whatever their age, since the write checks them inside its
// transaction.
func (s *Store) govsFor(ctx context.Context, tenants []string) (ledger.Govs, error) {
	govs := make(ledger.Govs, len(tenants))
	for _, t := range tenants {
		e, ok := s.schemas.head(t)
		if !ok {
			h, err := s.d.SchemaHead(ctx, t)
			if err != nil {
				return nil, err
			}
			s.schemas.setHeads(map[string]ledger.Head{t: h})
			e.head = h
		}
		g, err := s.gov(ctx, e.head)
		if err != nil {
			return nil, err
		}
		govs[t] = g
	}
	return govs, nil
}

// maxSchemaRetries bounds how often a write starts over because a schema
// changed under it.
const maxSchemaRetries = 5

// inWrite runs fn in a write transaction (scoped to tenant, "" for all)
// with the schemas of tenants, and runs it again under the new ones when a
// schema changed meanwhile (fn, or LoadBatch, found a *SchemaChanged).
func (s *Store) inWrite(ctx context.Context, tenant string, tenants []string, fn func(Tx, ledger.Govs) error) error {
	for attempt := 0; ; attempt++ {
		govs, err := s.govsFor(ctx, tenants)
		if err != nil {
			return err
		}
		err = s.d.Write(ctx, tenant, func(tx Tx) error { return fn(tx, govs) })
		var changed *SchemaChanged
		if !errors.As(err, &changed) {
			return err
		}
		s.schemas.setHeads(changed.Heads)
		if attempt == maxSchemaRetries {
			return &sgam.Error{Code: sgam.Unavailable, Message: "schemas kept changing during the write; try again", Err: err}
		}
	}
}

// Schema implements sgam.Schemas.
func (s *Store) Schema(ctx context.Context, tenant string) (v sgam.SchemaVersion, err error) {
	defer s.track("Schema", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return v, err
	}
	return s.schemaOf(ctx, tenant)
}

// SchemaHistory implements sgam.Schemas.
func (s *Store) SchemaHistory(ctx context.Context, tenant string) (vs []sgam.SchemaVersion, err error) {
	defer s.track("SchemaHistory", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return nil, err
	}
	defaults, err := s.d.SchemaVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	own, err := s.d.SchemaVersions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return historyOf(defaults, own), nil
}

// historyOf is a tenant's schema history: the default's versions that
// served it, then its own, which follow them.
func historyOf(defaults, own []sgam.SchemaVersion) []sgam.SchemaVersion {
	if len(own) == 0 {
		return defaults
	}
	var out []sgam.SchemaVersion
	for _, v := range defaults {
		if v.Version < own[0].Version {
			out = append(out, v)
		}
	}
	return append(out, own...)
}

// DefaultSchema implements sgam.Admin.
func (s *Store) DefaultSchema(ctx context.Context) (v sgam.SchemaVersion, err error) {
	defer s.track("DefaultSchema", s.start(), &err)
	return s.schemaOf(ctx, "")
}

func (s *Store) schemaOf(ctx context.Context, tenant string) (sgam.SchemaVersion, error) {
	h, err := s.d.SchemaHead(ctx, tenant)
	if err != nil || h.Version == 0 {
		return sgam.SchemaVersion{}, err
	}
	v, found, err := s.d.SchemaVersion(ctx, h)
	if err == nil && !found {
		err = &sgam.Error{Code: sgam.Internal, Message: "the schema version in force is not stored"}
	}
	return v, err
}

// ApplySchema implements sgam.Schemas.
func (s *Store) ApplySchema(ctx context.Context, tenant string, file []byte, dryRun bool) (v sgam.SchemaVersion, err error) {
	defer s.track("ApplySchema", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return v, err
	}
	return s.applySchema(ctx, tenant, file, dryRun)
}

// ApplyDefaultSchema implements sgam.Admin.
func (s *Store) ApplyDefaultSchema(ctx context.Context, file []byte, dryRun bool) (v sgam.SchemaVersion, err error) {
	defer s.track("ApplyDefaultSchema", s.start(), &err)
	return s.applySchema(ctx, "", file, dryRun)
}

// applySchema stores the next version of owner's schema ("" the default).
func (s *Store) applySchema(ctx context.Context, owner string, file []byte, dryRun bool) (sgam.SchemaVersion, error) {
	var next sgam.SchemaVersion
	err := s.d.Write(ctx, owner, func(tx Tx) error {
		if err := tx.LockSchemas(); err != nil {
			return err
		}
		h, err := tx.SchemaHead(owner)
		if err != nil {
			return err
		}
		cur, err := s.gov(ctx, h)
		if err != nil {
			return err
		}
		var unchanged bool
		if next, unchanged, err = ledger.NextSchema(owner, cur, file); err != nil {
			return err
		}
		now, err := tx.Instant(0)
		if err != nil {
			return err
		}
		next.AppliedAt = sgam.FromMicros(now)
		if unchanged {
			have, err := tx.SchemaVersion(h)
			next, next.Diff = have, []string{}
			return err
		}
		if dryRun {
			return nil
		}
		return tx.InsertSchema(next)
	})
	if err == nil && !dryRun {
		s.schemas.forget(owner)
	}
	return next, err
}

// Relation implements sgam.Schemas.
func (s *Store) Relation(ctx context.Context, tenant, attribute string) (ref, governed bool, err error) {
	defer s.track("Relation", s.start(), &err)
	if err := sgam.CheckTenant(tenant); err != nil {
		return false, false, err
	}
	g, err := s.readGov(ctx, tenant)
	if err != nil {
		return false, false, err
	}
	ref, governed = g.Relation(attribute)
	return ref, governed, nil
}

// schemaGroup is one schema and the tenants it serves, with its history.
type schemaGroup struct {
	gov     ledger.Gov
	scope   ledger.Scope
	history []sgam.SchemaVersion
}

// bySchema runs fn for every schema group in turn. When a batch finds
// that a schema changed under it (a *SchemaChanged: a tenant applied a
// schema since the groups were read), the groups are read again and every
// group runs again: fn must select only what is still to do (Expire and
// Migrate do), so a group that had finished finds nothing.
func (s *Store) bySchema(ctx context.Context, fn func(schemaGroup) error) error {
	for attempt := 0; ; attempt++ {
		groups, err := s.schemaGroups(ctx)
		if err != nil {
			return err
		}
		for _, g := range groups {
			if err = fn(g); err != nil {
				break
			}
		}
		var changed *SchemaChanged
		if !errors.As(err, &changed) {
			return err
		}
		s.schemas.setHeads(changed.Heads)
		if attempt == maxSchemaRetries {
			return &sgam.Error{Code: sgam.Unavailable, Message: "schemas kept changing during the run; run it again", Err: err}
		}
	}
}

// schemaGroups returns every schema in force with the tenants it serves:
// the default (every tenant without its own) and each tenant's own.
func (s *Store) schemaGroups(ctx context.Context) ([]schemaGroup, error) {
	owners, err := s.d.SchemaOwners(ctx)
	if err != nil {
		return nil, err
	}
	defaults, err := s.d.SchemaVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.d.SchemaHead(ctx, "")
	if err != nil {
		return nil, err
	}
	g, err := s.gov(ctx, h)
	if err != nil {
		return nil, err
	}
	out := []schemaGroup{{gov: g, scope: ledger.Scope{Except: owners}, history: defaults}}
	for _, t := range owners {
		own, err := s.d.SchemaVersions(ctx, t)
		if err != nil {
			return nil, err
		}
		if len(own) == 0 {
			continue
		}
		history := historyOf(defaults, own)
		last := own[len(own)-1]
		g, err := s.gov(ctx, ledger.Head{Owner: t, Version: last.Version})
		if err != nil {
			return nil, err
		}
		out = append(out, schemaGroup{gov: g, scope: ledger.Scope{Tenant: t}, history: history})
	}
	return out, nil
}
