package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// A new user's first agent, on the Engine's own machine, told the HTTP
// listener's address as an IP (http://127.0.0.1:<port>) rather than the
// public URL's localhost: the Engine serves agents there, so the agent's
// DPoP proofs for that origin are accepted and it reaches Connected.
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
}
