package server

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/replay"
)

//go:embed openapi.json
var openAPI []byte

func (s *Server) register() {
	s.routes["GET /openapi.json"] = ""
	s.mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	s.routes["GET /metrics"] = ""
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	s.route("GET /healthz", "", func(w http.ResponseWriter, r *http.Request, _ caller) (any, error) {
		return map[string]bool{"ok": true}, nil
	})
	s.route("GET /readyz", "", func(w http.ResponseWriter, r *http.Request, _ caller) (any, error) {
		if _, err := s.cfg.Store.DefaultSchema(r.Context()); err != nil {
			return nil, &sgam.Error{Code: sgam.Unavailable, Message: "the store is not reachable", Err: err}
		}
		return map[string]bool{"ok": true}, nil
	})

	s.route("POST /v1/episodes", sgam.RoleWrite, s.addEpisode)
	s.route("GET /v1/episodes", sgam.RoleRead, s.listEpisodes, "session", "limit")
	s.route("GET /v1/episodes/{id}", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		return s.cfg.Store.Episode(r.Context(), c.tenant, r.PathValue("id"))
	})
	s.route("GET /v1/episodes/{id}/extractions", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		recs, err := s.cfg.Store.Extractions(r.Context(), c.tenant, r.PathValue("id"))
		return map[string]any{"extractions": recs}, err
	})

	s.route("POST /v1/facts", sgam.RoleWrite, s.assert)
	s.route("POST /v1/facts/retract", sgam.RoleWrite, s.retract)
	s.route("GET /v1/facts/{id}/trace", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id <= 0 {
			return nil, sgam.Errorf(sgam.Invalid, "fact_id", "%q is not a fact id", r.PathValue("id"))
		}
		return s.cfg.Store.Trace(r.Context(), c.tenant, id)
	})
	s.route("POST /v1/recall", sgam.RoleRead, s.recall)
	s.route("GET /v1/subjects/{subject}", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		a, err := at(r)
		if err != nil {
			return nil, err
		}
		facts, err := s.cfg.Store.State(r.Context(), c.tenant, r.PathValue("subject"), a)
		return map[string]any{"facts": facts}, err
	}, "as_of", "known_at")
	s.route("GET /v1/subjects/{subject}/attributes/{attribute}", sgam.RoleRead, s.get, "as_of", "known_at")
	s.route("GET /v1/subjects/{subject}/attributes/{attribute}/history", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		facts, err := s.cfg.Store.History(r.Context(), s.key(r, c))
		return map[string]any{"facts": facts}, err
	})
	s.moreRoutes()
	s.mountMCP()
	s.methodNotAllowed()
	s.notFound()
}

// unmatched is the pattern of notFound's handler, which serves every path
// no route does; requests it answers are logged and counted as route
// "unmatched".
const unmatched = "/"

// notFound answers a path that no route serves with 404 and the JSON
// error body (the mux's own answer is text/plain). "/" is the least
// specific pattern, so it only catches what nothing else does: the routes,
// their 405s, /ui/ and the redirect of /ui to it all win over it.
func (s *Server) notFound() {
	s.mux.HandleFunc(unmatched, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorBody{sgam.ErrorDetail{Code: sgam.NotFound, Field: "path",
			Message: "no route serves this path; the routes are listed in GET /openapi.json"}})
	})
}

// query checks the query string of r against the parameters its route
// takes, as bodies are checked: a parameter the route does not take, a
// parameter in another case than its own (As_Of is not as_of), one given
// twice, or a query string that does not parse is refused, naming the
// parameter. After it, r.URL.Query() holds each parameter at most once.
func query(r *http.Request, takes []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return sgam.Errorf(sgam.Invalid, "query", "is not a valid query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case name == "":
			return sgam.Errorf(sgam.Invalid, "query", "has a parameter with no name")
		case len(name) > 64 || !utf8.ValidString(name):
			return sgam.Errorf(sgam.Invalid, "query", "has an unknown parameter %.64q", name)
		case !slices.Contains(takes, name):
			for _, t := range takes {
				if strings.EqualFold(t, name) {
					return sgam.Errorf(sgam.Invalid, name, "is not a parameter: parameter names are case-sensitive (the parameter is %q)", t)
				}
			}
			if len(takes) == 0 {
				return sgam.Errorf(sgam.Invalid, name, "is not a parameter of this route, which takes none")
			}
			return sgam.Errorf(sgam.Invalid, name, "is not a parameter of this route, which takes %s", strings.Join(takes, ", "))
		case len(q[name]) > 1:
			return sgam.Errorf(sgam.Invalid, name, "is given %d times; give it once", len(q[name]))
		}
	}
	return nil
}

