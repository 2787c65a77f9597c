package api_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// setupWithArtifacts is setup with an agent build directory holding a
// linux-amd64 and a windows-amd64 "binary" (random bytes: the Engine never
// runs them). It returns the files' contents by platform.
func setupWithArtifacts(t *testing.T) (*fixture, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	bodies := map[string][]byte{}
	for i, p := range agentartifacts.Platforms {
		body := make([]byte, 64<<10+i*1000)
		_, err := rand.Read(body)
		require.NoError(t, err)
		path := filepath.Join(dir, p, agentartifacts.BinaryName(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, body, 0o755))
		require.NoError(t, os.WriteFile(path+agentartifacts.BuildIDSuffix, []byte("test-build-"+p+"\n"), 0o644))
		bodies[p] = body
	}
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), agentArtifacts: dir}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	return f, bodies
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// deviceGet is a Device GET with extra headers (Range).
func (a *testAgent) deviceGet(t *testing.T, path string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest("GET", a.f.url+path, nil)
	require.NoError(t, err)
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	p, err := agent.NewProof(a.key, "GET", testPublicURL+path, a.access, a.f.clk.Now())
	require.NoError(t, err)
	req.Header.Set(proto.HeaderDPoP, p)
	req.Header.Set("Authorization", proto.AuthScheme+" "+a.access)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// The update routes for an enrolled agent: the manifest for its platform
// (asked for, or from its inventory) with a signature its trusted keys
// verify, the download (whole and by range) matching the manifest's hash,
// and the hash routes.
func TestAgentUpdateManifestAndDownload(t *testing.T) {
	t.Parallel()
	f, bodies := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "artifacts")
	a := f.enrolled(t, admin, site, "art-01")
	linux := bodies["linux-amd64"]

	// Enrolled with "Debian GNU/Linux 12" and no inventory yet: linux-amd64.
	m := a.device(t, "GET", "/api/agent/update/manifest", nil)
	require.Equal(t, 200, m.Status, m.Raw)
	id := "linux-amd64-" + hexSHA(linux)[:16]
	require.Equal(t, "linux-amd64", m.Body["platform"])
	require.Equal(t, id, m.Body["artifact_id"])
	require.Equal(t, "test-build-linux-amd64", m.Body["build_id"])
	require.Equal(t, hexSHA(linux), m.Body["sha256"])
	require.EqualValues(t, len(linux), m.Body["size"])
	require.Equal(t, "/api/agent/update/download/"+id, m.Body["download_url"])

	// The signature verifies with the keys agents trust and signs exactly
	// the artifact's identity.
	var manifest struct {
		Signature proto.Signed `json:"signature"`
	}
	require.NoError(t, json.Unmarshal([]byte(m.Raw), &manifest))
	keys := f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.Equal(t, 200, keys.Status, keys.Raw)
	var trusted []string
	for _, k := range keys.Body["keys"].([]any) {
		trusted = append(trusted, k.(map[string]any)["public_key"].(string))
	}
	payload, err := manifest.Signature.Verify(trusted)
	require.NoError(t, err)
	var signed agentartifacts.ManifestPayload
	require.NoError(t, json.Unmarshal(payload, &signed))
	require.Equal(t, agentartifacts.ManifestPayload{ArtifactID: id, Platform: "linux-amd64", BuildID: "test-build-linux-amd64",
		SHA256: hexSHA(linux), Size: int64(len(linux))}, signed)
	tampered := manifest.Signature
	tampered.Payload = []byte(string(payload[:len(payload)-2]) + "9}")
	_, err = tampered.Verify(trusted)
	require.Error(t, err)

	w := a.device(t, "GET", "/api/agent/update/manifest?platform=windows-amd64", nil)
	require.Equal(t, 200, w.Status, w.Raw)
	require.Equal(t, "windows-amd64-"+hexSHA(bodies["windows-amd64"])[:16], w.Body["artifact_id"])
	bad := a.device(t, "GET", "/api/agent/update/manifest?platform=darwin-arm64", nil)
	require.Equal(t, 400, bad.Status, bad.Raw)
	require.NotEmpty(t, bad.field("platform"))

	// The inventory decides when the agent does not say.
	d := a.device(t, "POST", proto.PathDetails, proto.Details{Hash: "h1", CollectedAt: time.Now().UTC(), Inventory: proto.Inventory{
		OS: &proto.OSInfo{Family: "windows", Name: "Windows Server 2022", Arch: "AMD64"}}})
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, w.Body["artifact_id"], a.device(t, "GET", "/api/agent/update/manifest", nil).Body["artifact_id"])
	h := a.device(t, "GET", "/api/agent/hash", nil)
	require.Equal(t, 200, h.Status, h.Raw)
	require.Equal(t, map[string]any{"platform": "windows-amd64", "build_id": "test-build-windows-amd64",
		"sha256": hexSHA(bodies["windows-amd64"])}, h.Body)
	hl := a.device(t, "GET", "/api/agent/hash_list", nil)
	require.Equal(t, 200, hl.Status, hl.Raw)
	list := hl.Body["artifacts"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, id, list[0].(map[string]any)["artifact_id"])
	require.Equal(t, hexSHA(linux), list[0].(map[string]any)["sha256"])

	// The whole binary, then a range of it.
	dl := a.deviceGet(t, "/api/agent/update/download/"+id, nil)
	require.Equal(t, 200, dl.Status, dl.Raw)
	require.Equal(t, hexSHA(linux), hexSHA([]byte(dl.Raw)))
	require.Equal(t, "application/octet-stream", dl.Header.Get("Content-Type"))
	require.Equal(t, "bytes", dl.Header.Get("Accept-Ranges"))
	require.Equal(t, "test-build-linux-amd64", dl.Header.Get("X-Cairn-Build-Id"))
	part := a.deviceGet(t, "/api/agent/update/download/"+id, map[string]string{"Range": "bytes=1000-4999"})
	require.Equal(t, 206, part.Status, part.Raw)
	require.Equal(t, linux[1000:5000], []byte(part.Raw))
	require.Equal(t, "bytes 1000-4999/"+itoa(float64(len(linux))), part.Header.Get("Content-Range"))
	tail := a.deviceGet(t, "/api/agent/update/download/"+id, map[string]string{"Range": "bytes=60000-"})
	require.Equal(t, 206, tail.Status)
	require.Equal(t, linux[60000:], []byte(tail.Raw))

	gone := a.device(t, "GET", "/api/agent/update/download/linux-amd64-0000000000000000", nil)
	require.Equal(t, 404, gone.Status, gone.Raw)
	require.Equal(t, "artifact_unavailable", gone.Body["error"])

	// The agent reports the build it runs in its status posts; the device
	// list shows it.
	st := a.device(t, "POST", proto.PathStatus, proto.Status{Phase: "starting", BootID: "b1", AgentVersion: "1.0",
		BuildID: "test-build-linux-amd64", StartedAt: time.Now().UTC()})
	require.Equal(t, 204, st.Status, st.Raw)
	dev := f.do(t, "GET", "/api/devices/"+a.guid, admin, nil)
	require.Equal(t, 200, dev.Status, dev.Raw)
	require.Equal(t, "test-build-linux-amd64", dev.Body["agent_build_id"])
	st = a.device(t, "POST", proto.PathStatus, proto.Status{Phase: "running", BootID: "b1", StartedAt: time.Now().UTC()})
	require.Equal(t, 204, st.Status, st.Raw)
	require.Equal(t, "test-build-linux-amd64", f.do(t, "GET", "/api/devices/"+a.guid, admin, nil).Body["agent_build_id"],
		"a status without a build ID keeps the last one")

	// An operator session is not a device.
	op := f.do(t, "GET", "/api/agent/update/download/"+id, admin, nil)
	require.Equal(t, 401, op.Status, op.Raw)
}

