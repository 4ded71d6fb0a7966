// Package httpstatus is the one mapping of sgam's error codes to HTTP
// statuses, for the API (package server) and the inspector's pages.
package httpstatus

import (
	"math"
	"net/http"
	"strconv"

	"github.com/sgam-dev/sgam"
)

var statuses = map[sgam.Code]int{
	sgam.Invalid:         http.StatusBadRequest,
	sgam.NotFound:        http.StatusNotFound,
	sgam.Conflict:        http.StatusConflict,
	sgam.Unavailable:     http.StatusServiceUnavailable,
	sgam.Internal:        http.StatusInternalServerError,
	sgam.Unauthenticated: http.StatusUnauthorized,
	sgam.Forbidden:       http.StatusForbidden,
}

// Of returns the status of an error code (500 for one it does not know).
func Of(code sgam.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// RetryAfter is the value of a Retry-After header for an error that asks
// to wait before it is tried again (sgam.RetryDelay), in whole seconds,
// at least 1; "" when it gives no hint.
func RetryAfter(err error) string {
	d := sgam.RetryDelay(err)
	if d <= 0 {
		return ""
	}
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
