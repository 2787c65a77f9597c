package api_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// testAgent plays an agent against a fixture: its own Ed25519 key, the
// enrollment exchange and DPoP-signed requests, built from the same
// agent/proto and agent.NewProof the real agent uses.
type testAgent struct {
	f           *fixture
	key         ed25519.PrivateKey
	hostname    string
	fingerprint string
	approvalID  string
	guid        string
	access      string
	refresh     string
	// lastProof is the DPoP proof of the last request (for replay tests).
	lastProof string
	// scriptKeys are the script-signing keys enrollment handed out.
	scriptKeys []string
	// trust is the whole trust answer of enrollment (keys and chains).
	trust *proto.ScriptTrust
	// os is the operating system reported at enrollment ("": Debian).
	os string
	// caps are the capabilities connect_agent reports (nil: every one);
	// protocol, when set, is the protocol it speaks (below 4: it
	// reports none).
	caps     []proto.Capability
	protocol int
	// helpers are the helper_contexts connect_agent advertises.
	helpers []string
	// addr is the client address a trusted proxy forwards ("": none);
	// bootID the boot ID refreshes and connect_agent report;
	// cloneTicket, when set, enrolls with it instead of a code.
	addr, bootID, cloneTicket string
}

func (f *fixture) newAgent(t *testing.T, hostname string) *testAgent {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return &testAgent{f: f, key: key, hostname: hostname, fingerprint: "fp-" + hostname}
}

func (a *testAgent) publicKey() string {
	return base64.StdEncoding.EncodeToString(a.key.Public().(ed25519.PublicKey))
}

// send makes an agent request to path with an optional DPoP proof and
// access token. htu is signed for the Engine's public URL, as an agent
// behind a load balancer would.
func (a *testAgent) send(t *testing.T, method, path string, body any, proof bool, token string) response {
	t.Helper()
	return a.f.untilNotBusy(t, func() response { return a.sendOnce(t, method, path, body, proof, token) })
}

func (a *testAgent) sendOnce(t *testing.T, method, path string, body any, proof bool, token string) response {
	t.Helper()
	var rdr io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		rdr = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.f.url+path, rdr)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	if a.addr != "" {
		req.Header.Set("X-Forwarded-For", a.addr)
	}
	if proof {
		p, err := agent.NewProof(a.key, method, testPublicURL+path, token, a.f.clk.Now())
		require.NoError(t, err)
		req.Header.Set(proto.HeaderDPoP, p)
		a.lastProof = p
	}
	if token != "" {
		req.Header.Set("Authorization", proto.AuthScheme+" "+token)
	}
	return do(t, req)
}

// request signs and sends an enrollment request with code.
func (a *testAgent) request(t *testing.T, code string) response {
	t.Helper()
	// A busy answer used the nonce up: the agent starts again from a new one.
	return a.f.untilNotBusy(t, func() response { return a.requestOnce(t, code) })
}

func (a *testAgent) requestOnce(t *testing.T, code string) response {
	t.Helper()
	n := a.send(t, "POST", proto.PathEnrollNonce, nil, false, "")
	require.Equal(t, 200, n.Status, n.Raw)
	nonce := n.Body["nonce"].(string)
	osName := a.os
	if osName == "" {
		osName = "Debian GNU/Linux 12"
	}
	req := proto.EnrollRequest{Code: code, PublicKey: a.publicKey(), Hostname: a.hostname, OS: osName,
		Fingerprint: a.fingerprint, AgentVersion: "test", Nonce: nonce}
	if a.cloneTicket != "" {
		req.Code, req.CloneTicket = "", a.cloneTicket
	}
	req.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(a.key,
		proto.EnrollSigningMessage(req.Nonce, req.Code+req.CloneTicket, req.Hostname, req.Fingerprint, req.PublicKey)))
	r := a.sendOnce(t, "POST", proto.PathEnrollRequest, req, false, "")
	if r.Status == 202 {
		a.approvalID = r.Body["approval_id"].(string)
	}
	return r
}

// poll polls the request; on enrolled it keeps the identity and tokens.
func (a *testAgent) poll(t *testing.T) response {
	t.Helper()
	r := a.send(t, "POST", proto.PathEnrollPoll, proto.EnrollPoll{ApprovalID: a.approvalID}, true, "")
	if r.Status == 200 && r.Body["status"] == proto.ApprovalEnrolled {
		a.guid = r.Body["device"].(map[string]any)["guid"].(string)
		tok := r.Body["tokens"].(map[string]any)
		a.access, a.refresh = tok["access_token"].(string), tok["refresh_token"].(string)
		a.scriptKeys = trustedKeys(r.Body)
		var body struct {
			ScriptSigning *proto.ScriptTrust `json:"script_signing"`
		}
		if json.Unmarshal([]byte(r.Raw), &body) == nil {
			a.trust = body.ScriptSigning
		}
	}
	return r
}

// trustedKeys reads script_signing.trusted_public_keys of an agent answer.
func trustedKeys(body map[string]any) []string {
	ss, _ := body["script_signing"].(map[string]any)
	list, _ := ss["trusted_public_keys"].([]any)
	out := make([]string, 0, len(list))
	for _, k := range list {
		out = append(out, k.(string))
	}
	return out
}

// doRefresh rotates the refresh token; on success it keeps the new pair.
func (a *testAgent) doRefresh(t *testing.T) response {
	t.Helper()
	r := a.send(t, "POST", proto.PathTokenRefresh, proto.RefreshRequest{RefreshToken: a.refresh, Fingerprint: a.fingerprint, BootID: a.bootID}, true, "")
	if r.Status == 200 {
		tok := r.Body["tokens"].(map[string]any)
		a.access, a.refresh = tok["access_token"].(string), tok["refresh_token"].(string)
	}
	return r
}

// device calls a Device route with the current access token.
func (a *testAgent) device(t *testing.T, method, path string, body any) response {
	t.Helper()
	return a.send(t, method, path, body, true, a.access)
}

// enrolled creates a code for site, enrolls a and approves it.
func (f *fixture) enrolled(t *testing.T, admin string, siteID int64, hostname string) *testAgent {
	t.Helper()
	a := f.newAgent(t, hostname)
	code := f.enrollmentCode(t, admin, siteID)
	r := a.request(t, code)
	require.Equal(t, 202, r.Status, r.Raw)
	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	p := a.poll(t)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, proto.ApprovalEnrolled, p.Body["status"], p.Raw)
	return a
}

func (f *fixture) enrollmentCode(t *testing.T, token string, siteID int64) string {
	t.Helper()
	r := f.do(t, "POST", "/api/admin/enrollment-codes", token, map[string]any{"site_id": siteID})
	require.Equal(t, 201, r.Status, r.Raw)
	return r.Body["code"].(string)
}

// sendRaw sends a Device request with a given proof (a replay).
func (a *testAgent) sendRaw(t *testing.T, method, path, proof, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, a.f.url+path, nil)
	require.NoError(t, err)
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	req.Header.Set(proto.HeaderDPoP, proof)
	req.Header.Set("Authorization", proto.AuthScheme+" "+token)
	return do(t, req)
}

func signWith(t *testing.T, key ed25519.PrivateKey, req proto.EnrollRequest) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key,
		proto.EnrollSigningMessage(req.Nonce, req.Code, req.Hostname, req.Fingerprint, req.PublicKey)))
}

func itoa(n float64) string { return strconv.FormatInt(int64(n), 10) }
