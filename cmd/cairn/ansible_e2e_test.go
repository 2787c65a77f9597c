package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An Ansible playbook assembly through a real Engine and a real
// cairn-agent running Debian's ansible-playbook: the first run writes a
// file and reports changed=1, its output readable while it still runs;
// the second finds the file as it should be (ok, changed=0); both results
// are stored with their recap.
func TestAnsiblePlaybookEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-ansible-e2e-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Playbooks", "site_worker_slug": "playbooks"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	ag := startAgent(t, agentBin, tmp, "ansible-alpha", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	eng.post(t, "/api/admin/device-approvals/"+eng.waitApproval(t, token, ag.hostname)+"/approve", token, nil)
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	guid := ag.cfg.Agent.GUID
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)

	target := filepath.Join(tmp, "motd.txt")
	gate := filepath.Join(tmp, "gate")
	asm := eng.post(t, "/api/assemblies", token, map[string]any{"name": "Message of the day", "kind": "ansible_playbook",
		"parameters": []any{map[string]any{"name": "message", "type": "string", "required": true}},
		"body": `- hosts: localhost
  gather_facts: false
  tasks:
    - name: write the message
      ansible.builtin.copy:
        dest: ` + target + `
        content: "{{ message }}\n"
    - name: wait for the gate
      ansible.builtin.wait_for:
        path: ` + gate + `
        timeout: 600
`})
	run := func() string {
		r := eng.post(t, "/api/scripts/quick_run", token, map[string]any{"device_guids": []string{guid}, "assembly_id": asm["id"],
			"parameters": map[string]any{"message": "maintenance at 22:00"}})
		return fmt.Sprint(r["run_id"])
	}
	result := func(id string) (map[string]any, map[string]any) {
		r := eng.call(t, "GET", "/api/scripts/quick_run/"+id, token, nil)
		results, _ := r["results"].([]any)
		if len(results) != 1 {
			return r, map[string]any{}
		}
		return r, results[0].(map[string]any)
	}
	finished := func(id string) (map[string]any, map[string]any) {
		var r, res map[string]any
		require.True(t, assertEventually(3*time.Minute, func() bool {
			r, res = result(id)
			return r["status"] == "succeeded" || r["status"] == "failed"
		}), "the playbook run never finished: %v; agent output:\n%s", r, ag.output())
		return r, res
	}

	first := run()
	var live map[string]any
	require.True(t, assertEventually(3*time.Minute, func() bool {
		_, live = result(first)
		out, _ := live["stdout"].(string)
		return live["status"] == "running" && strings.Contains(out, "changed: [localhost]") && strings.Contains(out, "TASK [wait for the gate]")
	}), "the output was not streamed while the playbook ran: %v; agent output:\n%s", live, ag.output())
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "maintenance at 22:00\n", string(got))
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	r, res := finished(first)
	require.Equal(t, "succeeded", r["status"], "%v", res)
	require.Equal(t, "ansible", r["language"])
	require.Equal(t, float64(0), res["exit_code"])
	require.Contains(t, res["stdout"], "PLAY RECAP")
	recap := res["ansible"].(map[string]any)
	require.Equal(t, float64(1), recap["changed"], "%v", res)
	require.Equal(t, float64(2), recap["ok"])
	require.Equal(t, float64(0), recap["failed"])
	require.True(t, strings.HasPrefix(fmt.Sprint(recap["version"]), "2."), "%v", recap)

	r, res = finished(run())
	require.Equal(t, "succeeded", r["status"], "%v", res)
	recap = res["ansible"].(map[string]any)
	require.Equal(t, float64(0), recap["changed"], "the second run finds the file as it should be: %v", res)
	require.Equal(t, float64(2), recap["ok"])
}