// methodNotAllowed answers a method that a path does not serve with 405,
// the Allow header and the JSON error body: the mux's own answer is
// text/plain. A pattern without a method is less specific than those with
// one, so it only catches the methods no route takes.
func (s *Server) methodNotAllowed() {
	methods := map[string][]string{}
	for pattern := range s.routes {
		method, path, _ := strings.Cut(pattern, " ")
		methods[path] = append(methods[path], method)
		if method == http.MethodGet {
			methods[path] = append(methods[path], http.MethodHead) // a GET pattern serves HEAD too
		}
	}
	for path, allowed := range methods {
		sort.Strings(allowed)
		allow := strings.Join(allowed, ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{sgam.ErrorDetail{Code: sgam.Invalid, Field: "method",
				Message: fmt.Sprintf("%s is not a method of %s; it takes %s", r.Method, path, allow)}})
		})
	}
}

func (s *Server) key(r *http.Request, c caller) sgam.Key {
	return sgam.Key{Tenant: c.tenant, Subject: r.PathValue("subject"), Attribute: r.PathValue("attribute")}
}

// RecallRequest is the body of POST /v1/recall: recall.Query's fields.
// Zero fields take recall's defaults; -1 turns evidence_limit or hops off.
type RecallRequest struct {
	Question      string   `json:"question"`
	Subjects      []string `json:"subjects"`
	Attributes    []string `json:"attributes"`
	AsOf          string   `json:"as_of"`
	KnownAt       string   `json:"known_at"`
	Budget        int      `json:"budget"`
	EvidenceLimit int      `json:"evidence_limit"`
	Hops          int      `json:"hops"`
	Session       string   `json:"session"`
}

// recall answers POST /v1/recall with a recall.Context.
func (s *Server) recall(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	var req RecallRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	q := recall.Query{Tenant: c.tenant, Question: req.Question, Subjects: req.Subjects, Attributes: req.Attributes,
		TokenBudget: req.Budget, EvidenceLimit: req.EvidenceLimit, Hops: req.Hops, Session: req.Session}
	var err error
	if q.AsOf, err = optTime("as_of", req.AsOf); err != nil {
		return nil, err
	}
	if q.KnownAt, err = optTime("known_at", req.KnownAt); err != nil {
		return nil, err
	}
	return s.cfg.Recaller.Recall(r.Context(), q)
}

// EpisodeRequest is the body of POST /v1/episodes.
type EpisodeRequest struct {
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     string          `json:"occurred_at"`
	Metadata       json.RawMessage `json:"metadata"`
	IdempotencyKey string          `json:"idempotency_key"`
	Retention      string          `json:"retention"`
	Subjects       []string        `json:"subjects"`
	// Extract is "background" (queued for the workers; the default when
	// a model is configured), "now" (extracted before the answer, which
	// holds the record) or "none" (the default without a model).
	Extract string `json:"extract"`
}

// EpisodeResponse is the answer of POST /v1/episodes: the episode as
// stored, whether it was queued for extraction, and the extraction's
// record when it was extracted now.
type EpisodeResponse struct {
	sgam.Episode
	Queued     bool             `json:"queued"`
	Extraction *sgam.Extraction `json:"extraction,omitempty"`
}

func (s *Server) addEpisode(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	var req EpisodeRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	occurred, err := optTime("occurred_at", req.OccurredAt)
	if err != nil {
		return nil, err
	}
	if string(req.Metadata) == "null" {
		req.Metadata = nil
	}
	mode, err := s.ingest.Mode(req.Extract)
	if err != nil {
		return nil, err
	}
	e := sgam.Episode{Tenant: c.tenant, ID: req.EpisodeID, Session: req.Session, Kind: req.Kind, Content: req.Content, OccurredAt: occurred,
		Metadata: req.Metadata, IdempotencyKey: req.IdempotencyKey, Retention: req.Retention, Subjects: req.Subjects}
	ctx := r.Context()
	if dl, ok := ctx.Deadline(); ok && mode == ingest.ModeNow {
		// Extracting now, answer before the request's own deadline cuts
		// it off: the extraction goes on.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-min(time.Second, time.Until(dl)/10)))
		defer cancel()
	}
	res, err := s.ingest.Capture(ctx, e, mode)
	if err != nil {
		return nil, err
	}
	out := EpisodeResponse{Episode: res.Episode, Queued: res.Queued, Extraction: res.Record}
	if mode == ingest.ModeNow && res.Record == nil {
		// The extraction outlived the request (a model slower than the
		// server's timeout, a client that went away).
		return withStatus{http.StatusAccepted, out}, nil
	}
	return out, nil
}

