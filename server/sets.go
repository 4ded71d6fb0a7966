package server

import "net/http"

// addMember answers POST /v1/sets/add: an AssertRequest adding a member
// to a set.
func (s *Server) addMember(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	a, err := assertion(r, c)
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.Add(r.Context(), a)
}

// removeMember answers POST /v1/sets/remove: a RetractRequest removing a
// member (its value) from a set.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, c caller) (any, error) {
	rt, err := retraction(r, c)
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.Remove(r.Context(), rt)
}
