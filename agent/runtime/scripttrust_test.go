package runtime

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func newPublicKey(t *testing.T) (string, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(pub), proto.KeyID(pub)
}

// The script-signing keys arrive with enrollment, a rotation reaches the
// agent through a heartbeat answer, and heartbeats report which keys the
// agent trusts.
func TestScriptTrustFromEnrollmentAndHeartbeats(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first, firstID := newPublicKey(t)
	e.engine.SetScriptTrust([]string{first})
	e.enroll(t)
	require.Equal(t, []string{first}, e.config(t).ScriptSigning.TrustedPublicKeys)

	start(t, e.options())
	second, secondID := newPublicKey(t)
	e.engine.SetScriptTrust([]string{second, first})
	require.Eventually(t, func() bool {
		return slices.Equal(e.config(t).ScriptSigning.TrustedPublicKeys, []string{second, first})
	}, wait, tick)
	require.Eventually(t, func() bool {
		hbs := e.engine.Heartbeats()
		return slices.Equal(hbs[len(hbs)-1].Body.ScriptSigningKeyIDs, []string{secondID, firstID})
	}, wait, tick)
	require.Equal(t, []string{firstID}, e.engine.Heartbeats()[0].Body.ScriptSigningKeyIDs)

	// An answer without keys, or with a malformed one, keeps the list.
	e.engine.SetScriptTrust([]string{"not a key"})
	n := len(e.engine.Heartbeats())
	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) > n+1 }, wait, tick)
	require.Equal(t, []string{second, first}, e.config(t).ScriptSigning.TrustedPublicKeys)
}
