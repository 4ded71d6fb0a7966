package storetest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func runKeys(t *testing.T, newStore Factory) {
	b := setup(t, newStore)
	st := b.store

	token, k, err := st.CreateKey(b.ctx, tenantA, sgam.RoleWrite, "agent")
	require.NoError(t, err)
	require.Contains(t, token, k.ID)
	require.True(t, k.CreatedAt.Equal(b.clock.Now()), "created at the store clock's now")
	other, _, err := st.CreateKey(b.ctx, tenantB, sgam.RoleRead, "")
	require.NoError(t, err)

	got, err := st.Authenticate(b.ctx, token)
	require.NoError(t, err)
	require.Equal(t, tenantA, got.Tenant, "the tenant comes from the key")
	require.Equal(t, sgam.RoleWrite, got.Role)
	require.NoError(t, got.Role.Require(sgam.RoleRead))
	requireCode(t, got.Role.Require(sgam.RoleAdmin), sgam.Forbidden, "authorization")
	got, err = st.Authenticate(b.ctx, other)
	require.NoError(t, err)
	require.Equal(t, tenantB, got.Tenant)

	last := "x"
	if strings.HasSuffix(token, last) {
		last = "y" // a changed secret, whatever its last character was
	}
	for _, bad := range []string{"", "sgam_", token[:len(token)-1] + last, token + "x", "Bearer " + token,
		"sgam_" + k.ID + "_" + "00000000000000000000000000000000"} {
		_, err := st.Authenticate(b.ctx, bad)
		requireCode(t, err, sgam.Unauthenticated, "authorization")
	}

	list, err := st.ListKeys(b.ctx, tenantA)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, k.ID, list[0].ID)
	require.Nil(t, list[0].RevokedAt)

	requireCode(t, st.RevokeKey(b.ctx, tenantB, k.ID), sgam.NotFound, "key_id")
	_, err = st.Authenticate(b.ctx, token)
	require.NoError(t, err, "another tenant cannot revoke it")
	b.tick("2026-01-01T01:00:00Z")
	require.NoError(t, st.RevokeKey(b.ctx, tenantA, k.ID))
	b.tick("2026-01-01T02:00:00Z")
	require.NoError(t, st.RevokeKey(b.ctx, tenantA, k.ID), "revoking again changes nothing")
	_, err = st.Authenticate(b.ctx, token)
	requireCode(t, err, sgam.Unauthenticated, "authorization")
	list, err = st.ListKeys(b.ctx, tenantA)
	require.NoError(t, err)
	require.True(t, list[0].RevokedAt.Equal(b.at("2026-01-01T01:00:00Z")))

	_, _, err = st.CreateKey(b.ctx, tenantA, sgam.Role("root"), "")
	requireCode(t, err, sgam.Invalid, "role")
	_, _, err = st.CreateKey(b.ctx, tenantA, sgam.RoleRead, "tab\there")
	requireCode(t, err, sgam.Invalid, "name")
	requireCode(t, st.RevokeKey(b.ctx, tenantA, "short"), sgam.Invalid, "key_id")
	_, err = st.ListKeys(b.ctx, "")
	requireCode(t, err, sgam.Invalid, "tenant")
}
