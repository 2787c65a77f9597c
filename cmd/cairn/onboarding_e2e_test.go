package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 27 item 6 through the real processes (agent behaviour 16): an
// operator redeploys a connected cairn-agent; the agent takes the new
// one-time code, drops its tokens and route, enrolls again with it under
// the same key and GUID (approved at once: the code was made for it), the
// job ends enrolled, and the device keeps working.
func TestRedeployEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-redeploy-e2e-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Redeploy E2E", "site_worker_slug": "redeploy-e2e"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	a := eng.enrollAgent(t, token, agentBin, tmp, "e2e-redeploy", code, caFile)
	guid, key, oldRefresh := a.cfg.Agent.GUID, a.cfg.Ed25519PrivateKey, a.cfg.RefreshToken
	a.run(t, agentBin)
	eng.waitStatus(t, token, a, "Connected", 90*time.Second)

	job := eng.post(t, "/api/onboarding/jobs", token, map[string]any{"device_guid": guid, "reason": "stale agent"})
	newCode := job["enrollment_code"].(string)
	require.NotEqual(t, code, newCode)
	var last map[string]any
	require.True(t, assertEventually(3*time.Minute, func() bool {
		last = eng.call(t, "GET", "/api/onboarding/jobs/"+job["id"].(string), token, nil)
		return last["status"] == "enrolled" || last["finished_at"] != nil
	}), "the job never finished: %v; agent:\n%s", last, a.output())
	require.Equal(t, "enrolled", last["status"], "%v; agent:\n%s", last, a.output())

	cfg := loadAgentConfigFresh(t, a.dir)
	require.Equal(t, newCode, cfg.EnrollmentCode, "the agent enrolled with the new code")
	require.Equal(t, guid, cfg.Agent.GUID, "the same device")
	require.Equal(t, key, cfg.Ed25519PrivateKey, "the same key")
	require.True(t, cfg.HasTokens())
	require.NotEqual(t, oldRefresh, cfg.RefreshToken, "new tokens")
	require.Contains(t, a.output(), "redeployed with a new enrollment code")

	// It keeps working: connected again and answering a script.
	eng.waitStatus(t, token, a, "Connected", 2*time.Minute)
	run := eng.post(t, "/api/scripts/quick_run", token, map[string]any{"device_guids": []string{guid}, "language": "sh",
		"body": `echo still here`})
	var result map[string]any
	require.True(t, assertEventually(2*time.Minute, func() bool {
		result = eng.call(t, "GET", fmt.Sprintf("/api/scripts/quick_run/%v", run["run_id"]), token, nil)
		return result["status"] == "succeeded" || result["status"] == "failed"
	}), "the quick run never finished")
	require.Equal(t, "succeeded", result["status"], "%v", result)
	require.Contains(t, fmt.Sprint(result), "still here")

	// The code was for one use: it enrolls nothing else.
	r2 := eng.rawCall(t, "POST", "/api/onboarding/jobs/"+job["id"].(string)+"/cancel", token, nil)
	require.Equal(t, 409, r2.status, r2.body)
}
