package server

import (
	"net/http"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/recall"
)

// RecallRequest is the body of POST /v1/recall: recall.Query's fields.
// Zero fields take recall's defaults; -1 turns evidence_limit or hops off.
type RecallRequest struct {
	Question      string   `json:"question"`
	Subjects      []string `json:"subjects"`
	Attributes    []string `json:"attributes"`
	AsOf          *string  `json:"as_of"`
	KnownAt       *string  `json:"known_at"`
	Budget        int      `json:"budget"`
	Evidence      *string  `json:"evidence"`
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
	if req.Evidence != nil {
		if *req.Evidence == "" {
			return nil, sgam.Errorf(sgam.Invalid, "evidence", "is empty: give auto, always or none, or leave it out")
		}
		q.Evidence = *req.Evidence
	}
	var err error
	if q.AsOf, err = optTime("as_of", req.AsOf); err != nil {
		return nil, err
	}
	if q.KnownAt, err = optTime("known_at", req.KnownAt); err != nil {
		return nil, err
	}
	return s.cfg.Recaller.Recall(r.Context(), q)
}
