package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Ansible playbook assemblies run through the quick-run path on the
// agent's real runner, with Debian's ansible package (scripts/deps.sh).

// filePlaybook writes {{ greeting }} to path, then waits (when gate is
// not empty) until gate exists.
func filePlaybook(path, gate string) string {
	pb := `- hosts: localhost
  gather_facts: false
  tasks:
    - name: write the greeting
      ansible.builtin.copy:
        dest: ` + path + `
        content: "{{ greeting }}\n"
`
	if gate != "" {
		pb += `    - name: wait for the gate
      ansible.builtin.wait_for:
        path: ` + gate + `
        timeout: 600
`
	}
	return pb
}

func (f *fixture) playbookAssembly(t *testing.T, admin, name, body string) int64 {
	t.Helper()
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": name, "kind": "ansible_playbook", "body": body,
		"timeout_seconds": 300, "parameters": []any{map[string]any{"name": "greeting", "type": "string", "default": "hello"}}})
	require.Equal(t, 201, r.Status, r.Raw)
	return int64(r.Body["id"].(float64))
}

// A playbook runs on a real agent: the first run changes the file and
// reports changed=1, the second reports it ok; the result keeps the
// output and the recap, the device's activity has the run.
func TestAnsiblePlaybookRun(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "ansible")
	a := f.scriptAgent(t, admin, site, "ansible-01")
	target := filepath.Join(t.TempDir(), "greeting.txt")
	id := f.playbookAssembly(t, admin, "Greeting", filePlaybook(target, ""))

	run := func(greeting string) map[string]any {
		runID := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": id,
			"parameters": map[string]any{"greeting": greeting}})
		r := f.finishedRun(t, admin, runID)
		require.Equal(t, "succeeded", r.Body["status"], r.Raw)
		require.Equal(t, proto.LangAnsible, r.Body["language"])
		require.Equal(t, "Greeting", r.Body["assembly_name"])
		return onlyResult(t, r)
	}
	res := run("hi there")
	require.Equal(t, "succeeded", res["status"])
	require.Equal(t, float64(0), res["exit_code"])
	require.Contains(t, res["stdout"], "PLAY RECAP")
	recap := res["ansible"].(map[string]any)
	require.Equal(t, float64(1), recap["changed"])
	require.Equal(t, float64(1), recap["ok"])
	require.Equal(t, float64(0), recap["failed"])
	require.NotEmpty(t, recap["version"])
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "hi there\n", string(got))

	res = run("hi there")
	recap = res["ansible"].(map[string]any)
	require.Equal(t, float64(0), recap["changed"], "the second run finds the file as it should be")
	require.Equal(t, float64(1), recap["ok"])

	act := f.do(t, "GET", "/api/device/activity/ansible-01", admin, nil)
	found := false
	for _, e := range act.Body["activity"].([]any) {
		if m := e.(map[string]any); m["kind"] == "script_run" && m["summary"] == "Run playbook Greeting: exit code 0 (ok=1 changed=0 unreachable=0 failed=0)" {
			found = true
		}
	}
	require.True(t, found, act.Raw)
}

// While a playbook runs its output so far is readable, and its batch
// holds one slot of its site's lane (SPEC "Limits"), freed at the end.
func TestAnsiblePlaybookStreamsAndHoldsASlot(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "ansible-live")
	a := f.scriptAgent(t, admin, site, "ansible-live-01")
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	id := f.playbookAssembly(t, admin, "Gated", filePlaybook(filepath.Join(dir, "out.txt"), gate))
	runID := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": id})
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/scripts/quick_run/"+runID, admin, nil)
		res := onlyResult(t, r)
		out, _ := res["stdout"].(string)
		return res["status"] == "running" && strings.Contains(out, "TASK [write the greeting]") &&
			strings.Contains(out, "changed: [localhost]") && f.laneActiveItems(t, admin, site) == 1
	}, 2*time.Minute, 200*time.Millisecond, "the output so far is shown while the playbook waits, and the run holds a slot")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	res := onlyResult(t, f.finishedRun(t, admin, runID))
	require.Equal(t, "succeeded", res["status"], res["stdout"])
	require.Equal(t, float64(2), res["ansible"].(map[string]any)["ok"])
	require.Eventually(t, func() bool { return f.laneActiveItems(t, admin, site) == 0 }, time.Minute, 100*time.Millisecond,
		"the slot is freed")
}

