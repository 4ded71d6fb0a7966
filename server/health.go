package server

import (
	_ "embed"
	"net/http"

	"github.com/sgam-dev/sgam"
)

//go:embed openapi.json
var openAPI []byte

// serveOpenAPI answers GET /openapi.json with the API's OpenAPI document.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}

// healthz answers GET /healthz: the server is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ caller) (any, error) {
	return Health{OK: true, Version: s.version()}, nil
}

// Health is the answer of GET /healthz.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
}

func (s *Server) version() string {
	if s.cfg.Version == "" {
		return "(devel)"
	}
	return s.cfg.Version
}

// readyz answers GET /readyz: the server is up and its store reachable.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ caller) (any, error) {
	if _, err := s.cfg.Store.DefaultSchema(r.Context()); err != nil {
		return nil, &sgam.Error{Code: sgam.Unavailable, Message: "the store is not reachable", Err: err}
	}
	return map[string]bool{"ok": true}, nil
}
