package server

import (
	"net/http"

	"github.com/sgam-dev/sgam"
)

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

// forget answers POST /v1/forget with the forget's receipt; the actor it
// records is the caller's key.
func (s *Server) forget(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
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
}

// receipts answers GET /v1/receipts: the tenant's forget and expiry
// receipts.
func (s *Server) receipts(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	rs, err := s.cfg.Store.Receipts(r.Context(), c.tenant)
	return map[string]any{"receipts": rs}, err
}
