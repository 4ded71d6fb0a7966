package sgam_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestCheckForget(t *testing.T) {
	r, kind, err := sgam.ForgetRequest{Tenant: "acme", Subject: "mira"}.Check()
	require.NoError(t, err)
	require.Equal(t, sgam.ReceiptSubject, kind)
	require.Equal(t, sgam.DefaultActor, r.Actor)
	for _, c := range []struct {
		r     sgam.ForgetRequest
		field string
	}{
		{sgam.ForgetRequest{Tenant: "acme"}, "subject"},
		{sgam.ForgetRequest{Tenant: "acme", Subject: "mira", Episode: "e1"}, "episode"},
		{sgam.ForgetRequest{Tenant: "acme", Episode: "e1", All: true}, "all"},
		{sgam.ForgetRequest{Tenant: "acme", Episode: "e 1"}, "episode"},
		{sgam.ForgetRequest{Tenant: "acme", All: true, Actor: "bad actor"}, "actor"},
		{sgam.ForgetRequest{Subject: "mira"}, "tenant"},
	} {
		_, _, err := c.r.Check()
		require.Equal(t, sgam.Invalid, sgam.ErrorCode(err), "%+v", c.r)
		require.Equal(t, c.field, sgam.ErrorField(err), "%+v: %v", c.r, err)
	}
}
