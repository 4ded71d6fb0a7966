package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/sgam-dev/sgam"
)

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

// trace answers GET /v1/facts/{id}/trace.
func (s *Server) trace(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, sgam.Errorf(sgam.Invalid, "fact_id", "%q is not a fact id", r.PathValue("id"))
	}
	return s.cfg.Store.Trace(r.Context(), c.tenant, id)
}
