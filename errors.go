package sgam

import (
	"errors"
	"fmt"
)

// Code classifies an error by what the caller should do about it. The CLI,
// the HTTP API and the MCP server each map codes to their own signals (exit
// status, HTTP status, tool error) in one place.
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

// Error is the one error type sgam returns for failures a caller can act on.
type Error struct {
	Code  Code
	Field string // the input field at fault, when there is one ("valid_from", "value")
	// Pointer is the JSON pointer (RFC 6901) inside a value that broke a
	// schema rule ("/address/zip"; "" is the whole value), and Rule the
	// rule it broke ("type", "enum", "required"); both only for schema errors.
	Pointer string
	Rule    string
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

// Errorf returns an *Error with the given code and field.
func Errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, Internal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrSet is the cause of Get's refusal of a set (an attribute of
// cardinality many), whose members Members reads: errors.Is(err, ErrSet).
var ErrSet = errors.New("the attribute is a set (cardinality many)")

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
