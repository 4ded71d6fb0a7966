package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/ingest"
)

// EpisodeRequest is the body of POST /v1/episodes.
type EpisodeRequest struct {
	EpisodeID      string          `json:"episode_id"`
	Session        string          `json:"session"`
	Kind           string          `json:"kind"`
	Content        string          `json:"content"`
	OccurredAt     *string         `json:"occurred_at"`
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

// episode answers GET /v1/episodes/{id}.
func (s *Server) episode(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	return s.cfg.Store.Episode(r.Context(), c.tenant, r.PathValue("id"))
}

// extractions answers GET /v1/episodes/{id}/extractions: the records of
// the episode's extractions.
func (s *Server) extractions(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	recs, err := s.cfg.Store.Extractions(r.Context(), c.tenant, r.PathValue("id"))
	return map[string]any{"extractions": recs}, err
}
