package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// Agent self-update end to end: real `cairn serve`, real cairn-agent
// processes, and agent builds of this source that differ only in their
// build ID (-X agent/version.BuildID), served from the Engine's artifact
// directory (CAIRN_AGENT_ARTIFACTS) through the manifest.

// buildAgent builds cairn-agent with build ID id into dir; extra -X
// flags break a build on purpose (main.fault).
func buildAgent(t *testing.T, dir, id string, extraX ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	bin := filepath.Join(dir, "cairn-agent")
	ld := "-X github.com/cairn-rmm/cairn/agent/version.BuildID=" + id
	for _, x := range extraX {
		ld += " -X " + x
	}
	out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, "github.com/cairn-rmm/cairn/cmd/cairn-agent").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// publish makes bin (build id) the Engine's current linux-amd64 artifact.
func publish(t *testing.T, artifacts, bin, id string) {
	t.Helper()
	dir := filepath.Join(artifacts, "linux-amd64")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	tmp := filepath.Join(dir, ".cairn-agent.tmp")
	require.NoError(t, os.WriteFile(tmp, b, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cairn-agent.build-id"), []byte(id+"\n"), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "cairn-agent")))
}

// installedBuild runs `version` of the binary installed at exe.
func installedBuild(t *testing.T, exe string) string {
	t.Helper()
	out, err := exec.Command(exe, "version").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "build_id: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no build_id in %q", out)
	return ""
}

// updateEnv is an Engine with artifacts and one site, and agents installed
// from build A in their own directories.
type updateEnv struct {
	tmp, artifacts, dataDir, dbURL string
	eng                            *proc
	token, code, caFile            string
	binA                           string
	ports                          [3]int // http, https, temporal
}

func newUpdateEnv(t *testing.T, prefix string) *updateEnv {
	t.Helper()
	tmp, err := os.MkdirTemp("", prefix)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755))
	e := &updateEnv{tmp: tmp, artifacts: filepath.Join(tmp, "agents"), dataDir: filepath.Join(tmp, "data"),
		dbURL: pgtest.URL(pgtest.NewDatabase(t)), ports: [3]int{freePort(t), freePort(t), freePort(t)}}
	e.binA = buildAgent(t, filepath.Join(tmp, "build-a"), "e2e-a")
	e.start(t)
	e.token = e.eng.signIn(t)
	site := e.eng.post(t, "/api/sites", e.token, map[string]any{"name": "Updates " + prefix, "site_worker_slug": "upd"})
	e.code = e.eng.post(t, "/api/admin/enrollment-codes", e.token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	e.caFile = filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(e.caFile, e.eng.checkHTTPS(t), 0o644))
	return e
}

