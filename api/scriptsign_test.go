package api_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func keyIDs(t *testing.T, keys []string) []string {
	t.Helper()
	out := make([]string, len(keys))
	for i, k := range keys {
		b, err := base64.StdEncoding.DecodeString(k)
		require.NoError(t, err)
		out[i] = proto.KeyID(b)
	}
	return out
}

// Enrollment hands the agent the script-signing key; heartbeats report
// which keys an agent trusts and carry the current list, so a rotation
// reaches agents; the admin route counts who has the active key.
func TestScriptSigningKeysReachAgents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "signing")
	a := f.enrolled(t, admin, site, "sign-01")
	require.Len(t, a.scriptKeys, 1, "enrollment delivers the key")
	b := f.enrolled(t, admin, site, "sign-02")
	require.Equal(t, a.scriptKeys, b.scriptKeys)

	beat := func(ag *testAgent, ids []string) []string {
		hb := ag.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "t",
			ScriptSigningKeyIDs: ids, Metrics: proto.Metrics{LoggedInUsers: []string{}}})
		require.Equal(t, 200, hb.Status, hb.Raw)
		return trustedKeys(hb.Body)
	}
	require.Equal(t, a.scriptKeys, beat(a, keyIDs(t, a.scriptKeys)))

	st := f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.Equal(t, 200, st.Status, st.Raw)
	keys := st.Body["keys"].([]any)
	require.Len(t, keys, 1)
	k0 := keys[0].(map[string]any)
	require.Equal(t, "active", k0["state"])
	require.Equal(t, a.scriptKeys[0], k0["public_key"])
	require.Equal(t, keyIDs(t, a.scriptKeys)[0], k0["key_id"])
	require.EqualValues(t, 1, st.Body["agents_on_current"])
	require.EqualValues(t, 2, st.Body["agents_total"])

	rot := f.do(t, "POST", "/api/server/script-signing/rotate", admin, nil)
	require.Equal(t, 200, rot.Status, rot.Raw)
	keys = rot.Body["keys"].([]any)
	require.Len(t, keys, 2)
	require.Equal(t, "active", keys[0].(map[string]any)["state"])
	require.Equal(t, "previous", keys[1].(map[string]any)["state"])
	require.Equal(t, a.scriptKeys[0], keys[1].(map[string]any)["public_key"])
	require.EqualValues(t, 0, rot.Body["agents_on_current"])

	// The next heartbeat answer carries the new key first and keeps the
	// old one trusted; once the agent reports both it counts as current.
	var current []string
	require.Eventually(t, func() bool { current = beat(b, keyIDs(t, b.scriptKeys)); return len(current) == 2 }, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, a.scriptKeys[0], current[1])
	beat(b, keyIDs(t, current))
	st = f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.EqualValues(t, 1, st.Body["agents_on_current"])

	// Operators are not administrators.
	op := f.operator(t, "signing-op")
	require.Equal(t, 403, f.do(t, "GET", "/api/server/script-signing", op, nil).Status)
	require.Equal(t, 403, f.do(t, "POST", "/api/server/script-signing/rotate", op, nil).Status)
}
