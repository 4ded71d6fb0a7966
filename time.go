package sgam

import (
	"errors"
	"strings"
	"time"
)

// Instants are stored as UTC microseconds since the Unix epoch. Finer input
// precision is truncated toward the past, so two inputs that differ only
// below a microsecond are the same instant.

var (
	minInstant = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC) // the last microsecond
)

// MinTime is the lower bound of the instants a store holds:
// 0001-01-01T00:00:00Z, Go's zero time. That instant itself is refused as
// input, because the API reads a zero time as "not given" (now, for a
// read; the transaction instant, for a write): the earliest instant an
// input may name is one microsecond later.
func MinTime() time.Time { return minInstant }

// MaxTime is the latest instant a store accepts: the last microsecond of
// year 9999.
func MaxTime() time.Time { return maxInstant }

// ParseTime parses an RFC 3339 timestamp with an explicit offset ("Z" or
// "+02:00") and any fractional precision, and returns it in UTC truncated to
// the microsecond. field names the input in the error.
func ParseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, Errorf(Invalid, field, "is required: an RFC 3339 timestamp such as 2026-06-03T10:00:00Z")
	}
	if len(s) > 64 {
		return time.Time{}, Errorf(Invalid, field, "timestamp is longer than 64 bytes")
	}
	// RFC 3339 allows a lower-case "t" and "z"; time.Parse does not, so the
	// input is upper-cased. time.Parse rejects a missing offset, as it
	// should (a timestamp without one is ambiguous and would mis-order
	// facts), but it accepts what RFC 3339 does not: a decimal comma, and
	// offsets up to +24:00 and minutes up to 60.
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err == nil {
		if strings.Contains(s, ",") {
			return time.Time{}, Errorf(Invalid, field, "%q is not an RFC 3339 timestamp: it has a decimal comma, and RFC 3339 writes fractions of a second with a point", s)
		}
		if bad := badOffset(s); bad != "" {
			return time.Time{}, Errorf(Invalid, field, "%q is not an RFC 3339 timestamp: its UTC offset %s is out of range (-23:59 to +23:59)", s, bad)
		}
		return inRange(field, t)
	}
	switch {
	case offsetless(s):
		return time.Time{}, Errorf(Invalid, field, "%q has no UTC offset; write it as RFC 3339 with Z or ±hh:mm, for example 2026-06-03T10:00:00Z", s)
	case leapSecond(s):
		return time.Time{}, Errorf(Invalid, field, "%q is a leap second, which sgam does not accept: its instants are UTC microseconds without leap seconds, like Unix time; write :59.999999 or the next minute", s)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Message, ": ") {
		// A field out of range ("day out of range"): say which.
		return time.Time{}, Errorf(Invalid, field, "%q is not an RFC 3339 timestamp (%s); for example 2026-06-03T10:00:00Z", s, pe.Message[2:])
	}
	return time.Time{}, Errorf(Invalid, field, "%q is not an RFC 3339 timestamp (for example 2026-06-03T10:00:00Z)", s)
}

// badOffset returns the numeric UTC offset at the end of a parsed
// timestamp when its hour or minute is out of RFC 3339's range, else "".
func badOffset(s string) string {
	if len(s) < 6 {
		return ""
	}
	off := s[len(s)-6:]
	if off[0] != '+' && off[0] != '-' || off[3] != ':' {
		return ""
	}
	if off[1:3] > "23" || off[4:6] > "59" {
		return off
	}
	return ""
}

// leapSecond reports whether s is a timestamp whose seconds are 60.
func leapSecond(s string) bool {
	i := strings.IndexAny(s, "Tt ")
	if i < 0 || len(s) < i+9 {
		return false
	}
	clock := s[i+1:]
	if clock[2] != ':' || clock[5] != ':' || clock[6:8] != "60" {
		return false
	}
	fixed := s[:i+7] + "59" + s[i+9:]
	_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(fixed))
	return err == nil
}

// CheckTime normalizes t to UTC microseconds and rejects instants outside
// years 0001 to 9999.
func CheckTime(field string, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, withReason(RejectInvalidTime, Errorf(Invalid, field, "is required"))
	}
	t, err := inRange(field, t)
	return t, withReason(RejectInvalidTime, err)
}

// inRange normalizes t to UTC microseconds and checks its year.
func inRange(field string, t time.Time) (time.Time, error) {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Equal(minInstant) {
		return time.Time{}, Errorf(Invalid, field, "%s is the zero instant, which sgam reads as \"not given\"; the earliest instant it accepts is 0001-01-01T00:00:00.000001Z", t.Format(time.RFC3339Nano))
	}
	if t.Before(minInstant) || t.After(maxInstant) {
		return time.Time{}, Errorf(Invalid, field, "%s is outside years 0001 to 9999", t.Format(time.RFC3339Nano))
	}
	return t, nil
}

// offsetless reports whether s is a date or a date and time that only
// lacks its UTC offset: the mistake worth a precise message.
func offsetless(s string) bool {
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if _, err := time.Parse(layout, strings.ToUpper(s)); err == nil {
			return true
		}
	}
	return false
}

// FormatTime renders t as RFC 3339 in UTC with only as many fractional
// digits as it needs.
func FormatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// Micros returns t as UTC microseconds since the Unix epoch.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros is the inverse of Micros.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
