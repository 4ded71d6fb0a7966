package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sgam-dev/sgam"
)

// FuzzDecode feeds arbitrary bodies to the request decoder: it never
// panics, and every refusal is an Invalid error naming a field.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"subject":"mira","attribute":"city","value":"Oslo","valid_from":"2026-06-01T09:00:00Z","source":"e1"}`,
		`{`, `[]`, `{"value":{"a":[1,2,{"b":null}]}}`, `{"subject":1}`, `{"x":1}`, `{} {}`, ``, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/facts", bytes.NewReader(body))
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 1<<16)
		var req AssertRequest
		err := decode(r, &req)
		if err == nil {
			return
		}
		var mbe *http.MaxBytesError
		if sgam.ErrorCode(err) != sgam.Invalid && !asMaxBytes(err, &mbe) {
			t.Fatalf("%q: %v (%s)", body, err, sgam.ErrorCode(err))
		}
		if sgam.ErrorCode(err) == sgam.Invalid && sgam.ErrorField(err) == "" {
			t.Fatalf("%q: no field named: %v", body, err)
		}
	})
}

func asMaxBytes(err error, target **http.MaxBytesError) bool {
	e, ok := err.(*http.MaxBytesError)
	if ok {
		*target = e
	}
	return ok
}
