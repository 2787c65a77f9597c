package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Metadata through a real Engine and a real cairn-agent: a value set on
// the agent's command line reaches the Engine and leaves the agent's queue
// once acknowledged; a value an operator sets reaches the agent (its
// --metadata get shows it); a script run through the agent writes a field
// with the agent's command line via CAIRN_AGENT_BIN, as the bundled
// Windows scripts do.
func TestMetadataRoundTripEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-metadata-e2e-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Meta", "site_worker_slug": "meta"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	ag := startAgent(t, agentBin, tmp, "meta-alpha", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	eng.post(t, "/api/admin/device-approvals/"+eng.waitApproval(t, token, ag.hostname)+"/approve", token, nil)
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	guid := ag.cfg.Agent.GUID
	config := filepath.Join(ag.dir, "agent.json")
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(agentBin, append([]string{"--config", config}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	engineValue := func(n int) map[string]any {
		fields := eng.call(t, "GET", "/api/devices/"+guid+"/metadata_fields", token, nil)["fields"].([]any)
		return fields[n-1].(map[string]any)
	}

	// Set on the command line while the agent is not yet running: queued.
	require.Contains(t, cli("--metadata", "set", "40", "rack 7 / shelf 2"), "queued field 40")
	require.Contains(t, cli("--metadata", "get", "40"), "queued locally")
	require.Len(t, loadAgentConfigFresh(t, ag.dir).Metadata.Queued, 1)
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)

	// The heartbeat carries it; the Engine stores it and acks; the queue empties.
	require.True(t, assertEventually(90*time.Second, func() bool { return engineValue(40)["value"] == "rack 7 / shelf 2" }),
		"the Engine never got field 40; agent output:\n%s", ag.output())
	require.Equal(t, "agent", engineValue(40)["source"])
	require.True(t, assertEventually(90*time.Second, func() bool {
		return len(loadAgentConfigFresh(t, ag.dir).Metadata.Queued) == 0
	}), "the acknowledged write never left the queue; agent output:\n%s", ag.output())
	got := cli("--metadata", "get", "40")
	require.Contains(t, got, "value: rack 7 / shelf 2")
	require.Contains(t, got, "acknowledged by the server")
	require.Contains(t, cli("status"), "queued metadata: 0")
	devices := eng.call(t, "GET", "/api/devices", token, nil)["devices"].([]any)
	require.Equal(t, map[string]any{"40": "rack 7 / shelf 2"}, devices[0].(map[string]any)["metadata_fields"])

	// An operator sets a field: the agent reads it on a later heartbeat.
	eng.call(t, "PUT", "/api/devices/"+guid+"/metadata_fields/41", token, map[string]any{"value": "set in the console"})
	require.True(t, assertEventually(90*time.Second, func() bool {
		return strings.Contains(cli("--metadata", "get", "41"), "value: set in the console\n")
	}), "the agent never read field 41; agent output:\n%s", ag.output())
	require.Contains(t, cli("--metadata", "get", "41"), "acknowledged by the server")
	require.Positive(t, loadAgentConfigFresh(t, ag.dir).Metadata.EngineRevision)

	// An operator overwrites the agent's own field: the agent follows.
	eng.call(t, "PUT", "/api/devices/"+guid+"/metadata_fields/40", token, map[string]any{"value": ""})
	require.True(t, assertEventually(90*time.Second, func() bool {
		return strings.Contains(cli("--metadata", "get", "40"), "value: \n")
	}), "the agent never saw field 40 cleared; agent output:\n%s", ag.output())

	// A script run through the agent finds it by CAIRN_AGENT_BIN and
	// CAIRN_AGENT_CONFIG and sets a field with its command line.
	run := eng.post(t, "/api/scripts/quick_run", token, map[string]any{"device_guids": []string{guid}, "language": "sh",
		"body": `"$CAIRN_AGENT_BIN" --config "$CAIRN_AGENT_CONFIG" --metadata set 42 "from a script"`})
	var status any
	require.True(t, assertEventually(90*time.Second, func() bool {
		status = eng.call(t, "GET", fmt.Sprintf("/api/scripts/quick_run/%v", run["run_id"]), token, nil)["status"]
		return status == "succeeded" || status == "failed"
	}), "the quick run never finished")
	require.Equal(t, "succeeded", status)
	require.True(t, assertEventually(90*time.Second, func() bool { return engineValue(42)["value"] == "from a script" }),
		"the Engine never got field 42; agent output:\n%s", ag.output())
}
