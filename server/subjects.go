package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sgam-dev/sgam"
)

func (s *Server) key(r *http.Request, c caller) sgam.Key {
	return sgam.Key{Tenant: c.tenant, Subject: r.PathValue("subject"), Attribute: r.PathValue("attribute")}
}

// state answers GET /v1/subjects/{subject}: the subject's facts at as_of
// and known_at.
func (s *Server) state(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	a, err := at(r)
	if err != nil {
		return nil, err
	}
	facts, err := s.cfg.Store.State(r.Context(), c.tenant, r.PathValue("subject"), a)
	return map[string]any{"facts": facts}, err
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

// history answers GET /v1/subjects/{subject}/attributes/{attribute}/history.
func (s *Server) history(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	facts, err := s.cfg.Store.History(r.Context(), s.key(r, c))
	return map[string]any{"facts": facts}, err
}

// traverse answers GET /v1/subjects/{subject}/traverse: the hops from the
// subject along path (attribute names, comma-separated).
func (s *Server) traverse(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
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
}
