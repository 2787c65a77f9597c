package agent_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

type signer struct {
	pub  string
	priv ed25519.PrivateKey
}

func newSigner(t *testing.T) signer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return signer{pub: base64.StdEncoding.EncodeToString(pub), priv: priv}
}

func (s signer) sign(t *testing.T, job proto.ScriptJob) proto.Signed {
	t.Helper()
	b, err := json.Marshal(job)
	require.NoError(t, err)
	return proto.Signed{Payload: b, KeyID: proto.KeyID(s.priv.Public().(ed25519.PublicKey)), Signature: ed25519.Sign(s.priv, b)}
}

func TestVerifyScript(t *testing.T) {
	t.Parallel()
	now := time.Now()
	trusted, previous, stranger := newSigner(t), newSigner(t), newSigner(t)
	cfg := agent.Default()
	cfg.Agent.GUID = "guid-1"
	cfg.ScriptSigning.TrustedPublicKeys = []string{trusted.pub, previous.pub}
	past, future := now.Add(-time.Second), now.Add(time.Minute)
	job := proto.ScriptJob{Purpose: proto.PurposeScript, RunID: "r1", DeviceGUID: "guid-1", Language: "sh", Body: "echo hi",
		ExpiresAt: &future}

	tampered := trusted.sign(t, job)
	tampered.Payload = []byte(`{"run_id":"r1","device_guid":"guid-1","language":"sh","body":"rm -rf /"}`)
	otherDevice, expired, unbound, noDevice, noRun, noExpiry, noPurpose, content := job, job, job, job, job, job, job, job
	otherDevice.DeviceGUID = "guid-2"
	expired.ExpiresAt = &past
	unbound.DeviceGUID, unbound.RunID, unbound.ExpiresAt = "", "", nil
	noDevice.DeviceGUID = ""
	noRun.RunID = ""
	noExpiry.ExpiresAt = nil
	noPurpose.Purpose = ""
	content.Purpose = proto.PurposeScriptContent
	// A manifest or a key list signed by a trusted key is not a script.
	manifest, err := json.Marshal(proto.UpdateArtifact{Purpose: proto.PurposeArtifact, ArtifactID: "a", BuildID: "b"})
	require.NoError(t, err)
	manifestSigned := proto.Signed{Payload: manifest, Signature: ed25519.Sign(trusted.priv, manifest)}

	cases := []struct {
		name   string
		signed proto.Signed
		cfg    *agent.Config
		ok     bool
	}{
		{"active key", trusted.sign(t, job), cfg, true},
		{"previous key", previous.sign(t, job), cfg, true},
		{"unbound content (a scheduled job's saved content, old style)", trusted.sign(t, unbound), cfg, false},
		{"no device", trusted.sign(t, noDevice), cfg, false},
		{"no run", trusted.sign(t, noRun), cfg, false},
		{"no expiry", trusted.sign(t, noExpiry), cfg, false},
		{"no purpose", trusted.sign(t, noPurpose), cfg, false},
		{"scheduled content purpose", trusted.sign(t, content), cfg, false},
		{"update manifest", manifestSigned, cfg, false},
		{"untrusted key", stranger.sign(t, job), cfg, false},
		{"tampered payload", tampered, cfg, false},
		{"another device", trusted.sign(t, otherDevice), cfg, false},
		{"expired", trusted.sign(t, expired), cfg, false},
		{"no trusted keys", trusted.sign(t, job), agent.Default(), false},
		{"no signature", proto.Signed{Payload: []byte("{}")}, cfg, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := agent.VerifyScript(c.cfg, c.signed, now)
			if c.ok {
				require.NoError(t, err)
				require.Equal(t, "echo hi", got.Body)
				return
			}
			var pe *proto.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, proto.CodeSignatureInvalid, pe.Code)
		})
	}
}
