package llm

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sgam-dev/sgam"
)

// Kind says what went wrong with a request.
type Kind string

// Error kinds.
const (
	KindStatus     Kind = "status"     // the server answered an HTTP error
	KindTimeout    Kind = "timeout"    // no answer within the attempt's timeout
	KindConnection Kind = "connection" // the server could not be reached
	KindMalformed  Kind = "malformed"  // the answer was not a usable chat completion
	KindRefused    Kind = "refused"    // the model refused to answer
	KindTooLarge   Kind = "too_large"  // the answer was larger than sgam takes, or reached max_tokens
	KindCanceled   Kind = "canceled"   // the caller's context ended
)

// Error is a failed request (of a chat completion or of embeddings). Its
// text names the mode for answers that a chat server gives when it does
// not support one, and never holds the API key.
type Error struct {
	Kind    Kind
	Mode    Mode
	Status  int // the HTTP status, for KindStatus
	Message string
	// RetryAfter is the wait the server asked for (KindStatus).
	RetryAfter    time.Duration
	retryAfterSet bool
	Attempts      int // requests sent before giving up
	// what names the server in the text: "" for the model's (chat),
	// "embeddings" for the embeddings endpoint's.
	what string
}

func (e *Error) Error() string {
	what := e.what
	if what == "" {
		what = "model"
	}
	var s string
	switch e.Kind {
	case KindStatus:
		s = fmt.Sprintf("%s server answered %d %s: %s", what, e.Status, http.StatusText(e.Status), e.Message)
		if e.Mode != "" && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity || e.Status == http.StatusNotImplemented) {
			s += fmt.Sprintf(" (the request used mode %s; if the server does not support it, pick another: json_schema, json_object or tools)", e.Mode)
		}
	case KindTimeout:
		s = what + " server timed out: " + e.Message
	case KindConnection:
		s = what + " server unreachable: " + e.Message
	default:
		s = fmt.Sprintf("%s request %s: %s", what, e.Kind, e.Message)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Brief is the error without the server's message or the model's text,
// which may quote the request (a status's message, a refusal): for records
// that outlive the request's content (a queue's job rows, logs).
func (e *Error) Brief() string {
	switch e.Kind {
	case KindStatus, KindRefused:
		c := *e
		c.Message = "(its message is in the extraction record)"
		if e.Kind == KindStatus {
			c.Message = http.StatusText(e.Status)
		}
		return c.Error()
	}
	return e.Error()
}

// ErrorCode implements sgam's coded errors: a model server that failed,
// whatever the kind, is Unavailable to sgam's caller (whose input is not
// at fault); Retryable says whether trying again may mend it.
func (e *Error) ErrorCode() sgam.Code { return sgam.Unavailable }

// RetryDelay is the wait the server asked for (Retry-After), for
// sgam.RetryDelay.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }

// Retryable reports whether the same request may succeed later: a 429, a
// 5xx, a timeout or a connection failure. Other 4xx answers are the
// request's fault and are never retried.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindTimeout, KindConnection:
		return true
	case KindStatus:
		return e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return false
}
