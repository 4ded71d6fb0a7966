package sgam

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Code classifies an error by what the caller should do about it. The CLI,
// the HTTP API and the MCP server each map codes to their own signals (exit
// status, HTTP status, tool error) in one place.
//
// Every error that reaches a surface has a code: an *Error's own, or that
// of an error that says its code itself (a method ErrorCode() Code: a
// model server's failure, a spent budget, a model's unusable answer are
// Unavailable). Whether trying again may help is one predicate, Retryable,
// and how long to wait first RetryDelay.
type Code string

const (
	// Invalid: the input broke a rule; Field names the input, Message the rule.
	Invalid Code = "invalid"
	// NotFound: the tenant has no such episode or fact.
	NotFound Code = "not_found"
	// Conflict: the input contradicts what is stored (for example a different
	// value at an equal valid_from); nothing was written.
	Conflict Code = "conflict"
	// Unavailable: the store cannot serve now (closed, busy, unreachable);
	// retrying later may succeed.
	Unavailable Code = "unavailable"
	// Internal: a bug or a corrupt store.
	Internal Code = "internal"
	// Unauthenticated: no credential, or one that is unknown or revoked.
	Unauthenticated Code = "unauthenticated"
	// Forbidden: the credential is valid but its role may not do this.
	Forbidden Code = "forbidden"
)

// Codes are every error code.
var Codes = []Code{Invalid, NotFound, Conflict, Unavailable, Internal, Unauthenticated, Forbidden}

// Error is the one error type sgam returns for failures a caller can act on.
type Error struct {
	Code  Code
	Field string // the input field at fault, when there is one ("valid_from", "value")
	// Pointer is the JSON pointer (RFC 6901) inside a value that broke a
	// schema rule ("/address/zip"; "" is the whole value), and Rule the
	// rule it broke ("type", "enum", "required"); both only for schema errors.
	Pointer string
	Rule    string
	// Reason is, for the rules that also judge a model's candidate, the
	// rejection reason an extraction record gives it (RejectInvalidSubject,
	// RejectUnknownAttribute, RejectInvalidTime, RejectConflict), set where
	// the rule is checked so that no reader has to guess it from the field.
	Reason  string
	Message string
	Err     error // the underlying cause, if any
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Pointer != "" {
		msg = fmt.Sprintf("at %s: %s", e.Pointer, msg)
	}
	if e.Rule != "" {
		msg = fmt.Sprintf("%s (rule %s)", msg, e.Rule)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, msg)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns e.Code: an *Error says its code as every coded error
// does.
func (e *Error) ErrorCode() Code { return e.Code }

// Errorf returns an *Error with the given code and field.
func Errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first error in err's chain that says
// its code (an *Error, or any error with a method ErrorCode() Code),
// Internal for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var c interface{ ErrorCode() Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return Internal
}

// Retryable reports whether the same operation may succeed when tried
// again later, as pgx's SafeToRetry does for a statement: the first error
// in err's chain that says so itself (a method Retryable() bool: a model
// server's 429 or timeout is, its 401 is not), else whether err's code is
// Unavailable (a busy or unreachable store). Invalid input, a missing row,
// a conflict and an internal fault are never mended by trying again.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return ErrorCode(err) == Unavailable
}

// RetryDelay is how long the first error in err's chain that gives a
// hint (a method RetryDelay() time.Duration: a model server's Retry-After,
// the rest of a spent budget's day) asks to wait before trying again; 0
// when none does.
func RetryDelay(err error) time.Duration {
	var r interface{ RetryDelay() time.Duration }
	if errors.As(err, &r) {
		return max(r.RetryDelay(), 0)
	}
	return 0
}

// ErrorDetail is an error as sgam's network surfaces send it: the body of
// an HTTP API error, a failed line of a replay.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Field   string `json:"field,omitempty"`
	Pointer string `json:"pointer,omitempty"` // inside a value that broke a schema rule (Error.Pointer)
	Rule    string `json:"rule,omitempty"`    // the schema rule it broke (Error.Rule)
	Message string `json:"message"`
}

// MarshalJSON writes pointer whenever rule is set: "" then means the whole
// value broke the rule, which omitempty would drop, leaving a client unable
// to tell it from no schema error at all.
func (d ErrorDetail) MarshalJSON() ([]byte, error) {
	type plain ErrorDetail
	if d.Rule == "" {
		return json.Marshal(plain(d))
	}
	return json.Marshal(struct {
		plain
		Pointer string `json:"pointer"`
	}{plain(d), d.Pointer})
}

// Detail is err's ErrorDetail: its code, and the field, pointer, rule and
// message of the first *Error in its chain (the message of another
// error is its text).
func Detail(err error) ErrorDetail {
	d := ErrorDetail{Code: ErrorCode(err), Message: ErrorMessage(err)}
	var e *Error
	if errors.As(err, &e) {
		d.Field, d.Pointer, d.Rule = e.Field, e.Pointer, e.Rule
	}
	return d
}

// ErrSet is the cause of Get's refusal of a set (an attribute of
// cardinality many), whose members Members reads: errors.Is(err, ErrSet).
var ErrSet = errors.New("the attribute is a set (cardinality many)")

// RejectionReason is the rejection reason of the first *Error in err's
// chain that gives one (Error.Reason), RejectInvalidValue for any other
// error: why an extraction's candidate was refused.
func RejectionReason(err error) string {
	var e *Error
	for errors.As(err, &e) {
		if e.Reason != "" {
			return e.Reason
		}
		err = e.Err
	}
	return RejectInvalidValue
}

// ErrorField returns the field named by the first *Error in err's chain.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// ErrorMessage returns the message of the first *Error in err's chain, or
// err.Error() for other errors.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// withReason sets the rejection reason of err, an *Error or nil.
func withReason(reason string, err error) error {
	if e, ok := err.(*Error); ok {
		e.Reason = reason
	}
	return err
}

// PrefixField qualifies the field of an *Error with prefix, so that an error
// in a batch names its item ("assertions[3].valid_from").
func PrefixField(prefix string, err error) error { return withFieldPrefix(prefix, err) }

// RenameField returns err naming the field to where it names from, for a
// surface whose input calls a field otherwise than the store does (a
// request's episode_id, a tool's quote for an episode's content); other
// errors are returned as they are.
func RenameField(err error, from, to string) error {
	var e *Error
	if !errors.As(err, &e) || e.Field != from {
		return err
	}
	c := *e
	c.Field = to
	return &c
}

// withFieldPrefix returns err with its field qualified by prefix
// ("assertions[3]" + "valid_from" -> "assertions[3].valid_from").
func withFieldPrefix(prefix string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	if c.Field == "" {
		c.Field = prefix
	} else {
		c.Field = prefix + "." + c.Field
	}
	return &c
}