// Refusals: a quarantined device is skipped, an agent without
// ansible-playbook answers ansible_unavailable, an agent without the
// ansible capability is agent_too_old (and is sent nothing), an agent that
// no longer trusts the signing key refuses the playbook; nothing is
// written.
func TestAnsiblePlaybookRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "ansible-refuse")
	quarantined := f.scriptAgent(t, admin, site, "ansible-q")
	require.Equal(t, 200, f.do(t, "POST", "/api/devices/"+quarantined.guid+"/quarantine", admin, nil).Status)
	noAnsible := f.scriptAgentWith(t, admin, site, "ansible-none", func(o *automation.Options) { o.Path = t.TempDir() })
	old := f.capsAgent(t, admin, site, "ansible-old", 0, []proto.Capability{proto.CapScripts})
	target := filepath.Join(t.TempDir(), "never.txt")
	id := f.playbookAssembly(t, admin, "Refused", filePlaybook(target, ""))
	results := func(guids ...string) map[string]map[string]any {
		r := f.finishedRun(t, admin, f.quickRun(t, admin, map[string]any{"device_guids": guids, "assembly_id": id}))
		require.Equal(t, "failed", r.Body["status"])
		byHost := map[string]map[string]any{}
		for _, x := range r.Body["results"].([]any) {
			m := x.(map[string]any)
			byHost[m["hostname"].(string)] = m
		}
		return byHost
	}
	check := func(byHost map[string]map[string]any, want map[string][2]string) {
		t.Helper()
		for host, w := range want {
			require.Equal(t, w[0], byHost[host]["status"], "%s: %v", host, byHost[host])
			require.Equal(t, w[1], byHost[host]["error_code"], "%s: %v", host, byHost[host])
			require.Nil(t, byHost[host]["ansible"])
		}
	}
	check(results(quarantined.guid, noAnsible.guid, old.guid), map[string][2]string{
		"ansible-q":    {"skipped", "device_quarantined"},
		"ansible-none": {"failed", proto.CodeAnsibleUnavailable},
		"ansible-old":  {"failed", "agent_too_old"},
	})
	require.Zero(t, old.total(), "nothing was sent to the old agent")

	// Two rotations retire the key the agent got at enrollment (it skipped
	// the heartbeats carrying the new ones): it refuses what is signed now.
	untrusting := f.scriptAgent(t, admin, site, "ansible-untrusting")
	for range 2 {
		require.Equal(t, 200, f.do(t, "POST", "/api/server/script-signing/rotate", admin, map[string]any{"force": true}).Status)
	}
	check(results(untrusting.guid), map[string][2]string{"ansible-untrusting": {"failed", proto.CodeSignatureInvalid}})
	require.NoFileExists(t, target)
}

// A scheduled job may run a playbook: its content is signed when the job
// is saved, each fire signs per device from it; the fire's slot is the
// run's only one (SPEC "Limits": scheduled Ansible uses a slot while
// active), freed when it ends.
func TestAnsibleScheduledPlaybook(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "ansible-job")
	a := f.scriptAgent(t, admin, site, "ansible-job-01")
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	target := filepath.Join(dir, "out.txt")
	id := f.playbookAssembly(t, admin, "Nightly greeting", filePlaybook(target, gate))
	r := f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "nightly playbook", "kind": "script", "assembly_id": id,
		"parameters": map[string]any{"greeting": "from a job"},
		"targets":    map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "manual"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", job), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	jobRun := func() response {
		return f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", job, runID), admin, nil)
	}
	require.Eventually(t, func() bool {
		d := jobRun()
		if d.Status != 200 {
			return false
		}
		out, _ := onlyResult(t, d)["stdout"].(string)
		return strings.Contains(out, "changed: [localhost]") && f.laneActiveItems(t, admin, site) == 1
	}, 2*time.Minute, 200*time.Millisecond, "the playbook runs holding the fire's one slot")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "from a job\n", string(got))
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	require.Eventually(t, func() bool { return jobRun().Body["status"] == "succeeded" }, 2*time.Minute, 200*time.Millisecond)
	res := onlyResult(t, jobRun())
	require.Equal(t, float64(1), res["ansible"].(map[string]any)["changed"], "%v", res)
	require.Equal(t, proto.LangAnsible, jobRun().Body["language"])
	require.Eventually(t, func() bool { return f.laneActiveItems(t, admin, site) == 0 }, time.Minute, 100*time.Millisecond)
}

