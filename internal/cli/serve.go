package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
	"github.com/sgam-dev/sgam/server"
)

func (a *app) serveCommand() *cobra.Command {
	var addr string
	var dev bool
	var maxBody int64
	var rateLimit float64
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP JSON API on --addr, behind tenant-bound API keys",
		Long: `Serve the HTTP JSON API (see docs/api.md). Every request sends an API key
('Authorization: Bearer sgam_...', from 'sgam keys create'); the key decides
the tenant and the role. --dev serves without keys, as --tenant with every
right: for local use only. SIGINT or SIGTERM stops the server after the
requests in flight finish.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if rateLimit < 0 {
				return sgam.Errorf(sgam.Invalid, "--rate-limit", "must not be negative")
			}
			if maxBody <= 0 || maxBody > 64<<20 {
				return sgam.Errorf(sgam.Invalid, "--max-body", "must be between 1 and %d bytes", 64<<20)
			}
			s, err := a.open(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			keys, _ := s.(apikey.Store)
			log := slog.New(slog.NewJSONHandler(a.stderr, nil))
			h, err := server.New(server.Config{Store: s, Keys: keys, Dev: dev, DevTenant: a.tenant, MaxBodyBytes: maxBody, RateLimit: rateLimit, Logger: log})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return sgam.Errorf(sgam.Invalid, "--addr", "cannot listen on %s: %v", addr, err)
			}
			if dev {
				log.Warn("DEV MODE: no API keys are checked; every request acts as tenant " + a.tenant + " with every right. Do not expose this server.")
			}
			log.Info("serving", slog.String("addr", ln.Addr().String()))
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute}
			ctx, stop := signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
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
			if err := srv.Shutdown(sctx); err != nil {
				return fmt.Errorf("shutdown: %w", err)
			}
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:7420", "address to listen on")
	c.Flags().BoolVar(&dev, "dev", false, "serve without API keys, as --tenant (local use only)")
	c.Flags().Int64Var(&maxBody, "max-body", 1<<20, "largest request body in bytes")
	c.Flags().Float64Var(&rateLimit, "rate-limit", 200, "requests per second per API key, bursts of twice that (0: no limit)")
	return c
}
