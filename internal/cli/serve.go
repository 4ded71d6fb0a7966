package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/server"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) serveCommand() *cobra.Command {
	var addr string
	var dev, devAllowRemote bool
	var maxBody int64
	var rateLimit float64
	var recalls int
	var expireEvery time.Duration
	var lf llmFlags
	var qf queueFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP JSON API on --addr, behind tenant-bound API keys",
		Long: `Serve the HTTP JSON API (see docs/api.md). Every request sends an API key
('Authorization: Bearer sgam_...', from 'sgam keys create'); the key decides
the tenant and the role. --dev serves without keys, as --tenant with every
right: for local use only, so it refuses an --addr that is not loopback
(127.0.0.1, ::1, localhost) unless --dev-allow-remote is given too. SIGINT
or SIGTERM stops the server after the requests in flight finish.

Inspector: /ui/ is a web inspector of the key's tenant (docs/inspector.md):
its overview, a subject's timeline on both time axes, an episode's
extractions, recall, pending candidates, forget and the schema's versions.
It signs in with an API key kept in a cookie; with --dev it needs none.

MCP: POST /mcp serves the tools of 'sgam mcp' over streamable HTTP
(stateless), bound to the tenant and role of the request's key (docs/mcp.md).

Retention: the server runs 'sgam expire' itself, once at start and then
every --expire-every (default 1h; 0 turns it off, for a deployment that runs
'sgam expire' from cron instead). Each run deletes, in every tenant, what
the schema's retention classes say has run out (docs/lifecycle.md), and is
logged with its counts. With several servers on one database, let one of
them run it (--expire-every 0 on the others).

Metrics: GET /metrics (Prometheus) has request counts and latencies by
route and status, store operation latencies
(sgam_store_operation_duration_seconds{operation,outcome}), store retries
and open connections, and expiry runs (sgam_expiry_runs_total{outcome}).

Extraction: with a model configured (SGAM_LLM_BASE_URL and SGAM_LLM_MODEL,
or the --llm flags), the server runs --workers extraction workers in process
(default 4; 0: none, for a deployment with separate 'sgam worker'
processes), and POST /v1/episodes queues what it captures for them; "extract":
"now" extracts before answering (docs/extraction.md). Without a model,
capture works and nothing is extracted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if rateLimit < 0 {
				return sgam.Errorf(sgam.Invalid, "--rate-limit", "must not be negative")
			}
			if recalls < 0 {
				return sgam.Errorf(sgam.Invalid, "--recall-concurrency", "must not be negative")
			}
			if maxBody <= 0 || maxBody > 64<<20 {
				return sgam.Errorf(sgam.Invalid, "--max-body", "must be between 1 and %d bytes", 64<<20)
			}
			if expireEvery != 0 && expireEvery < time.Second {
				return sgam.Errorf(sgam.Invalid, "--expire-every", "must be 0 (off) or at least 1s")
			}
			if devAllowRemote && !dev {
				return sgam.Errorf(sgam.Invalid, "--dev-allow-remote", "only goes with --dev")
			}
			if dev && !devAllowRemote && !loopback(addr) {
				return sgam.Errorf(sgam.Invalid, "--addr", "%q is not a loopback address: --dev serves without keys, to anyone who can connect; "+
					"listen on 127.0.0.1, ::1 or localhost, or give --dev-allow-remote to serve beyond this machine anyway", addr)
			}
			if err := qf.check(); err != nil {
				return err
			}
			model, err := lf.get()
			if err != nil {
				return err
			}
			metrics := server.NewMetrics()
			s, err := store.Open(a.ctx, a.db, store.Options{Observer: metrics})
			if err != nil {
				return err
			}
			defer s.Close()
			log := slog.New(slog.NewJSONHandler(a.stderr, nil))
			rc, err := a.recaller(s)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("recall-concurrency") {
				recalls = recall.DefaultConcurrency(store.IsPostgres(a.db))
			}
			rc.WithConcurrency(recalls)
			h, err := server.New(server.Config{Store: s, Version: version(), Extractor: extract.New(s, model), Recaller: rc, Dev: dev, DevTenant: a.tenant,
				MaxBodyBytes: maxBody, RateLimit: rateLimit, ExpireEvery: expireEvery, Logger: log, Metrics: metrics})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "--addr", "cannot listen on %s: %v", addr, err)
			}
			if model != nil && qf.workers > 0 {
				q, err := a.openQueue(s, model, qf)
				if err != nil {
					ln.Close()
					return err
				}
				if err := q.Start(a.ctx); err != nil {
					ln.Close()
					q.Stop(context.Background())
					return err
				}
				// Stopped after the HTTP server and before the store
				// closes (deferred above, so run after this).
				defer stopQueue(q, qf.grace)
				log.Info("extraction workers started", slog.Int("workers", qf.workers), slog.String("model", model.Name()), slog.String("mode", string(model.Mode())))
			} else if model == nil {
				log.Info("no model is configured: episodes are captured, nothing is extracted")
			}
			if dev {
				log.Warn("DEV MODE: no API keys are checked; every request acts as tenant " + a.tenant + " with every right. Do not expose this server.")
			}
			log.Info("serving", slog.String("addr", ln.Addr().String()))
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute}
			ctx, stop := signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// The expiry ticker stops, and is waited for, before the store
			// closes (deferred above, so run after this).
			ectx, stopExpiry := context.WithCancel(ctx)
			expiryDone := make(chan struct{})
			go func() { defer close(expiryDone); h.RunExpiry(ectx) }()
			defer func() { stopExpiry(); <-expiryDone }()
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			log.Info("shutting down: finishing requests in flight")
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = srv.Shutdown(sctx)
			// Immediate extractions that outlived their requests get the
			// grace too; the rest go to the workers.
			gctx, gcancel := context.WithTimeout(context.Background(), qf.grace)
			h.Close(gctx)
			gcancel()
			if err != nil {
				return fmt.Errorf("shutdown: %w", err)
			}
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:7420", "address to listen on")
	c.Flags().BoolVar(&dev, "dev", false, "serve without API keys, as --tenant (local use only: a loopback --addr)")
	c.Flags().BoolVar(&devAllowRemote, "dev-allow-remote", false, "with --dev, allow an --addr that is not loopback (anyone who can connect has every right)")
	c.Flags().Int64Var(&maxBody, "max-body", 1<<20, "largest request body in bytes")
	c.Flags().Float64Var(&rateLimit, "rate-limit", 200, "requests per second per API key, bursts of twice that (0: no limit)")
	c.Flags().DurationVar(&expireEvery, "expire-every", time.Hour, "run retention expiry at start and then this often (0: off)")
	c.Flags().IntVar(&recalls, "recall-concurrency", 0, "recalls computed at once; the others wait their turn, first come first served (default: the cores on SQLite, twice the cores on PostgreSQL; 0: no bound)")
	lf.add(c)
	qf.add(c, 4)
	return c
}

// loopback reports whether addr (host:port) listens only on this machine:
// a loopback IP or localhost. An empty host is every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false // not host:port, so not a loopback address either
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