// start runs `cairn serve` on the environment's fixed ports and database
// (so a restart after kill -9 is the same Engine to its agents).
func (e *updateEnv) start(t *testing.T) {
	t.Helper()
	e.eng = startServeAt(t, e.dataDir, e.ports[0], e.ports[1], "DATABASE_URL="+e.dbURL,
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", e.ports[2]), "CAIRN_AGENT_ARTIFACTS="+e.artifacts)
}

// agent enrolls an agent installed from build A and runs it with args.
func (e *updateEnv) agent(t *testing.T, hostname string, args ...string) (*agentProc, string) {
	t.Helper()
	ag := &agentProc{hostname: hostname, dir: filepath.Join(e.tmp, hostname)}
	require.NoError(t, os.MkdirAll(ag.dir, 0o700))
	exe := filepath.Join(ag.dir, "bin", "cairn-agent")
	require.NoError(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	require.NoError(t, os.WriteFile(exe, must(os.ReadFile(e.binA)), 0o755))
	ag.start(t, exe, "enroll", "--server", e.eng.httpsBase, "--code", e.code, "--ca-file", e.caFile, "--hostname", hostname)
	id := e.eng.waitApproval(t, e.token, hostname)
	e.eng.post(t, "/api/admin/device-approvals/"+id+"/approve", e.token, nil)
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	return ag, exe
}

func (e *updateEnv) run(t *testing.T, ag *agentProc, exe string, args ...string) {
	t.Helper()
	ag.start(t, exe, append([]string{"run", "--hostname", ag.hostname}, args...)...)
	e.eng.waitStatus(t, e.token, ag, "Connected", 120*time.Second)
}

// waitUpdate waits until the operation ends and returns it.
func (e *updateEnv) waitUpdate(t *testing.T, ag *agentProc, opID string) map[string]any {
	t.Helper()
	var op map[string]any
	require.Eventually(t, func() bool {
		h := e.eng.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID+"/agent-updates?operation_id="+opID, e.token, nil)
		hist := h["history"].([]any)
		if len(hist) == 0 {
			return false
		}
		op = hist[0].(map[string]any)
		return op["status"] != "queued" && op["status"] != "running"
	}, 5*time.Minute, 500*time.Millisecond, "update %s ends; last %v; agent output:\n%s", opID, op, ag.output())
	return op
}

func phases(op map[string]any) []string {
	var out []string
	for _, e := range op["events"].([]any) {
		out = append(out, e.(map[string]any)["phase"].(string))
	}
	return out
}

// The operator path: build A updates itself to B through the manifest and
// comes back on B with the whole timeline; update_now on B repairs it in
// place; the hourly check leaves a matching build alone and takes a newer
// one by itself.
func TestAgentUpdatesEndToEnd(t *testing.T) {
	t.Parallel()
	e := newUpdateEnv(t, "cairn-update-e2e-")
	binB := buildAgent(t, filepath.Join(e.tmp, "build-b"), "e2e-b")
	publish(t, e.artifacts, binB, "e2e-b")

	ag, exe := e.agent(t, "upd-alpha")
	// The operator path first, with the hourly check at its default: at
	// every 2 s it would find B current and race the operator's request
	// for the agent (already_running) on a loaded machine.
	e.run(t, ag, exe)
	pid := ag.cmd.Process.Pid

	r := e.eng.post(t, "/api/device/update-agent/"+ag.hostname, e.token, nil)
	opID := r["operation_id"].(string)
	require.NotEmpty(t, r["run_id"])
	op := e.waitUpdate(t, ag, opID)
	require.Equal(t, "succeeded", op["status"], "%v\nagent output:\n%s", op, ag.output())
	require.Equal(t, "operator", op["reason"])
	require.Equal(t, "e2e-a", op["from_build_id"])
	require.Equal(t, "e2e-b", op["to_build_id"])
	require.Equal(t, []string{"accepted", "downloading", "verifying", "installing", "restarting", "verifying_checkin", "completed"}, phases(op))
	require.Equal(t, "e2e-b", installedBuild(t, exe))
	require.Equal(t, "e2e-a", installedBuild(t, exe+".previous"), "the replaced build is kept")
	require.Equal(t, pid, ag.cmd.Process.Pid, "the agent re-executed itself in place")
	require.NoError(t, ag.cmd.Process.Signal(syscall.Signal(0)), "and still runs")
	cfg := loadAgentConfigFresh(t, ag.dir)
	require.Equal(t, "e2e-b", cfg.Agent.InstalledBuildID)
	require.Equal(t, ag.cfg.Agent.GUID, cfg.Agent.GUID, "identity is kept")
	require.Equal(t, ag.cfg.Ed25519PrivateKey, cfg.Ed25519PrivateKey)
	e.eng.waitStatus(t, e.token, ag, "Connected", 120*time.Second)

	// From here the hourly check runs every 2 s, on a matching build.
	require.NoError(t, ag.cmd.Process.Signal(syscall.SIGTERM))
	_ = ag.cmd.Wait()
	e.run(t, ag, exe, "--update-check-interval", "2s")

	// update_now on the build it runs: an install-equivalent repair.
	m := e.eng.post(t, "/api/devices/agent-maintenance", e.token, map[string]any{"action": "update_now", "guids": []string{ag.cfg.Agent.GUID}})
	ops := m["operations"].([]any)
	require.Len(t, ops, 1)
	repair := e.waitUpdate(t, ag, ops[0].(map[string]any)["operation_id"].(string))
	require.Equal(t, "succeeded", repair["status"], "%v", repair)
	require.Equal(t, "e2e-b", repair["from_build_id"])
	require.Equal(t, "e2e-b", repair["to_build_id"])
	require.Contains(t, phases(repair), "restarting", "a repair reinstalls")
	require.Equal(t, "e2e-b", installedBuild(t, exe))
	require.Equal(t, ag.cfg.Agent.GUID, loadAgentConfigFresh(t, ag.dir).Agent.GUID)

	// A second request while one is active is refused.
	first := e.eng.post(t, "/api/device/update-agent/"+ag.hostname, e.token, nil)
	dup := e.eng.rawCall(t, "POST", "/api/device/update-agent/"+ag.hostname, e.token, nil)
	require.Equal(t, 409, dup.status, dup.body)
	require.Contains(t, dup.body, "update_in_progress")
	require.Equal(t, "succeeded", e.waitUpdate(t, ag, first["operation_id"].(string))["status"])

	// The hourly check (every 2 s here) found the matching build all along
	// and did nothing: every update so far is an operator's.
	h := e.eng.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID+"/agent-updates?limit=100", e.token, nil)
	require.Len(t, h["history"], 3)
	for _, o := range h["history"].([]any) {
		require.Equal(t, "operator", o.(map[string]any)["reason"])
	}

	// A newer build appears: the agent takes it by itself.
	binC := buildAgent(t, filepath.Join(e.tmp, "build-c"), "e2e-c")
	publish(t, e.artifacts, binC, "e2e-c")
	var hourly map[string]any
	require.Eventually(t, func() bool {
		h := e.eng.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID+"/agent-updates?limit=100", e.token, nil)
		for _, o := range h["history"].([]any) {
			if m := o.(map[string]any); m["reason"] == "hourly" && m["status"] == "succeeded" {
				hourly = m
				return true
			}
		}
		return false
	}, 5*time.Minute, time.Second, "the hourly check updates to e2e-c; agent output:\n%s", ag.output())
	require.Equal(t, "e2e-c", hourly["to_build_id"])
	require.NotEmpty(t, hourly["run_id"])
	require.Equal(t, "e2e-c", installedBuild(t, exe))
}

