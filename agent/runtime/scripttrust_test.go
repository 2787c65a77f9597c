package runtime

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

type testKey struct {
	pub  string
	id   string
	priv ed25519.PrivateKey
}

func newKey(t *testing.T) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return testKey{pub: base64.StdEncoding.EncodeToString(pub), id: proto.KeyID(pub), priv: priv}
}

// link is a key-chain link signed by k.
func (k testKey) link(t *testing.T, purpose string, seq int64, keys ...testKey) proto.Signed {
	t.Helper()
	l := proto.KeyList{Purpose: purpose, Seq: seq, IssuedAt: time.Now().UTC()}
	for _, x := range keys {
		l.Keys = append(l.Keys, x.pub)
	}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	return proto.Signed{Payload: b, KeyID: k.id, Signature: ed25519.Sign(k.priv, b)}
}

func pubs(keys ...testKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.pub
	}
	return out
}

// The agent pins the keys of its enrollment; afterwards a key list
// reaches it only through the signed chain: a bare list or a link no
// trusted key signed (a planted database row, a replica without the key)
// changes nothing, rotations signed by the outgoing key are followed,
// several at once after an absence, and heartbeats report the keys.
func TestScriptTrustFollowsOnlyTheSignedChain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first, second, third, fourth, attacker := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(first)})
	e.enroll(t)
	require.Equal(t, pubs(first), e.config(t).ScriptSigning.TrustedPublicKeys)

	start(t, e.options())
	beats := func() {
		n := len(e.engine.Heartbeats())
		require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) > n+1 }, wait, tick)
	}

	// A bare list, a link signed by an untrusted key and a link of the
	// wrong purpose are all ignored.
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(attacker, first),
		Chain: []proto.Signed{attacker.link(t, proto.PurposeScriptKeys, 1, attacker, first),
			first.link(t, proto.PurposeArtifactKeys, 1, attacker)}})
	beats()
	require.Equal(t, pubs(first), e.config(t).ScriptSigning.TrustedPublicKeys)
	require.Empty(t, e.config(t).ScriptSigning.ArtifactPublicKeys, "a script-key link is not an artifact-key list")

	// A rotation signed by the trusted key is followed.
	l1 := first.link(t, proto.PurposeScriptKeys, 1, second, first)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(second, first), Chain: []proto.Signed{l1}})
	require.Eventually(t, func() bool {
		return slices.Equal(e.config(t).ScriptSigning.TrustedPublicKeys, pubs(second, first))
	}, wait, tick)
	require.Eventually(t, func() bool {
		hbs := e.engine.Heartbeats()
		return slices.Equal(hbs[len(hbs)-1].Body.ScriptSigningKeyIDs, []string{second.id, first.id})
	}, wait, tick)
	require.Equal(t, []string{first.id}, e.engine.Heartbeats()[0].Body.ScriptSigningKeyIDs)

	// Two more rotations in one answer: the agent walks both links, the
	// second signed by a key only the first made trusted.
	l2 := second.link(t, proto.PurposeScriptKeys, 2, third, second)
	l3 := third.link(t, proto.PurposeScriptKeys, 3, fourth, third)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(fourth, third), Chain: []proto.Signed{l3, l1, l2}})
	require.Eventually(t, func() bool {
		return slices.Equal(e.config(t).ScriptSigning.TrustedPublicKeys, pubs(fourth, third))
	}, wait, tick)
	require.EqualValues(t, 3, e.config(t).ScriptSigning.Seq)

	// An old link replayed does not take the agent back, even signed by a
	// key it still trusts.
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(first),
		Chain: []proto.Signed{third.link(t, proto.PurposeScriptKeys, 2, third, first), l1}})
	beats()
	require.Equal(t, pubs(fourth, third), e.config(t).ScriptSigning.TrustedPublicKeys)
}

// The artifact keys are pinned at enrollment and follow their own chain;
// an agent enrolled without one takes the first artifact-key list only
// when a trusted script key endorsed it.
func TestArtifactTrustChain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	script, art1, art2, attacker := newKey(t), newKey(t), newKey(t), newKey(t)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(script)})
	e.enroll(t)
	require.Empty(t, e.config(t).ScriptSigning.ArtifactPublicKeys)
	start(t, e.options())

	endorse := script.link(t, proto.PurposeArtifactKeys, 1, art1)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(script), ArtifactPublicKeys: pubs(attacker),
		ArtifactChain: []proto.Signed{attacker.link(t, proto.PurposeArtifactKeys, 1, attacker), endorse}})
	require.Eventually(t, func() bool {
		return slices.Equal(e.config(t).ScriptSigning.ArtifactPublicKeys, pubs(art1))
	}, wait, tick)

	// Once it has an artifact key, the script key cannot replace it; the
	// artifact key can.
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(script),
		ArtifactChain: []proto.Signed{endorse, script.link(t, proto.PurposeArtifactKeys, 2, attacker)}})
	n := len(e.engine.Heartbeats())
	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) > n+1 }, wait, tick)
	require.Equal(t, pubs(art1), e.config(t).ScriptSigning.ArtifactPublicKeys)
	e.engine.SetTrust(&proto.ScriptTrust{TrustedPublicKeys: pubs(script),
		ArtifactChain: []proto.Signed{endorse, art1.link(t, proto.PurposeArtifactKeys, 2, art2, art1)}})
	require.Eventually(t, func() bool {
		return slices.Equal(e.config(t).ScriptSigning.ArtifactPublicKeys, pubs(art2, art1))
	}, wait, tick)
}
