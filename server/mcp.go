package server

import (
	"context"
	"net/http"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/mcpserver"
)

// callerKey carries the authenticated caller from the /mcp route to the
// MCP server built for the request.
type callerKey struct{}

// mcp serves the MCP tools at POST /mcp (streamable HTTP, stateless),
// behind the same keys, rate limit and body limit as every route. The MCP
// server of each request is bound to the key's tenant and role: read keys
// are offered only the reading tools.
func (s *Server) mcp() http.Handler {
	h := mcpserver.HTTPHandler(func(r *http.Request) (mcpserver.Config, error) {
		c, ok := r.Context().Value(callerKey{}).(caller)
		if !ok {
			return mcpserver.Config{}, sgam.Errorf(sgam.Unauthenticated, "authorization", "no caller")
		}
		return mcpserver.Config{Store: s.cfg.Store, Tenant: c.tenant, Role: c.role, Clock: s.cfg.Clock, Logger: s.cfg.Logger, Recaller: s.cfg.Recaller, Version: s.version()}, nil
	}, s.cfg.MaxBodyBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.admit(w, r, sgam.RoleRead)
		if !ok {
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}
