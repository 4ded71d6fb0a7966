package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/inspector"
)

// register lists every route of the API: its pattern, the role it needs
// ("": no key at all), its handler (in the file of its resource) and the
// query parameters it takes. Then the inspector's pages, and the 405s and
// 404s of what no route serves.
func (s *Server) register(ui http.Handler) {
	// The API itself (health.go, metrics.go).
	s.handle("GET /openapi.json", "", http.HandlerFunc(serveOpenAPI))
	s.handle("GET /metrics", "", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	s.route("GET /healthz", "", s.healthz)
	s.route("GET /readyz", "", s.readyz)

	// episodes.go
	s.route("POST /v1/episodes", sgam.RoleWrite, s.addEpisode)
	s.route("GET /v1/episodes", sgam.RoleRead, s.listEpisodes, "session", "limit")
	s.route("GET /v1/episodes/{id}", sgam.RoleRead, s.episode)
	s.route("GET /v1/episodes/{id}/extractions", sgam.RoleRead, s.extractions)

	// facts.go
	s.route("POST /v1/facts", sgam.RoleWrite, s.assert)
	s.route("POST /v1/facts/retract", sgam.RoleWrite, s.retract)
	s.route("GET /v1/facts/{id}/trace", sgam.RoleRead, s.trace)

	// recall.go
	s.route("POST /v1/recall", sgam.RoleRead, s.recall)

	// subjects.go
	s.route("GET /v1/subjects/{subject}", sgam.RoleRead, s.state, "as_of", "known_at")
	s.route("GET /v1/subjects/{subject}/attributes/{attribute}", sgam.RoleRead, s.get, "as_of", "known_at")
	s.route("GET /v1/subjects/{subject}/attributes/{attribute}/history", sgam.RoleRead, s.history)
	s.route("GET /v1/subjects/{subject}/traverse", sgam.RoleRead, s.traverse, "path", "as_of", "known_at")

	// sets.go
	s.route("POST /v1/sets/add", sgam.RoleWrite, s.addMember)
	s.route("POST /v1/sets/remove", sgam.RoleWrite, s.removeMember)

	// pending.go
	s.route("GET /v1/pending", sgam.RoleRead, s.pending, "subject")
	s.route("POST /v1/pending/{id}/confirm", sgam.RoleWrite, s.confirm)
	s.route("POST /v1/pending/{id}/dismiss", sgam.RoleWrite, s.dismiss)

	// forget.go
	s.route("POST /v1/forget", sgam.RoleAdmin, s.forget)
	s.route("GET /v1/receipts", sgam.RoleAdmin, s.receipts)

	// schema.go
	s.route("GET /v1/schema", sgam.RoleRead, s.schema)
	s.route("POST /v1/schema", sgam.RoleAdmin, s.applySchema, "dry_run")

	// replay.go
	s.route("POST /v1/replay", sgam.RoleAdmin, s.replay)

	// mcp.go
	s.handle("POST /mcp", sgam.RoleRead, s.mcp())

	// The inspector's pages (package inspector), with keys of their own:
	// not a route of the API.
	s.mux.Handle(inspector.Prefix, ui)

	s.methodNotAllowed()
	s.notFound()
}

// handle registers pattern, needing role need ("": no key at all), served
// by a handler of its own: one that checks its key itself (need is what
// the OpenAPI document must say) and takes no query parameters that route
// checks.
func (s *Server) handle(pattern string, need sgam.Role, h http.Handler) {
	s.routes[pattern] = need
	s.mux.Handle(pattern, h)
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