// maxLimit is the largest limit of a list (sgam.EpisodeQuery's).
const maxLimit = 10000

func (s *Server) listEpisodes(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	q := sgam.EpisodeQuery{Tenant: c.tenant, Session: r.URL.Query().Get("session")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return nil, sgam.Errorf(sgam.Invalid, "limit", "%q is not a number", l)
		}
		if n < 1 || n > maxLimit { // 0 is refused too: leave limit out for the default
			return nil, sgam.Errorf(sgam.Invalid, "limit", "must be between 1 and %d, not %d", maxLimit, n)
		}
		q.Limit = n
	}
	eps, err := s.cfg.Store.Episodes(r.Context(), q)
	return map[string]any{"episodes": eps}, err
}

// AssertRequest is the body of POST /v1/facts.
type AssertRequest struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	Value     json.RawMessage `json:"value"`
	ValidFrom string          `json:"valid_from"`
	Source    string          `json:"source"`
}

// assertion decodes an AssertRequest within the caller's tenant.
func assertion(r *http.Request, c caller) (sgam.Assertion, error) {
	var req AssertRequest
	if err := decode(r, &req); err != nil {
		return sgam.Assertion{}, err
	}
	vf, err := sgam.ParseTime("valid_from", req.ValidFrom)
	return sgam.Assertion{Key: sgam.Key{Tenant: c.tenant, Subject: req.Subject, Attribute: req.Attribute},
		Value: req.Value, ValidFrom: vf, Source: req.Source}, err
}

func (s *Server) assert(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	a, err := assertion(r, c)
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.Assert(r.Context(), a)
}

// RetractRequest is the body of POST /v1/facts/retract.
type RetractRequest struct {
	Subject   string          `json:"subject"`
	Attribute string          `json:"attribute"`
	At        string          `json:"at"`
	Source    string          `json:"source"`
	Value     json.RawMessage `json:"value,omitempty"` // a set's member
}

// retraction decodes a RetractRequest within the caller's tenant.
func retraction(r *http.Request, c caller) (sgam.Retraction, error) {
	var req RetractRequest
	if err := decode(r, &req); err != nil {
		return sgam.Retraction{}, err
	}
	t, err := sgam.ParseTime("at", req.At)
	return sgam.Retraction{Key: sgam.Key{Tenant: c.tenant, Subject: req.Subject, Attribute: req.Attribute},
		At: t, Source: req.Source, Value: req.Value}, err
}

func (s *Server) retract(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	rt, err := retraction(r, c)
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.Retract(r.Context(), rt)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	a, err := at(r)
	if err != nil {
		return nil, err
	}
	f, err := s.cfg.Store.Get(r.Context(), s.key(r, c), a)
	if errors.Is(err, sgam.ErrSet) {
		members, err := s.cfg.Store.Members(r.Context(), s.key(r, c), a)
		return map[string]any{"facts": members}, err
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"fact": f}, nil
}

