package api_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// jsProofRequest is one proof for the dpop package to sign.
type jsProofRequest struct {
	HTM         string `json:"htm"`
	HTU         string `json:"htu"`
	AccessToken string `json:"access_token,omitempty"`
}

// jsProofs signs proofs with a's key using panva's dpop npm package
// (testdata/dpopjs; `make test` installs it), which names Ed25519 proofs
// alg "Ed25519" (RFC 9864).
func (a *testAgent) jsProofs(t *testing.T, reqs ...jsProofRequest) []string {
	t.Helper()
	dir := filepath.Join("testdata", "dpopjs")
	_, err := os.Stat(filepath.Join(dir, "node_modules", "dpop"))
	require.NoError(t, err, "the dpop package is missing: run `make api/testdata/dpopjs/node_modules` (make test does)")
	in, err := json.Marshal(map[string]any{
		"d":        base64.RawURLEncoding.EncodeToString(a.key.Seed()),
		"x":        base64.RawURLEncoding.EncodeToString(a.key.Public().(ed25519.PublicKey)),
		"iat":      a.f.clk.Now().Unix(),
		"requests": reqs,
	})
	require.NoError(t, err)
	cmd := exec.Command("node", "proof.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var proofs []string
	require.NoError(t, json.Unmarshal(out, &proofs))
	require.Len(t, proofs, len(reqs))
	return proofs
}

// sendProof makes an agent request with a given proof.
func (a *testAgent) sendProof(t *testing.T, method, path string, body any, proof, token string) response {
	t.Helper()
	var rdr io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		rdr = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.f.url+path, rdr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	req.Header.Set(proto.HeaderDPoP, proof)
	if token != "" {
		req.Header.Set("Authorization", proto.AuthScheme+" "+token)
	}
	return do(t, req)
}

// Issue 13 item 13: a client built on panva's dpop package (alg Ed25519)
// enrolls, calls a Device route and refreshes against the real Engine.
func TestDPoPProofsFromTheDpopPackage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	a := f.newAgent(t, "dpopjs-01")
	require.Equal(t, 202, a.request(t, f.enrollmentCode(t, admin, f.createSite(t, admin, "dpopjs"))).Status)
	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)

	poll := a.jsProofs(t, jsProofRequest{HTM: "POST", HTU: testPublicURL + proto.PathEnrollPoll})[0]
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(poll, ".")[0])
	require.NoError(t, err)
	require.Contains(t, string(header), `"alg":"Ed25519"`, "the package names the alg Ed25519")
	r := a.sendProof(t, "POST", proto.PathEnrollPoll, proto.EnrollPoll{ApprovalID: a.approvalID}, poll, "")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalEnrolled, r.Body["status"], r.Raw)
	tok := r.Body["tokens"].(map[string]any)
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)

	f.github.setBranch("octo/widgets/main", shaOne)
	hash := "/api/repo/current_hash?repo=octo/widgets&branch=main"
	proofs := a.jsProofs(t,
		jsProofRequest{HTM: "GET", HTU: testPublicURL + hash, AccessToken: access},
		jsProofRequest{HTM: "POST", HTU: testPublicURL + proto.PathTokenRefresh})
	r = a.sendProof(t, "GET", hash, nil, proofs[0], access)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, shaOne, r.Body["hash"])
	r = a.sendProof(t, "POST", proto.PathTokenRefresh, proto.RefreshRequest{RefreshToken: refresh, Fingerprint: a.fingerprint}, proofs[1], "")
	require.Equal(t, 200, r.Status, r.Raw)
}