// The signature is made once by a replica with an unlocked cipher and
// served by every replica from PostgreSQL, locked or not.
func TestAgentManifestSignatureAcrossReplicas(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "sigrep")
	a := f.enrolled(t, admin, site, "art-02")
	locked := f.newEngine(t) // its own cipher, never unlocked
	require.False(t, locked.cipher.Unlocked())

	onLocked := func() response {
		saved := f.url
		f.url = locked.http.URL
		defer func() { f.url = saved }()
		return a.device(t, "GET", "/api/agent/update/manifest?platform=linux-amd64", nil)
	}
	// The unlocked replica signs in the background as soon as it starts,
	// so the locked one may already serve the stored signature; before
	// that it answers aegis_locked, never an unsigned manifest
	// (internal/agentartifacts tests that order deterministically).
	r := onLocked()
	if r.Status != 200 {
		require.Equal(t, 423, r.Status, r.Raw)
		require.Equal(t, "aegis_locked", r.Body["error"])
	}

	signed := a.device(t, "GET", "/api/agent/update/manifest?platform=linux-amd64", nil)
	require.Equal(t, 200, signed.Status, signed.Raw)
	r = onLocked()
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, signed.Body["signature"], r.Body["signature"])
}

func TestAgentUpdateWithoutArtifacts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "noart")
	a := f.enrolled(t, admin, site, "art-03")
	for _, path := range []string{"/api/agent/update/manifest", "/api/agent/hash", "/api/agent/update/download/linux-amd64-0123456789abcdef"} {
		r := a.device(t, "GET", path, nil)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Raw)
		require.Equal(t, "artifact_unavailable", r.Body["error"], path)
	}
	hl := a.device(t, "GET", "/api/agent/hash_list", nil)
	require.Equal(t, 200, hl.Status, hl.Raw)
	require.Empty(t, hl.Body["artifacts"])
	sites := f.do(t, "GET", "/api/sites", admin, nil)
	require.Equal(t, 200, sites.Status, sites.Raw)
	s := sites.Body["sites"].([]any)[0].(map[string]any)
	require.Equal(t, "engine", s["agent_binary_source"])
	require.Empty(t, s["install_links"])
}

// A stored signature by a key agents no longer trust (two rotations
// later) is made again with the active key; one rotation keeps it.
func TestAgentManifestResignedAfterRotations(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "resign")
	a := f.enrolled(t, admin, site, "art-04")
	keyID := func() string {
		m := a.device(t, "GET", "/api/agent/update/manifest?platform=linux-amd64", nil)
		require.Equal(t, 200, m.Status, m.Raw)
		return m.Body["signature"].(map[string]any)["key_id"].(string)
	}
	first := keyID()
	rotate := func() {
		// Forced: the test agent never reports the keys it trusts.
		r := f.do(t, "POST", "/api/server/script-signing/rotate", admin, map[string]any{"force": true})
		require.Equal(t, 200, r.Status, r.Raw)
	}
	// Rotating on this replica drops its signer's cached key list.
	rotate()
	require.Equal(t, first, keyID(), "the previous key is still trusted")
	rotate()
	second := keyID()
	require.NotEqual(t, first, second)
	keys := f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.Equal(t, 200, keys.Status, keys.Raw)
	require.Equal(t, second, keys.Body["keys"].([]any)[0].(map[string]any)["key_id"], "signed by the active key")
}
