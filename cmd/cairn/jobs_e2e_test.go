package main

import (
	"bytes"
	"fmt"
	"net/http"
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

// A scheduled job survives kill -9 of the Engine (and its embedded
// Temporal) between the schedule's fire and the run's end: after the
// restart the run finishes, and every run executed its script once.
func TestScheduledJobSurvivesEngineKill(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-jobs-e2e-")
	dataDir := filepath.Join(tmp, "data")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	env := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t))}
	eng := startServe(t, dataDir, env...)
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Jobs", "site_worker_slug": "jobs"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	ag := startAgent(t, agentBin, tmp, "jobs-alpha", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	eng.post(t, "/api/admin/device-approvals/"+eng.waitApproval(t, token, ag.hostname)+"/approve", token, nil)
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)

	// Each execution appends a line to a file, slowly enough to be killed
	// in. (A scheduled job's payload is signed when the job is saved, bound
	// to no run, so the script does not know its run ID.)
	ledger := filepath.Join(tmp, "ledger")
	asm := eng.post(t, "/api/assemblies", token, map[string]any{"name": "ledger", "kind": "script", "language": "sh",
		"body": fmt.Sprintf("date +%%s%%N >> %q; sleep 8", ledger)})
	job := eng.post(t, "/api/scheduled_jobs", token, map[string]any{"name": "every minute", "kind": "script",
		"assembly_id": asm["id"], "targets": map[string]any{"devices": []string{ag.cfg.Agent.GUID}},
		"schedule": map[string]any{"type": "cron", "expression": "* * * * *"}})
	runsPath := fmt.Sprintf("/api/scheduled_jobs/%v/runs", job["id"])
	runs := func(p *proc) []any { return p.call(t, "GET", runsPath, token, nil)["runs"].([]any) }

	// The first fire made its run: kill the Engine before it ends.
	require.Eventually(t, func() bool { return len(runs(eng)) > 0 }, 3*time.Minute, 100*time.Millisecond, "no fire")
	require.NoError(t, eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = eng.cmd.Process.Wait()
	first := func() map[string]any {
		rs := runs(eng)
		return rs[len(rs)-1].(map[string]any)
	}

	// The same Engine again: same data directory, ports and database; the
	// cipher unlocks from a file so later fires can sign.
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	eng = serveAgain(t, eng, dataDir, append(env, "CAIRN_AEGIS_PASSPHRASE_FILE="+pass)...)
	var firstRun map[string]any
	require.Eventually(t, func() bool {
		firstRun = first()
		return firstRun["status"] == "succeeded" || firstRun["status"] == "failed"
	}, 4*time.Minute, time.Second, "the interrupted run never finished")
	require.Equal(t, "succeeded", firstRun["status"], "%v", firstRun)
	eng.post(t, fmt.Sprintf("/api/scheduled_jobs/%v/toggle", job["id"]), token, map[string]any{"enabled": false})

	// Every run finished, one per fire time, each script ran once.
	require.Eventually(t, func() bool {
		for _, r := range runs(eng) {
			if s := r.(map[string]any)["status"]; s != "succeeded" && s != "failed" {
				return false
			}
		}
		return true
	}, 3*time.Minute, time.Second)
	all := runs(eng)
	fires := map[any]bool{}
	for _, r := range all {
		m := r.(map[string]any)
		require.False(t, fires[m["scheduled_for"]], "two runs for the fire at %v", m["scheduled_for"])
		fires[m["scheduled_for"]] = true
	}
	raw, err := os.ReadFile(ledger)
	require.NoError(t, err)
	for _, r := range all {
		require.Equal(t, "succeeded", r.(map[string]any)["status"], "%v", r)
	}
	require.Len(t, strings.Fields(string(raw)), len(all), "one execution per run: none lost, none twice")
}

// serveAgain starts `cairn serve` on the ports of an earlier one (agents
// keep their server URL) over the same data directory.
func serveAgain(t *testing.T, old *proc, dataDir string, extraEnv ...string) *proc {
	t.Helper()
	httpAddr := strings.TrimPrefix(old.base, "http://")
	httpsAddr := strings.Replace(strings.TrimPrefix(old.httpsBase, "https://"), "localhost", "127.0.0.1", 1)
	cmd := exec.Command(os.Args[0], "serve")
	env := []string{"CAIRN_TEST_MAIN=1", "CAIRN_DATA_DIR=" + dataDir, "CAIRN_HTTP_ADDR=" + httpAddr, "CAIRN_HTTPS_ADDR=" + httpsAddr,
		"CAIRN_TEMPORAL_UI_PORT=0"}
	env = append(env, extraEnv...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, base: old.base, httpsBase: old.httpsBase, out: out, dataDir: dataDir}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	require.Eventually(t, func() bool {
		res, err := http.Get(p.base + "/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}, 2*time.Minute, 200*time.Millisecond, "engine not ready again; output:\n%s", out)
	return p
}
