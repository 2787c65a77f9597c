package api_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

// A scheduled job's saved content is signed for no device; each fire
// verifies it and signs, from what it signed, a payload bound to the
// device, the run, the script purpose and an expiry. Content planted in
// the database, or a payload meant for one device replayed as content,
// is refused instead of being signed for every target.
func TestScheduledContentIsBoundAtEachFire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "bound")
	a := f.enrolled(t, admin, site, "bound-01")
	ctx := context.Background()
	signer := scriptsign.New(f.store, f.engine.cipher)
	svc := automation.NewService(f.store, signer, f.engine.devices)
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "bound", "kind": "script", "language": "sh",
		"body": "echo operator"})
	require.Equal(t, 201, r.Status, r.Raw)
	assembly := int64(r.Body["id"].(float64))
	targets := []devices.OperationTarget{{GUID: cairn.DeviceGUID(a.guid), Hostname: "bound-01", SiteID: cairn.SiteID(site), SiteSlug: siteSlug(t, f, admin, site)}}

	content, version, err := svc.SignContent(ctx, automation.RunSpec{AssemblyID: &assembly})
	require.NoError(t, err)
	fire := func(sg proto.Signed) (automation.Run, error) {
		return svc.CreateRun(ctx, automation.RunSpec{Kind: automation.RunScheduledJob, AssemblyID: &assembly,
			AssemblyVersion: version, Signed: &sg, RequestedBy: "schedule", Targets: targets})
	}
	run, err := fire(content)
	require.NoError(t, err)
	rows, err := f.store.JobRunResultSignedStale(ctx, "no such key")
	require.NoError(t, err)
	var sent *proto.Signed
	for _, row := range rows {
		if row.RunID == run.ID && row.DeviceGuid == cairn.DeviceGUID(a.guid) {
			sent = new(proto.Signed)
			require.NoError(t, json.Unmarshal(row.Signed, sent))
		}
	}
	require.NotNil(t, sent, "the fire stored a payload for the device")
	payload, err := signer.Verify(ctx, *sent)
	require.NoError(t, err)
	job, err := proto.DecodeScriptJob(payload)
	require.NoError(t, err)
	require.Equal(t, proto.PurposeScript, job.Purpose)
	require.Equal(t, a.guid, job.DeviceGUID)
	require.Equal(t, string(run.ID), job.RunID)
	require.NotNil(t, job.ExpiresAt)
	require.Equal(t, "echo operator", job.Body)

	// Planted: signed by a key no agent trusts.
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	evil, err := json.Marshal(proto.ScriptJob{Purpose: proto.PurposeScriptContent, Language: "sh", Body: "echo attacker"})
	require.NoError(t, err)
	_, err = fire(proto.Signed{Payload: evil, KeyID: content.KeyID, Signature: ed25519.Sign(stranger, evil)})
	require.Equal(t, automation.ECodeContentUnverified, cairn.ErrorCode(err))

	// Replayed: a payload the Engine signed for one device and run is not
	// a job's content.
	_, err = fire(*sent)
	require.Equal(t, automation.ECodeContentUnverified, cairn.ErrorCode(err))
}

// End to end with the agent's own trust code: an agent pins the keys of
// its enrollment (script and artifact), and after two rotations of the
// real Engine's script key it reaches the current keys from heartbeat
// answers alone, by their chain; a payload the Engine signs then
// verifies with what it reached.
func TestAgentFollowsTheEnginesRotations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "chain")
	a := f.enrolled(t, admin, site, "chain-01")
	require.NotNil(t, a.trust)
	cfg := agent.Default()
	cfg.Agent.GUID = a.guid
	require.True(t, cfg.PinTrust(a.trust))
	require.Equal(t, a.scriptKeys, cfg.ScriptSigning.TrustedPublicKeys)
	require.Equal(t, []string{f.artifactKey.PublicBase64()}, cfg.ScriptSigning.ArtifactPublicKeys, "the artifact key is pinned")
	require.NotContains(t, cfg.ScriptSigning.ArtifactPublicKeys, a.scriptKeys[0], "scripts and artifacts have separate keys")

	for range 2 {
		rot := f.do(t, "POST", "/api/server/script-signing/rotate", admin, map[string]any{"force": true})
		require.Equal(t, 200, rot.Status, rot.Raw)
	}
	var current []string
	require.Eventually(t, func() bool {
		hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "t",
			ScriptSigningKeyIDs: cfg.TrustedScriptKeyIDs(), Metrics: proto.Metrics{LoggedInUsers: []string{}}})
		require.Equal(t, 200, hb.Status, hb.Raw)
		var body proto.HeartbeatResponse
		require.NoError(t, json.Unmarshal([]byte(hb.Raw), &body))
		cfg.ApplyTrust(body.ScriptSigning)
		current = body.ScriptSigning.TrustedPublicKeys
		return len(body.ScriptSigning.Chain) == 2
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, current, cfg.ScriptSigning.TrustedPublicKeys, "the agent walked both links")
	require.EqualValues(t, 2, cfg.ScriptSigning.Seq)

	exp := time.Now().Add(time.Hour)
	raw, err := json.Marshal(proto.ScriptJob{Purpose: proto.PurposeScript, RunID: "r", DeviceGUID: a.guid, Language: "sh",
		Body: "true", ExpiresAt: &exp})
	require.NoError(t, err)
	sg, err := scriptsign.New(f.store, f.engine.cipher).Sign(context.Background(), raw)
	require.NoError(t, err)
	_, err = agent.VerifyScript(cfg, sg, time.Now())
	require.NoError(t, err)
}
