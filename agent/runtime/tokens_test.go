package runtime

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

func heartbeatBody() proto.Heartbeat { return proto.Heartbeat{AgentVersion: "test"} }

func TestRefreshOnTokenExpired(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	before := e.config(t)
	tokens := e.tokens(t)
	e.engine.ExpireAccessTokens()

	var resp proto.HeartbeatResponse
	require.NoError(t, tokens.Call(t.Context(), http.MethodPost, proto.PathHeartbeat, heartbeatBody(), &resp))
	require.Equal(t, 1, e.engine.Refreshes())
	require.Equal(t, 1, e.engine.Count("heartbeat"), "the call is repeated once, after the refresh")

	// The rotated pair is what the Engine holds and is on disk.
	d := e.engine.Devices()[0]
	after := e.config(t)
	require.Equal(t, d.Access, after.AccessToken)
	require.Equal(t, d.Refresh, after.RefreshToken)
	require.NotEqual(t, before.RefreshToken, after.RefreshToken)
	require.Equal(t, d.Access, tokens.Current())
}

func TestRefreshBeforeExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.engine.SetAccessTTL(90 * time.Second) // inside the 2-minute margin
	e.enroll(t)
	e.engine.SetAccessTTL(time.Hour)
	tokens := e.tokens(t)

	access, err := tokens.Access(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, e.engine.Refreshes())
	require.Equal(t, e.engine.Devices()[0].Access, access)
	// The new token is far from expiry: no further refresh.
	_, err = tokens.Access(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, e.engine.Refreshes())
}

func TestNoConcurrentRefreshes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	tokens := e.tokens(t)
	e.engine.SetRefreshDelay(50 * time.Millisecond)
	e.engine.ExpireAccessTokens()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			errs <- tokens.Call(t.Context(), http.MethodPost, proto.PathHeartbeat, heartbeatBody(), nil)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, e.engine.MaxConcurrentRefreshes())
	require.Equal(t, 1, e.engine.Refreshes(), "callers that waited use the token the first refresh got")
}

func TestRefreshRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refuse  func(e *env, guid string)
		code    string
		cleared bool
	}{
		{"purged", func(e *env, guid string) { e.engine.Purge(guid) }, proto.CodeDevicePurged, true},
		// The Device call itself answers quarantined: nothing to refresh.
		{"quarantined", func(e *env, guid string) { e.engine.Quarantine(guid) }, proto.CodeDeviceQuarantined, false},
		{"revoked token", func(e *env, _ string) { e.engine.SetRefreshError(401, proto.CodeTokenRevoked) }, proto.CodeTokenRevoked, true},
		{"version mismatch", func(e *env, _ string) { e.engine.SetRefreshError(401, proto.CodeTokenVersion) }, proto.CodeTokenVersion, true},
		{"blank Engine", func(e *env, _ string) { e.engine.SetRefreshError(401, proto.CodeInvalidRefreshToken) }, proto.CodeInvalidRefreshToken, false},
		{"unknown device", func(e *env, _ string) { e.engine.SetRefreshError(404, proto.CodeDeviceNotFound) }, proto.CodeDeviceNotFound, false},
		{"clock skew", func(e *env, _ string) { e.engine.SetRefreshError(401, proto.CodeInvalidDPoPProof) }, proto.CodeInvalidDPoPProof, false},
		{"outage", func(e *env, _ string) { e.engine.SetRefreshError(503, "unavailable") }, "unavailable", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			res := e.enroll(t)
			before := e.config(t)
			tokens := e.tokens(t)
			tokens.retry = newBackoff(time.Minute, time.Minute) // no second attempt within the test
			tc.refuse(e, res.Device.GUID)
			e.engine.ExpireAccessTokens()

			err := tokens.Call(t.Context(), http.MethodPost, proto.PathHeartbeat, heartbeatBody(), nil)
			require.Error(t, err)
			require.Equal(t, tc.code, transport.Code(err))
			after := e.config(t)
			if tc.cleared {
				require.ErrorIs(t, err, ErrTokensCleared)
				require.False(t, after.HasTokens())
				require.Empty(t, after.AccessToken)
				require.Equal(t, before.Agent.GUID, after.Agent.GUID, "identity stays")
				require.Equal(t, before.Ed25519PrivateKey, after.Ed25519PrivateKey)
				return
			}
			require.NotErrorIs(t, err, ErrTokensCleared)
			require.Equal(t, before.AccessToken, after.AccessToken)
			require.Equal(t, before.RefreshToken, after.RefreshToken)
			// A kept token is retried after a backoff, not hammered.
			refreshes := e.engine.Refreshes()
			require.LessOrEqual(t, refreshes, 1)
			require.Error(t, tokens.Call(t.Context(), http.MethodPost, proto.PathHeartbeat, heartbeatBody(), nil))
			require.Equal(t, refreshes, e.engine.Refreshes())
		})
	}
}

func TestAccessExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		token string
		want  time.Time
	}{
		{"eyJhbGciOiJFZERTQSJ9.eyJleHAiOjE3MDAwMDAwMDB9.sig", time.Unix(1700000000, 0)},
		{"opaque-token", time.Time{}},
		{"a.not-base64!.c", time.Time{}},
		{"a.e30.c", time.Time{}}, // {} has no exp
	} {
		require.Equal(t, tc.want, accessExpiry(tc.token), tc.token)
	}
}
