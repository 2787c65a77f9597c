package main

import (
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// A new user's first agent, on the Engine's own machine, told the HTTP
// listener's address as an IP (http://127.0.0.1:<port>) rather than the
// public URL's localhost: the Engine serves agents there, so the agent's
// DPoP proofs for that origin are accepted and it reaches Connected. An
// origin the Engine does not serve is refused before anyone approves.
func TestAgentEnrollsAtTheLoopbackAddress(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-agent-loopback-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	require.Contains(t, eng.base, "http://127.0.0.1:", "the public URL names localhost; the agent uses the IP")
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Loopback", "site_worker_slug": "loopback"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)

	ag := startAgent(t, agentBin, tmp, "loopback-ip", "enroll", "--server", eng.base, "--code", code)
	id := eng.waitApproval(t, token, ag.hostname)
	r := eng.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
	require.Contains(t, []any{proto.ApprovalApproved, proto.ApprovalEnrolled}, r["status"])
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 90*time.Second)
	require.NotContains(t, ag.output(), "invalid_dpop_proof")

	// Behind a proxy the Engine is not told about, the agent signs for an
	// origin the Engine does not serve: it is refused at the enrollment
	// request with the origins to use, before anything awaits approval.
	target, err := url.Parse(eng.base)
	require.NoError(t, err)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(proxy.Close)
	lost := startAgent(t, agentBin, tmp, "behind-proxy", "enroll", "--server", proxy.URL, "--code", code)
	done := make(chan error, 1)
	go func() { done <- lost.cmd.Wait() }()
	select {
	case err := <-done:
		require.Error(t, err, "enrollment must fail:\n%s", lost.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent behind the proxy was not refused:\n%s", lost.output())
	}
	require.Contains(t, lost.output(), fmt.Sprintf(`htu origin %q is not one this Engine serves agents on; it accepts `, proxy.URL))
	require.Contains(t, lost.output(), "http://127.0.0.1:"+target.Port())
	for _, a := range eng.call(t, "GET", "/api/admin/device-approvals?status=pending", token, nil)["approvals"].([]any) {
		require.NotEqual(t, "behind-proxy", a.(map[string]any)["hostname"], "no request awaits approval")
	}
}
