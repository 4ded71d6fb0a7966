// Package server is sgam's HTTP JSON API: every route of the ledger behind
// tenant-bound API keys. The tenant of a request always comes from its key
// (or, with Dev, from the server's configuration), never from the body or
// the path, so a key of one tenant finds nothing of another: a 404, as if it
// did not exist.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/inspector"
	"github.com/sgam-dev/sgam/recall"
)

// Config configures a Server.
type Config struct {
	Store sgam.Store
	// Version is the build's version, as /healthz and the MCP server's
	// initialize answer say it (default "(devel)"): what a client checks
	// its compatibility against.
	Version string
	// Extractor extracts episodes posted with "extract": "now" (the
	// immediate path of package ingest, ended by Close); nil (or one
	// without a model) makes "none" the default.
	Extractor *extract.Extractor
	// Recaller answers POST /v1/recall; nil makes one over Store on Clock.
	Recaller *recall.Recaller
	// Dev serves without keys, every request as tenant DevTenant with the
	// admin role. For local use only.
	Dev       bool
	DevTenant string
	// MaxBodyBytes bounds request bodies; default 1 MiB.
	MaxBodyBytes int64
	// Timeout bounds each request; default 30 s.
	Timeout time.Duration
	// RateLimit is each key's sustained requests per second (bursts of
	// twice that); 0 is no limit.
	RateLimit float64
	// KeyCacheTTL is how long a checked API key is trusted without looking
	// it up again, so also how long a key revoked elsewhere keeps working;
	// default 1 s, negative: look every key up on every request.
	KeyCacheTTL time.Duration
	// ExpireEvery is the period of RunExpiry; 0 turns it off.
	ExpireEvery time.Duration
	// Metrics are the collectors /metrics serves; nil makes new ones. Give
	// the store the same as its Observer to see its operations there.
	Metrics *Metrics
	Logger  *slog.Logger
	Clock   sgam.Clock
}

// Server is the HTTP API.
type Server struct {
	cfg Config
	mux *http.ServeMux
	// routes maps each registered pattern ("GET /v1/schema") to the role it
	// needs ("" for none): what the OpenAPI document must say.
	routes map[string]sgam.Role
	// params maps each pattern registered with route to the query
	// parameters it takes (none: nil); any other is refused.
	params  map[string][]string
	limits  *limiters
	keys    *keyCache // nil: off
	metrics *Metrics
	ingest  *ingest.Ingester
}

// New returns the API's handler.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if cfg.Dev && cfg.DevTenant == "" {
		cfg.DevTenant = sgam.DefaultTenant
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = sgam.SystemClock{}
	}
	if cfg.Recaller == nil {
		cfg.Recaller = recall.New(cfg.Store).WithClock(cfg.Clock)
	}
	if cfg.KeyCacheTTL == 0 {
		cfg.KeyCacheTTL = time.Second
	}
	if cfg.ExpireEvery < 0 {
		return nil, errors.New("server: negative ExpireEvery")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), routes: map[string]sgam.Role{},
		params: map[string][]string{}, limits: newLimiters(cfg.RateLimit), keys: newKeyCache(cfg.KeyCacheTTL), metrics: cfg.Metrics}
	s.metrics.watch(cfg.Store)
	s.ingest = ingest.New(cfg.Store, cfg.Extractor)
	ui, err := inspector.New(inspector.Config{Store: cfg.Store, Recaller: cfg.Recaller, Dev: cfg.Dev, DevTenant: cfg.DevTenant,
		Clock: cfg.Clock, Logger: cfg.Logger, Allow: s.limits.allow, Authenticate: func(ctx context.Context, token string) (inspector.Caller, error) {
			c, err := s.authenticateToken(ctx, token)
			return inspector.Caller{Tenant: c.tenant, Role: c.role, KeyID: c.keyID}, err
		}})
	if err != nil {
		return nil, err
	}
	s.register(ui)
	return s, nil
}

// Close ends the server's immediate extractions that outlived their
// requests: they get until ctx ends to finish, then give their episodes to
// the extraction workers. Call it after the HTTP server has shut down.
func (s *Server) Close(ctx context.Context) { s.ingest.Close(ctx) }

