package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/sgam-dev/sgam/replay"
)

// replay answers POST /v1/replay: it runs the body, a replay script,
// within the caller's tenant, and answers the counts and one result per
// operation.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	runner := &replay.Runner{Store: s.cfg.Store, Tenant: c.tenant, OnlyTenant: true}
	st, err := runner.Run(r.Context(), bytes.NewReader(body), &out)
	if err != nil {
		return nil, err
	}
	results := []json.RawMessage{} // [] for a script of no lines, never null
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		if len(line) > 0 {
			results = append(results, line)
		}
	}
	return map[string]any{"lines": st.Lines, "failed": st.Failed, "results": results}, nil
}
