package httpstatus_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/internal/httpstatus"
)

// TestEveryCodeHasItsStatus: no code falls through to 500 but internal.
func TestEveryCodeHasItsStatus(t *testing.T) {
	seen := map[int]sgam.Code{}
	for _, c := range sgam.Codes {
		s := httpstatus.Of(c)
		if c != sgam.Internal {
			require.NotEqual(t, http.StatusInternalServerError, s, c)
		}
		require.NotContains(t, seen, s, "%s and %s share a status", c, seen[s])
		seen[s] = c
	}
}

type wait time.Duration

func (w wait) Error() string             { return "busy" }
func (w wait) RetryDelay() time.Duration { return time.Duration(w) }

func TestRetryAfter(t *testing.T) {
	require.Equal(t, "", httpstatus.RetryAfter(errors.New("no hint")))
	require.Equal(t, "1", httpstatus.RetryAfter(wait(10*time.Millisecond)), "at least a second")
	require.Equal(t, "91", httpstatus.RetryAfter(wait(90*time.Second+time.Millisecond)), "rounded up")
}