// caller is who a request acts as.
type caller struct {
	tenant string
	role   sgam.Role
	keyID  string
}

// handler is a route's work: it returns the value to encode (status 200,
// or a withStatus) or an error.
type handler func(w http.ResponseWriter, r *http.Request, c caller) (any, error)

// withStatus is an answer sent with a status other than 200.
type withStatus struct {
	code int
	body any
}

// route registers pattern, needing role need ("": no key at all) and
// taking the query parameters params (any other is refused).
func (s *Server) route(pattern string, need sgam.Role, h handler, params ...string) {
	s.routes[pattern] = need
	s.params[pattern] = params
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.admit(w, r, need)
		if !ok {
			return
		}
		var v any
		err := query(r, params)
		if err == nil {
			v, err = h(w, r, c)
		}
		internal := func(err error) { // the caller only sees "internal error"
			s.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String("request_id", w.Header().Get("X-Request-Id")),
				slog.String("route", pattern), slog.String("error", err.Error()))
		}
		if err != nil {
			if st, _ := errorResponse(err); st == http.StatusInternalServerError {
				internal(err)
			}
			writeError(w, err)
			return
		}
		code := http.StatusOK
		if ws, ok := v.(withStatus); ok {
			code, v = ws.code, ws.body
		}
		if err := writeJSON(w, code, v); err != nil {
			internal(err)
		}
	})
}

// admit authenticates r for a route needing role need ("": no key at all),
// takes a token of the key's rate limit and bounds the body. When it
// refuses, it has answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, need sgam.Role) (caller, bool) {
	var c caller
	if need != "" {
		var err error
		if c, err = s.authenticate(r); err == nil {
			err = c.role.Require(need)
		}
		if err != nil {
			writeError(w, err)
			return c, false
		}
		if wait, ok := s.limits.allow(c.keyID); !ok {
			tooMany(w, wait)
			return c, false
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	return c, true
}

// authenticate returns the caller of r from its bearer key.
func (s *Server) authenticate(r *http.Request) (caller, error) {
	if s.cfg.Dev {
		return caller{tenant: s.cfg.DevTenant, role: sgam.RoleAdmin}, nil
	}
	// One key, or none: of two, a proxy and the server might each honour
	// a different one.
	if n := len(r.Header.Values("Authorization")); n > 1 {
		return caller{}, sgam.Errorf(sgam.Unauthenticated, "authorization", "send one Authorization header, not %d", n)
	}
	// The scheme is case-insensitive (RFC 9110, 11.1): "bearer" is Bearer.
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return caller{}, sgam.Errorf(sgam.Unauthenticated, "authorization", "send the API key as 'Authorization: Bearer sgam_...'")
	}
	return s.authenticateToken(r.Context(), token)
}

// authenticateToken checks an API key, through the key cache.
func (s *Server) authenticateToken(ctx context.Context, token string) (caller, error) {
	token = strings.TrimSpace(token)
	now := time.Now()
	k, ok := s.keys.get(token, now)
	if !ok {
		var err error
		if k, err = s.cfg.Store.Authenticate(ctx, token); err != nil {
			return caller{}, err
		}
		s.keys.put(token, k, now)
	}
	return caller{tenant: k.Tenant, role: k.Role, keyID: k.ID}, nil
}

// ServeHTTP serves the API with a request id, a timeout and a log line per
// request. The line names the route, never the caller's path: paths hold
// subject and episode ids, which must not outlive a forget in the log.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		var b [8]byte
		rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", id)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r = r.WithContext(ctx)
	s.mux.ServeHTTP(rec, r)
	route := r.Pattern // set by the mux: the route, never the caller's path
	if route == "" || route == unmatched {
		route = "unmatched"
	}
	s.metrics.observe(route, rec.status, time.Since(start))
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("request_id", id), slog.String("method", r.Method),
		slog.String("route", route), slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer underneath, so that a
// handler can Flush (or set deadlines) through the recorder.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
