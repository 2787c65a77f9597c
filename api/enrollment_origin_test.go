package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// An enrollment request whose proof signs for an origin the Engine does
// not serve agents on is refused at once, naming the origins to use,
// before an approval exists that the agent's polls could never collect.
func TestEnrollmentRequestRefusesAnOriginTheEngineDoesNotServe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	code := f.enrollmentCode(t, admin, f.createSite(t, admin, "origins"))

	a := f.newAgent(t, "elsewhere-01")
	n := a.send(t, "POST", proto.PathEnrollNonce, nil, false, "").Body["nonce"].(string)
	req := proto.EnrollRequest{Code: code, PublicKey: a.publicKey(), Hostname: a.hostname, Fingerprint: a.fingerprint, Nonce: n}
	req.Signature = signWith(t, a.key, req)
	body, err := json.Marshal(req)
	require.NoError(t, err)
	send := func(origin string) response {
		r, err := http.NewRequest("POST", f.url+proto.PathEnrollRequest, bytes.NewReader(body))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
		proof, err := agent.NewProof(a.key, "POST", origin+proto.PathEnrollRequest, "", f.clk.Now())
		require.NoError(t, err)
		r.Header.Set(proto.HeaderDPoP, proof)
		return do(t, r)
	}
	r := send("http://10.0.0.5:8080")
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, cairn.ECodeInvalidDPoPProof, r.Body["error"])
	require.Contains(t, r.Body["message"], `htu origin "http://10.0.0.5:8080" is not one this Engine serves agents on; it accepts `+testPublicURL)
	pending := f.do(t, "GET", "/api/admin/device-approvals?status=pending", admin, nil)
	require.Empty(t, pending.Body["approvals"], "nothing waits for an approval")

	// Signed for the Engine's origin, the same request goes through.
	require.Equal(t, 202, send(testPublicURL).Status)
}
