package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
)

func TestRefreshErrorRules(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]agent.RefreshAction{
		"invalid_refresh_token":  agent.RefreshRetry,
		"device_not_found":       agent.RefreshRetry,
		"unavailable":            agent.RefreshRetry,
		"rate_limited":           agent.RefreshRetry,
		"aegis_locked":           agent.RefreshRetry,
		"internal":               agent.RefreshRetry,
		"":                       agent.RefreshRetry, // no Engine answer
		"device_quarantined":     agent.RefreshRetry,
		"device_revoked":         agent.RefreshClear,
		"token_revoked":          agent.RefreshClear,
		"device_purged":          agent.RefreshClear,
		"token_expired":          agent.RefreshClear,
		"fingerprint_mismatch":   agent.RefreshClear,
		"token_version_mismatch": agent.RefreshClear,
		"unauthorized":           agent.RefreshClear,
		"something_new":          agent.RefreshClear,
	} {
		c := agent.Default()
		c.AccessToken, c.RefreshToken = "a", "r"
		require.Equal(t, want, c.ApplyRefreshError(code), code)
		if want == agent.RefreshRetry {
			require.Equal(t, "r", c.RefreshToken, "%s keeps the refresh token", code)
			require.True(t, c.HasTokens())
		} else {
			require.Empty(t, c.RefreshToken, code)
			require.Empty(t, c.AccessToken, code)
			require.False(t, c.HasTokens())
		}
	}
}

func TestApplyEnrollment(t *testing.T) {
	t.Parallel()
	enrolled := func() *agent.Config {
		c := agent.Default()
		c.ServerURL, c.EnrollmentCode = "https://old.test", "code-1"
		c.Agent.GUID, c.Agent.AgentID = "guid-1", "agent-1"
		c.Ed25519PrivateKey = "kept"
		c.AccessToken, c.RefreshToken = "a", "r"
		c.Agent.Route = []byte(`{"site_worker":"hq"}`)
		return c
	}

	c := enrolled()
	require.False(t, c.ApplyEnrollment("code-1", "https://old.test"))
	require.Equal(t, "r", c.RefreshToken, "the same code keeps tokens")
	require.JSONEq(t, `{"site_worker":"hq"}`, string(c.Agent.Route))
	require.Equal(t, "guid-1", c.Agent.GUID)

	c = enrolled()
	require.True(t, c.ApplyEnrollment("code-2", "https://new.test"))
	require.Empty(t, c.AccessToken)
	require.Empty(t, c.RefreshToken)
	require.Nil(t, c.Agent.Route)
	require.Equal(t, "code-2", c.EnrollmentCode)
	require.Equal(t, "https://new.test", c.ServerURL)
	require.Equal(t, "guid-1", c.Agent.GUID, "identity and key survive a re-deploy")
	require.Equal(t, "kept", c.Ed25519PrivateKey)
}
