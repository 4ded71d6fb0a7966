package sgam_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"2026-06-03T10:00:00Z", "2026-06-03T10:00:00Z"},
		{"2026-06-03t10:00:00z", "2026-06-03T10:00:00Z"},
		{"2026-06-03T12:00:00+02:00", "2026-06-03T10:00:00Z"},
		{"2026-06-03T05:30:00-04:30", "2026-06-03T10:00:00Z"},
		{"2026-06-03T10:00:00.123456789Z", "2026-06-03T10:00:00.123456Z"},
		{"2026-06-03T10:00:00.1+00:00", "2026-06-03T10:00:00.1Z"},
		{"0001-01-01T00:00:01Z", "0001-01-01T00:00:01Z"},
		{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"},
		{"9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.999999Z"},
	} {
		got, err := sgam.ParseTime("t", c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, sgam.FormatTime(got), c.in)
		require.Equal(t, time.UTC, got.Location())
	}
	for _, c := range []struct{ in, says string }{
		{"", "is required"},
		{"2026-06-03", "no UTC offset"},
		{"2026-06-03T10:00:00", "no UTC offset"},
		{"2026-06-03T10:00", "no UTC offset"},
		{"2026-06-03 10:00:00Z", "not an RFC 3339"},
		{"2026-13-03T10:00:00Z", "not an RFC 3339"},
		{"yesterday", "not an RFC 3339"},
		{"2026-06-03T10:00:00,5Z", "not an RFC 3339"},
		{"1717400000", "not an RFC 3339"},
		{strings.Repeat("9", 100), "longer than 64"},
	} {
		_, err := sgam.ParseTime("valid_from", c.in)
		require.Error(t, err, c.in)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err))
		require.Equal(t, "valid_from", sgam.ErrorField(err))
		require.Contains(t, err.Error(), c.says, c.in)
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-06-03T10:00:00Z", "2026-06-03T12:00:00.5+02:00", "2026-06-03", "9999-12-31T23:59:59.999999999Z", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := sgam.ParseTime("t", s)
		if err != nil {
			if sgam.ErrorField(err) != "t" {
				t.Fatalf("error does not name the field: %v", err)
			}
			return
		}
		if got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
			t.Fatalf("%q parsed to %v: not UTC microseconds", s, got)
		}
		// Formatting and parsing again is the identity.
		again, err := sgam.ParseTime("t", sgam.FormatTime(got))
		if err != nil || !again.Equal(got) {
			t.Fatalf("%q: round trip gave %v, %v", s, again, err)
		}
		// The stored integer form round-trips too.
		if !sgam.FromMicros(sgam.Micros(got)).Equal(got) {
			t.Fatalf("%q: micros round trip", s)
		}
	})
}

func TestCanonicalValue(t *testing.T) {
	for in, want := range map[string]string{
		`"Oslo"`:                  `"Oslo"`,
		` {"b": 1, "a": [1, 2]} `: `{"a":[1,2],"b":1}`,
		`"\u00e9 <b>"`:            `"é <b>"`,
		`12345678901234567890`:    `12345678901234567890`,
		`1.50`:                    `1.50`,
		`true`:                    `true`,
	} {
		got, err := sgam.CanonicalValue("value", []byte(in), 1000)
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
		require.True(t, json.Valid(got))
	}
	for _, in := range []string{``, `null`, `{`, `1 2`, `Oslo`, `"` + strings.Repeat("x", 1000) + `"`} {
		_, err := sgam.CanonicalValue("value", []byte(in), 1000)
		require.Error(t, err, in)
		require.Equal(t, "value", sgam.ErrorField(err), in)
	}
}
