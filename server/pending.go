package server

import (
	"net/http"

	"github.com/sgam-dev/sgam"
)

// ConfirmRequest is the body of POST /v1/pending/{id}/confirm.
type ConfirmRequest struct {
	EpisodeID string `json:"episode_id"` // the episode that confirms the candidate
}

// pending answers GET /v1/pending: the candidates held back from becoming
// facts, of one subject when the subject parameter names it.
func (s *Server) pending(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	cs, err := s.cfg.Store.Pending(r.Context(), sgam.PendingQuery{Tenant: c.tenant, Subject: r.URL.Query().Get("subject")})
	return map[string]any{"candidates": cs}, err
}

// confirm answers POST /v1/pending/{id}/confirm.
func (s *Server) confirm(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	var req ConfirmRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.cfg.Store.Confirm(r.Context(), c.tenant, r.PathValue("id"), req.EpisodeID)
}

// dismiss answers POST /v1/pending/{id}/dismiss, whose body has no fields.
func (s *Server) dismiss(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	if err := noFields(r); err != nil {
		return nil, err
	}
	return map[string]bool{"ok": true}, s.cfg.Store.Dismiss(r.Context(), c.tenant, r.PathValue("id"))
}
