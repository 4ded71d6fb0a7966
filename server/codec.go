package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// writeJSON answers v with code. The body is encoded whole before the
// header goes, so that it is sent with its length in one write rather
// than in chunks (a recall's answer is larger than net/http's buffer),
// and a value that does not encode is a 500, not a cut-off body; the
// error returned is then why, for the log.
func writeJSON(w http.ResponseWriter, code int, v any) error {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			bodies.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	if err != nil {
		buf.Reset()
		code = http.StatusInternalServerError
		json.NewEncoder(buf).Encode(ErrorBody{sgam.ErrorDetail{Code: sgam.Internal, Message: "internal error"}})
		err = fmt.Errorf("encode the answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
	return err
}

// bodies are the buffers answers are encoded in; one that grew past
// maxPooledBody (a large export) is left to the collector.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 1 << 20

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

// noFields reads the body of a route that takes none: empty, or an
// empty JSON object ({}). Anything else is refused as decode refuses a
// bad body: a field (none is one of this request), or text that is not a
// JSON object.
func noFields(r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' { // null, [], "x": not a body of fields
		return sgam.Errorf(sgam.Invalid, "body", "must be empty or {}: this request has no fields")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decode(r, &struct{}{})
}

// query checks the query string of r against the parameters its route
// takes, as bodies are checked: a parameter the route does not take, a
// parameter in another case than its own (As_Of is not as_of), one given
// twice, or a query string that does not parse is refused, naming the
// parameter. After it, r.URL.Query() holds each parameter at most once.
func query(r *http.Request, takes []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return sgam.Errorf(sgam.Invalid, "query", "is not a valid query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case name == "":
			return sgam.Errorf(sgam.Invalid, "query", "has a parameter with no name")
		case len(name) > 64 || !utf8.ValidString(name):
			return sgam.Errorf(sgam.Invalid, "query", "has an unknown parameter %.64q", name)
		case !slices.Contains(takes, name):
			for _, t := range takes {
				if strings.EqualFold(t, name) {
					return sgam.Errorf(sgam.Invalid, name, "is not a parameter: parameter names are case-sensitive (the parameter is %q)", t)
				}
			}
			if len(takes) == 0 {
				return sgam.Errorf(sgam.Invalid, name, "is not a parameter of this route, which takes none")
			}
			return sgam.Errorf(sgam.Invalid, name, "is not a parameter of this route, which takes %s", strings.Join(takes, ", "))
		case len(q[name]) > 1:
			return sgam.Errorf(sgam.Invalid, name, "is given %d times; give it once", len(q[name]))
		}
	}
	return nil
}

// optTime parses an optional RFC 3339 field: absent (nil) is zero; given
// empty, it is refused, as a client that meant none leaves it out.
func optTime(field string, s *string) (time.Time, error) {
	switch {
	case s == nil:
		return time.Time{}, nil
	case *s == "":
		return time.Time{}, sgam.Errorf(sgam.Invalid, field, "is empty: give an RFC 3339 instant, or leave it out")
	}
	return sgam.ParseTime(field, *s)
}

// at reads the as_of and known_at query parameters.
func at(r *http.Request) (sgam.At, error) {
	var a sgam.At
	var err error
	q := r.URL.Query()
	if a.AsOf, err = optTime("as_of", param(q, "as_of")); err != nil {
		return a, err
	}
	a.KnownAt, err = optTime("known_at", param(q, "known_at"))
	return a, err
}

// param is a query parameter's value, nil when it is not given.
func param(q url.Values, name string) *string {
	if !q.Has(name) {
		return nil
	}
	v := q.Get(name)
	return &v
}