// kill -9 of the Engine in the middle of an update: the agent finishes
// once the Engine is back, and the workflow records the outcome.
func TestAgentUpdateSurvivesEngineKill(t *testing.T) {
	t.Parallel()
	e := newUpdateEnv(t, "cairn-update-kill-e2e-")
	binB := buildAgent(t, filepath.Join(e.tmp, "build-b"), "e2e-b")
	publish(t, e.artifacts, binB, "e2e-b")
	ag, exe := e.agent(t, "upd-kill")
	e.run(t, ag, exe)

	opID := e.eng.post(t, "/api/device/update-agent/"+ag.hostname, e.token, nil)["operation_id"].(string)
	require.Eventually(t, func() bool {
		h := e.eng.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID+"/agent-updates?operation_id="+opID, e.token, nil)
		return len(h["history"].([]any)) == 1 && h["history"].([]any)[0].(map[string]any)["status"] == "running"
	}, 2*time.Minute, 100*time.Millisecond)
	require.NoError(t, e.eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = e.eng.cmd.Process.Wait()

	e.start(t)
	e.eng.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})
	op := e.waitUpdate(t, ag, opID)
	require.Equal(t, "succeeded", op["status"], "%v\nagent output:\n%s", op, ag.output())
	require.Contains(t, phases(op), "completed")
	require.Equal(t, "e2e-b", installedBuild(t, exe))
	e.eng.waitStatus(t, e.token, ag, "Connected", 120*time.Second)
}

// A build that starts but never checks in is rolled back by the agent,
// which comes back on the previous build; an update signed by an artifact
// key the agent did not pin is refused and changes nothing, though the
// script key's signature of it is valid.
func TestAgentUpdateRollbackAndRefusal(t *testing.T) {
	t.Parallel()
	e := newUpdateEnv(t, "cairn-update-rollback-e2e-")
	broken := buildAgent(t, filepath.Join(e.tmp, "build-broken"), "e2e-broken", "main.fault=no-checkin")
	publish(t, e.artifacts, broken, "e2e-broken")

	ag, exe := e.agent(t, "upd-rollback")
	e.run(t, ag, exe, "--update-checkin-deadline", "5s")
	opID := e.eng.post(t, "/api/device/update-agent/"+ag.hostname, e.token, nil)["operation_id"].(string)
	op := e.waitUpdate(t, ag, opID)
	require.Equal(t, "rolled_back", op["status"], "%v\nagent output:\n%s", op, ag.output())
	require.Contains(t, op["failure_summary"], "did not check in")
	require.Equal(t, "rolled_back", phases(op)[len(phases(op))-1])
	require.Equal(t, "e2e-a", installedBuild(t, exe), "the previous build is back")
	e.eng.waitStatus(t, e.token, ag, "Connected", 120*time.Second)

	// Enrollment pinned an artifact key apart from the script keys.
	require.Len(t, ag.cfg.ScriptSigning.ArtifactPublicKeys, 1)
	require.NotContains(t, ag.cfg.ScriptSigning.TrustedPublicKeys, ag.cfg.ScriptSigning.ArtifactPublicKeys[0])

	// The Engine comes back holding an artifact key the agent never pinned
	// (a replica given the wrong key, or one an attacker made) and the
	// database's script-key signature intact: the agent refuses the update
	// and keeps running the build it has.
	require.NoError(t, e.eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = e.eng.cmd.Process.Wait()
	require.NoError(t, os.Remove(filepath.Join(e.dataDir, "artifact-signing.key")))
	e.start(t)
	e.eng.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})
	e.eng.waitStatus(t, e.token, ag, "Connected", 120*time.Second)
	pid := ag.cmd.Process.Pid
	opID = e.eng.post(t, "/api/device/update-agent/"+ag.hostname, e.token, nil)["operation_id"].(string)
	op = e.waitUpdate(t, ag, opID)
	require.Equal(t, "failed", op["status"], "%v", op)
	require.Contains(t, op["failure_summary"], "signature_invalid")
	require.Empty(t, phases(op), "the agent did nothing")
	require.Equal(t, "e2e-a", installedBuild(t, exe))
	require.Equal(t, pid, ag.cmd.Process.Pid)
	require.NoError(t, ag.cmd.Process.Signal(syscall.Signal(0)), "the agent keeps running")
	e.eng.waitStatus(t, e.token, ag, "Connected", 30*time.Second)
}
