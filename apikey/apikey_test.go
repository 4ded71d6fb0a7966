package apikey_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
)

// TestRequireSaysWhichRole: a refusal names the role the key has and the
// one it needs, each with its article.
func TestRequireSaysWhichRole(t *testing.T) {
	for _, c := range []struct {
		has, need apikey.Role
		says      string
	}{
		{apikey.Read, apikey.Write, "a read key may not do this; it needs a write key"},
		{apikey.Read, apikey.Admin, "a read key may not do this; it needs an admin key"},
		{apikey.Write, apikey.Admin, "a write key may not do this; it needs an admin key"},
	} {
		err := apikey.Require(apikey.Key{Role: c.has}, c.need)
		require.Equal(t, sgam.Forbidden, sgam.ErrorCode(err))
		require.Equal(t, "authorization", sgam.ErrorField(err))
		require.Equal(t, c.says, sgam.ErrorMessage(err))
	}
	require.NoError(t, apikey.Require(apikey.Key{Role: apikey.Admin}, apikey.Write))
}
