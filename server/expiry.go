package server

import (
	"context"
	"log/slog"
	"time"
)

// RunExpiry runs Store.Expire over every tenant once right away and then every
// Config.ExpireEvery, until ctx ends; it returns at once when ExpireEvery is
// 0. Runs never overlap: a run longer than the period delays the next. Each
// run is logged (counts only: no ids, no content) and counted in
// sgam_expiry_runs_total{outcome}. The caller owns the goroutine: start it
// beside the HTTP server, and end ctx (and wait for RunExpiry to return)
// before closing the store. With several servers on one database, one of
// them is enough.
func (s *Server) RunExpiry(ctx context.Context) {
	if s.cfg.ExpireEvery <= 0 {
		return
	}
	t := time.NewTicker(s.cfg.ExpireEvery)
	defer t.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		s.expireOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expireOnce runs Store.Expire once, logging and counting the run.
func (s *Server) expireOnce(ctx context.Context) {
	start := time.Now()
	rcs, err := s.cfg.Store.Expire(ctx)
	tenants := map[string]bool{}
	var episodes, facts, retained, pending int
	for _, rc := range rcs {
		tenants[rc.Tenant] = true
		episodes += rc.EpisodesDeleted
		facts += rc.FactsDeleted
		retained += rc.FactsRetained
		pending += rc.PendingDeleted
	}
	s.metrics.expired.episodes.Add(float64(episodes))
	s.metrics.expired.facts.Add(float64(facts))
	attrs := []slog.Attr{slog.Int("tenants", len(tenants)), slog.Int("receipts", len(rcs)), slog.Int("episodes_deleted", episodes),
		slog.Int("facts_deleted", facts), slog.Int("facts_retained", retained), slog.Int("pending_deleted", pending),
		slog.Duration("duration", time.Since(start))}
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped by the shutdown: what was done is committed whole
		// (expiry works in transactions), the rest waits for the next start.
		s.cfg.Logger.LogAttrs(context.Background(), slog.LevelInfo, "expiry stopped", attrs...)
	case err != nil:
		s.metrics.expiryRuns.failed.Inc()
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "expiry failed", append(attrs, slog.String("error", err.Error()))...)
	default:
		s.metrics.expiryRuns.ok.Inc()
		s.metrics.expiryLast.Set(float64(time.Now().UnixNano()) / 1e9)
		s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "expiry", attrs...)
	}
}
