package sgam_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// TestParseTimeRanges: what time.Parse lets through and RFC 3339 does not
// is refused, and every refusal says why.
func TestParseTimeRanges(t *testing.T) {
	for _, ok := range []string{"2026-06-03T10:00:00+23:59", "2026-06-03T10:00:00-23:59", "2026-06-03T10:00:00-00:00", "2026-12-31T23:59:59.999999Z"} {
		_, err := sgam.ParseTime("at", ok)
		require.NoError(t, err, ok)
	}
	for _, c := range []struct{ in, says string }{
		{"2026-06-03T10:00:00+24:00", "offset +24:00 is out of range"},
		{"2026-06-03T10:00:00-24:00", "offset -24:00 is out of range"},
		{"2026-06-03T10:00:00+23:60", "offset +23:60 is out of range"},
		{"2026-12-31T23:59:60Z", "is a leap second"},
		{"2016-12-31t23:59:60.5+00:00", "is a leap second"},
		{"2026-06-03T10:00:61Z", "second out of range"},
		{"2026-02-30T10:00:00Z", "day out of range"},
		{"2026-06-03T24:00:00Z", "hour out of range"},
		{"2026-06-03T10:00:00,5Z", "decimal comma"},
	} {
		_, err := sgam.ParseTime("at", c.in)
		require.Error(t, err, c.in)
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err), c.in)
		require.Equal(t, "at", sgam.ErrorField(err), c.in)
		require.Contains(t, err.Error(), c.says, c.in)
	}
}
