package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/apikey"
)

func runKeys(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	st, ok := b.store.(apikey.Store)
	require.True(t, ok, "every store keeps API keys")
	now := b.at("2026-01-01T00:00:00Z")

	token, k, err := apikey.Create(b.ctx, st, tenantA, apikey.Write, "agent", now)
	require.NoError(t, err)
	require.Contains(t, token, k.ID)
	other, _, err := apikey.Create(b.ctx, st, tenantB, apikey.Read, "", now)
	require.NoError(t, err)

	got, err := apikey.Authenticate(b.ctx, st, token)
	require.NoError(t, err)
	require.Equal(t, tenantA, got.Tenant, "the tenant comes from the key")
	require.Equal(t, apikey.Write, got.Role)
	require.NoError(t, apikey.Require(got, apikey.Read))
	requireCode(t, apikey.Require(got, apikey.Admin), sgam.Forbidden, "")
	got, err = apikey.Authenticate(b.ctx, st, other)
	require.NoError(t, err)
	require.Equal(t, tenantB, got.Tenant)

	last := "x"
	if strings.HasSuffix(token, last) {
		last = "y" // a changed secret, whatever its last character was
	}
	for _, bad := range []string{"", "sgam_", token[:len(token)-1] + last, token + "x", "Bearer " + token,
		"sgam_" + k.ID + "_" + "00000000000000000000000000000000"} {
		_, err := apikey.Authenticate(b.ctx, st, bad)
		requireCode(t, err, sgam.Unauthenticated, "")
	}

	list, err := st.ListKeys(b.ctx, tenantA)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, k.ID, list[0].ID)
	require.Nil(t, list[0].RevokedAt)

	requireCode(t, st.RevokeKey(b.ctx, tenantB, k.ID, now), sgam.NotFound, "key_id")
	_, err = apikey.Authenticate(b.ctx, st, token)
	require.NoError(t, err, "another tenant cannot revoke it")
	require.NoError(t, st.RevokeKey(b.ctx, tenantA, k.ID, now.Add(time.Hour)))
	require.NoError(t, st.RevokeKey(b.ctx, tenantA, k.ID, now.Add(2*time.Hour)), "revoking again changes nothing")
	_, err = apikey.Authenticate(b.ctx, st, token)
	requireCode(t, err, sgam.Unauthenticated, "")
	list, err = st.ListKeys(b.ctx, tenantA)
	require.NoError(t, err)
	require.True(t, list[0].RevokedAt.Equal(now.Add(time.Hour)))

	_, _, err = apikey.Create(b.ctx, st, tenantA, apikey.Role("root"), "", now)
	requireCode(t, err, sgam.Invalid, "role")
}
