package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/httpstatus"
)

// ErrorBody is every error response: {"error":{"code","field","pointer",
// "rule","message"}}.
type ErrorBody struct {
	Error sgam.ErrorDetail `json:"error"`
}

// writeError answers err (see errorResponse), with Retry-After when the
// error asks to wait (a spent budget, a model server's own Retry-After).
func writeError(w http.ResponseWriter, err error) {
	st, body := errorResponse(err)
	if body.Error.Code == sgam.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sgam"`)
	}
	if ra := httpstatus.RetryAfter(err); ra != "" && body.Error.Code == sgam.Unavailable {
		w.Header().Set("Retry-After", ra)
	}
	writeJSON(w, st, body)
}

// errorResponse is the one mapping of an error to its answer: a body over
// the limit (413) or cut off by the read timeout (408) is the client's
// doing, a deadline that passed is unavailable (503), and an internal
// error (500, the only status the server logs as an error) shows callers
// nothing of its details.
func errorResponse(err error) (int, ErrorBody) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, ErrorBody{sgam.ErrorDetail{Code: sgam.Invalid, Field: "body",
			Message: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}}
	}
	if errors.Is(err, errSlowBody) {
		return http.StatusRequestTimeout, ErrorBody{sgam.ErrorDetail{Code: sgam.Invalid, Field: "body", Message: errSlowBody.Message}}
	}
	code := sgam.ErrorCode(err)
	if code == sgam.Internal && errors.Is(err, context.DeadlineExceeded) {
		err = &sgam.Error{Code: sgam.Unavailable, Message: "the request ran out of time; what it wrote before then is kept, the write in progress was rolled back", Err: err}
		code = sgam.Unavailable
	}
	body := ErrorBody{sgam.Detail(err)}
	if code == sgam.Internal {
		body.Error = sgam.ErrorDetail{Code: code, Message: "internal error"} // details go to the log, not to callers
	}
	return httpstatus.Of(code), body
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// errSlowBody is a body the server's read timeout (http.Server.ReadTimeout)
// cut off before it all arrived: the client's fault, answered 408.
var errSlowBody = &sgam.Error{Code: sgam.Invalid, Field: "body", Message: "did not arrive in time: the server stopped waiting for the rest of it"}

// readBody reads r's body. A body that does not arrive whole is the
// client's doing (its connection stalled or broke), never a fault of
// ours: 408 when the read timeout cut it off, 400 otherwise, and 413 (a
// *http.MaxBytesError) over the limit.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil, errors.As(err, &mbe):
		return body, err
	case errors.As(err, &ne) && ne.Timeout():
		return nil, errSlowBody
	}
	return nil, sgam.Errorf(sgam.Invalid, "body", "could not be read to its end: %v", err)
}

// decode reads one JSON object into v with sgam.DecodeStrict, naming the
// field at fault ("body" for the body itself).
func decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return sgam.DecodeStrict("body", body, v)
}

// optTime parses an optional RFC 3339 field ("" is zero).
func optTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return sgam.ParseTime(field, s)
}

// at reads the as_of and known_at query parameters.
func at(r *http.Request) (sgam.At, error) {
	var a sgam.At
	var err error
	if a.AsOf, err = optTime("as_of", r.URL.Query().Get("as_of")); err != nil {
		return a, err
	}
	a.KnownAt, err = optTime("known_at", r.URL.Query().Get("known_at"))
	return a, err
}