func (s *Server) moreRoutes() {
	s.route("POST /v1/sets/add", sgam.RoleWrite, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		a, err := assertion(r, c)
		if err != nil {
			return nil, err
		}
		return s.cfg.Store.Add(r.Context(), a)
	})
	s.route("POST /v1/sets/remove", sgam.RoleWrite, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		rt, err := retraction(r, c)
		if err != nil {
			return nil, err
		}
		return s.cfg.Store.Remove(r.Context(), rt)
	})
	s.route("GET /v1/subjects/{subject}/traverse", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		a, err := at(r)
		if err != nil {
			return nil, err
		}
		var path []string
		if p := r.URL.Query().Get("path"); p != "" {
			path = strings.Split(p, ",")
		}
		hops, err := sgam.Traverse(r.Context(), s.cfg.Store, s.cfg.Clock, c.tenant, r.PathValue("subject"), path, a)
		return map[string]any{"hops": hops}, err
	}, "path", "as_of", "known_at")

	s.route("GET /v1/pending", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		cs, err := s.cfg.Store.Pending(r.Context(), sgam.PendingQuery{Tenant: c.tenant, Subject: r.URL.Query().Get("subject")})
		return map[string]any{"candidates": cs}, err
	}, "subject")
	s.route("POST /v1/pending/{id}/confirm", sgam.RoleWrite, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		var req ConfirmRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.cfg.Store.Confirm(r.Context(), c.tenant, r.PathValue("id"), req.EpisodeID)
	})
	s.route("POST /v1/pending/{id}/dismiss", sgam.RoleWrite, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		if err := noFields(r); err != nil {
			return nil, err
		}
		return map[string]bool{"ok": true}, s.cfg.Store.Dismiss(r.Context(), c.tenant, r.PathValue("id"))
	})

	s.route("POST /v1/forget", sgam.RoleAdmin, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		var req ForgetRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		if err := req.check(); err != nil {
			return nil, err
		}
		actor := "api"
		if c.keyID != "" {
			actor = "key:" + c.keyID
		}
		rc, err := s.cfg.Store.Forget(r.Context(), sgam.ForgetRequest{Tenant: c.tenant, Subject: req.Subject, Episode: req.EpisodeID, All: req.All, Actor: actor})
		// The store names the episode "episode"; this request names it episode_id.
		return rc, sgam.RenameField(err, "episode", "episode_id")
	})
	s.route("GET /v1/receipts", sgam.RoleAdmin, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		rs, err := s.cfg.Store.Receipts(r.Context(), c.tenant)
		return map[string]any{"receipts": rs}, err
	})

	// A key reads and applies its own tenant's schema; the store-wide
	// default is the operator's, set only through the CLI.
	s.route("GET /v1/schema", sgam.RoleRead, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		v, err := s.cfg.Store.Schema(r.Context(), c.tenant)
		if err != nil {
			return nil, err
		}
		return schemaAnswer(v), nil
	})
	s.route("POST /v1/schema", sgam.RoleAdmin, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		body, err := readBody(r)
		if err != nil {
			return nil, err
		}
		dry := r.URL.Query().Get("dry_run")
		if dry != "" && dry != "true" && dry != "false" {
			return nil, sgam.Errorf(sgam.Invalid, "dry_run", "must be true or false")
		}
		v, err := s.cfg.Store.ApplySchema(r.Context(), c.tenant, body, dry == "true")
		if err != nil {
			return nil, err
		}
		return schemaAnswer(v), nil
	}, "dry_run")

	s.route("POST /v1/replay", sgam.RoleAdmin, func(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
		body, err := readBody(r)
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		runner := &replay.Runner{Store: s.cfg.Store, Tenant: c.tenant, OnlyTenant: true}
		st, err := runner.Run(r.Context(), bytes.NewReader(body), &out)
		if err != nil {
			return nil, err
		}
		results := []json.RawMessage{} // [] for a script of no lines, never null
		for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
			if len(line) > 0 {
				results = append(results, line)
			}
		}
		return map[string]any{"lines": st.Lines, "failed": st.Failed, "results": results}, nil
	})
}

// ConfirmRequest is the body of POST /v1/pending/{id}/confirm.
type ConfirmRequest struct {
	EpisodeID string `json:"episode_id"` // the episode that confirms the candidate
}

// ForgetRequest is the body of POST /v1/forget: exactly one of Subject,
// EpisodeID and All.
type ForgetRequest struct {
	Subject   string `json:"subject"`
	EpisodeID string `json:"episode_id"`
	All       bool   `json:"all"`
}

// check refuses a request naming more than one thing to forget, in the
// request's own field names (the store checks the rest).
func (req ForgetRequest) check() error {
	var given []string
	for _, f := range []struct {
		set  bool
		name string
	}{{req.Subject != "", "subject"}, {req.EpisodeID != "", "episode_id"}, {req.All, "all"}} {
		if f.set {
			given = append(given, f.name)
		}
	}
	if len(given) > 1 {
		return sgam.Errorf(sgam.Invalid, given[1], "forget one thing at a time: a subject, an episode (episode_id), or the whole tenant (all), not both %s and %s", given[0], given[1])
	}
	return nil
}

// noFields reads the body of a route that takes none: empty, or an
// empty JSON object ({}). Anything else is refused as decode refuses a
// bad body: a field (none is one of this request), or text that is not a
// JSON object.
func noFields(r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' { // decode would take null for {}
		return sgam.Errorf(sgam.Invalid, "body", "must be empty or {}: this request has no fields")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decode(r, &struct{}{})
}

// SchemaAnswer is a schema version as GET and POST /v1/schema answer it.
// A tenant served by no schema at all is served by the store default's
// version 0, none: store_default is set, and applied_at, never applied,
// left out rather than answered as the zero instant.
type SchemaAnswer struct {
	sgam.SchemaVersion
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

func schemaAnswer(v sgam.SchemaVersion) SchemaAnswer {
	if v.Tenant == "" {
		v.StoreDefault = true
	}
	out := SchemaAnswer{SchemaVersion: v}
	if !v.AppliedAt.IsZero() {
		out.AppliedAt = &v.AppliedAt
	}
	return out
}
