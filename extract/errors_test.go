package extract_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
)

// TestErrorsAreCoded: what an extraction fails with reaches a surface
// with a code (never internal), through a wrapping too, with one
// predicate for a retry and a hint of how long to wait.
func TestErrorsAreCoded(t *testing.T) {
	resets := time.Now().Add(time.Hour)
	budget := &extract.BudgetError{Budget: sgam.Budget{Tenant: "acme", TokensPerDay: 10, SpentToday: 12, ResetsAt: resets}}
	for _, c := range []struct {
		err       error
		retryable bool
		delay     bool
	}{
		{budget, true, true},
		{&extract.AnswerError{Reason: "not JSON"}, true, false},
		{extract.ErrNoModel, false, false},
	} {
		for _, err := range []error{c.err, fmt.Errorf("extract e1: %w", c.err)} {
			require.Equal(t, sgam.Unavailable, sgam.ErrorCode(err), err.Error())
			require.Equal(t, c.retryable, sgam.Retryable(err), err.Error())
			require.Equal(t, c.delay, sgam.RetryDelay(err) > 0, err.Error())
		}
	}
	require.InDelta(t, time.Hour.Seconds(), sgam.RetryDelay(budget).Seconds(), 60, "until the budget resets")
	require.NotContains(t, budget.Error(), "sgam budget", "a library error names no command: the CLI adds its hints")
	require.NotContains(t, extract.ErrNoModel.Error(), "--llm")
	require.True(t, errors.Is(fmt.Errorf("x: %w", extract.ErrNoModel), extract.ErrNoModel))

	// An *sgam.Error wrapping a coded error gives its own code; the
	// cause knows better than the code whether a retry may help.
	wrapped := &sgam.Error{Code: sgam.Conflict, Field: "extract", Message: "captured, not extracted", Err: budget}
	require.Equal(t, sgam.Conflict, sgam.ErrorCode(wrapped))
	require.True(t, sgam.Retryable(wrapped))
	require.Equal(t, sgam.RetryDelay(budget).Round(time.Minute), sgam.RetryDelay(wrapped).Round(time.Minute))
	require.False(t, sgam.Retryable(&sgam.Error{Code: sgam.Unavailable, Err: extract.ErrNoModel}))
	require.False(t, sgam.Retryable(sgam.Errorf(sgam.Internal, "", "a bug")))
	require.True(t, sgam.Retryable(sgam.Errorf(sgam.Unavailable, "", "busy")))
	require.False(t, sgam.Retryable(errors.New("plain")), "an uncoded error is internal")
}
