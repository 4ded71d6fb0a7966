package server

import (
	"net/http"
	"time"

	"github.com/sgam-dev/sgam"
)

// schema answers GET /v1/schema: the version of the tenant's schema in
// force. A key reads and applies its own tenant's schema; the store-wide
// default is the operator's, set only through the CLI.
func (s *Server) schema(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	v, err := s.cfg.Store.Schema(r.Context(), c.tenant)
	if err != nil {
		return nil, err
	}
	return schemaAnswer(v), nil
}

// applySchema answers POST /v1/schema: the body, a schema file, becomes
// the tenant's next version (with dry_run=true: only shows what would).
func (s *Server) applySchema(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
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