// Bad playbooks and bad runs are validation_failed naming the field.
func TestAnsiblePlaybookValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "ansible-val")
	a := f.enrolled(t, admin, site, "ansible-val-01")
	for _, tc := range []struct{ name, body string }{
		{"empty", " "},
		{"not a list of plays", "echo hi"},
		{"not YAML", "- hosts: [localhost\n"},
		{"no plays", "[]"},
		{"other hosts", "- hosts: webservers\n  tasks: []\n"},
		{"no hosts", "- tasks: []\n"},
		{"ssh", "- hosts: localhost\n  connection: ssh\n  tasks: []\n"},
		{"import", "- import_playbook: other.yml\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "bad " + tc.name, "kind": "ansible_playbook", "body": tc.body})
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field("body"), r.Raw)
		})
	}
	id := f.playbookAssembly(t, admin, "Valid", filePlaybook(filepath.Join(t.TempDir(), "x"), ""))
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"unknown parameter", map[string]any{"device_guids": []string{a.guid}, "assembly_id": id, "parameters": map[string]any{"nope": "x"}}, "parameters.nope"},
		{"parameter type", map[string]any{"device_guids": []string{a.guid}, "assembly_id": id, "parameters": map[string]any{"greeting": 5}}, "parameters.greeting"},
		{"timeout", map[string]any{"device_guids": []string{a.guid}, "assembly_id": id, "timeout_seconds": 86401}, "timeout_seconds"},
		{"no devices", map[string]any{"assembly_id": id}, "device_guids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/scripts/quick_run", admin, tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(tc.field), r.Raw)
		})
	}
}

// An operator runs playbooks only on devices of assigned sites; another
// site's run reads as not found.
func TestAnsiblePlaybookScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	mine := f.createSite(t, admin, "ansible-a")
	other := f.createSite(t, admin, "ansible-b")
	a := f.scriptAgent(t, admin, mine, "ansible-a-01")
	b := f.scriptAgent(t, admin, other, "ansible-b-01")
	op := f.scopedOperatorOf(t, admin, "ansible-op", mine)
	dir := t.TempDir()
	id := f.playbookAssembly(t, admin, "Scoped", filePlaybook(filepath.Join(dir, "out.txt"), ""))

	r := f.do(t, "POST", "/api/scripts/quick_run", op, map[string]any{"device_guids": []string{a.guid, b.guid}, "assembly_id": id})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("device_guids[1]"))

	otherRun := f.quickRun(t, admin, map[string]any{"device_guids": []string{b.guid}, "assembly_id": id})
	f.finishedRun(t, admin, otherRun)
	hidden := f.do(t, "GET", "/api/scripts/quick_run/"+otherRun, op, nil)
	require.Equal(t, 404, hidden.Status)
	require.NotContains(t, hidden.Raw, "ansible-b-01")

	mineRun := f.quickRun(t, op, map[string]any{"device_guids": []string{a.guid}, "assembly_id": id})
	require.Equal(t, "succeeded", f.finishedRun(t, op, mineRun).Body["status"])
}

// GET /api/server/ansible-runner-settings answers administrators only.
func TestAnsibleRunnerSettings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	r := f.do(t, "GET", "/api/server/ansible-runner-settings", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "agent", r.Body["runner"])
	require.Equal(t, "local", r.Body["connection"])
	require.Equal(t, "localhost", r.Body["inventory"])
	require.Equal(t, []any{"linux"}, r.Body["platforms"])
	bin := r.Body["binary"].(map[string]any)
	require.Equal(t, "ansible-playbook", bin["name"])
	require.Equal(t, proto.AnsibleMinCoreVersion, bin["min_core_version"])
	require.Equal(t, proto.CodeAnsibleUnavailable, bin["unavailable_code"])
	slots := r.Body["slots"].(map[string]any)
	require.Positive(t, slots["site_capacity"])
	require.Equal(t, "ansible", slots["slot_kind"])
	require.Equal(t, float64(300), r.Body["default_timeout_seconds"])

	op := f.operator(t, "ansible-viewer")
	require.Equal(t, 403, f.do(t, "GET", "/api/server/ansible-runner-settings", op, nil).Status)
}
