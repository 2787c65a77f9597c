package runtime

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestEnrollSavesIdentityAndTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.engine.SetDecision(proto.ApprovalApproved, 2)
	var requested []string
	res, err := Enroll(t.Context(), e.store, e.client(t), EnrollOptions{
		Identity: e.identity, Version: "1.2.3", Timing: testTiming(),
		Requested: func(id, status string) { requested = append(requested, id+" "+status) },
	})
	require.NoError(t, err)

	devs := e.engine.Devices()
	require.Len(t, devs, 1)
	d := devs[0]
	c := e.config(t)
	require.Equal(t, d.GUID, c.Agent.GUID)
	require.Equal(t, d.AgentID, c.Agent.AgentID)
	require.Equal(t, d.Access, c.AccessToken)
	require.Equal(t, d.Refresh, c.RefreshToken)
	require.Equal(t, d.GUID, res.Device.GUID)
	require.Equal(t, []string{res.ApprovalID + " pending"}, requested)

	// The request is signed with the config's key over the documented message.
	reqs := e.engine.EnrollRequests()
	require.Len(t, reqs, 1)
	key, err := c.PrivateKey()
	require.NoError(t, err)
	pub := key.Public().(ed25519.PublicKey)
	r := reqs[0].Request
	require.Equal(t, base64.StdEncoding.EncodeToString(pub), r.PublicKey)
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	require.NoError(t, err)
	require.True(t, ed25519.Verify(pub, proto.EnrollSigningMessage(r.Nonce, r.Code, r.Hostname, r.Fingerprint, r.PublicKey), sig))
	require.Equal(t, proto.EnrollRequest{
		Code: testCode, PublicKey: r.PublicKey, Hostname: "host-1", OS: "Debian GNU/Linux 12",
		Fingerprint: "fp-1", AgentVersion: "1.2.3", Nonce: r.Nonce, Signature: r.Signature,
	}, r)

	// Every poll proved possession of that same key.
	polls := e.engine.PollKeys()
	require.Len(t, polls, 3, "two pending answers, then enrolled")
	for _, k := range polls {
		require.Equal(t, e.thumbprint(t), k)
	}
}

func TestEnrollEndsOnDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision string
		want     error
	}{
		{proto.ApprovalDenied, ErrDenied},
		{proto.ApprovalExpired, ErrExpired},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.engine.SetDecision(tc.decision, 1)
			_, err := Enroll(t.Context(), e.store, e.client(t), EnrollOptions{Identity: e.identity, Timing: testTiming()})
			require.ErrorIs(t, err, tc.want)
			c := e.config(t)
			require.Empty(t, c.Agent.GUID)
			require.False(t, c.HasTokens())
		})
	}
}

func TestEnrollBacksOffWhenRateLimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		limited    int
		retryAfter int
		minElapsed time.Duration
	}{
		{"backoff", 3, 0, 0},
		{"retry-after", 1, 1, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.engine.RateLimitEnroll(tc.limited, tc.retryAfter)
			began := time.Now()
			_, err := Enroll(t.Context(), e.store, e.client(t), EnrollOptions{Identity: e.identity, Timing: testTiming()})
			require.NoError(t, err)
			require.GreaterOrEqual(t, time.Since(began), tc.minElapsed)
			require.Equal(t, tc.limited+1, e.engine.Count("enroll_request"))
			require.True(t, e.config(t).HasTokens())
		})
	}
}

func TestEnrollRefusedCodeFails(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.store.Update(func(c *agent.Config) error { c.EnrollmentCode = "wrong"; return nil })
	require.NoError(t, err)
	_, err = Enroll(t.Context(), e.store, e.client(t), EnrollOptions{Identity: e.identity, Timing: testTiming()})
	require.ErrorContains(t, err, "validation_failed")
	require.Equal(t, 1, e.engine.Count("enroll_request"), "a refusal is not retried")
}
