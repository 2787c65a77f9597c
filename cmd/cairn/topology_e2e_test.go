package main

import (
	"bytes"
	"context"
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

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// The scale-out shape with a real agent: one `cairn serve` that runs no
// site workers, two standalone `cairn worker --site` processes on the same
// PostgreSQL and Temporal. The agent's socket lands on a worker, an
// operation started through serve completes there, and when the worker
// holding the socket is killed with -9 in the middle of an operation, the
// agent moves to the other worker and the operation still ends, with its
// activity row saying how.
func TestStandaloneWorkersTakeAgentsAndSurviveAKill(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-topology-e2e-")

	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	temporalPort := freePort(t)
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+dbURL, "CAIRN_SITE_WORKERS=none",
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", temporalPort))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Topology", "site_worker_slug": "topo"})
	slug := site["site_worker_slug"].(string)
	// Site workers hold the master cipher: workflow payloads are sealed
	// under it (issue 21 item 1).
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	workerEnv := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		"CAIRN_PUBLIC_URL=" + eng.publicURL(t), "CAIRN_DATA_DIR=" + filepath.Join(tmp, "data"), "CAIRN_AEGIS_PASSPHRASE_FILE=" + pass}
	w1 := startWorker(t, slug, workerEnv)
	w2 := startWorker(t, slug, workerEnv)

	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	ag := eng.enrollAgent(t, token, agentBin, tmp, "topo-alpha", code, caFile)
	initDir := filepath.Join(tmp, "init.d")
	require.NoError(t, os.MkdirAll(initDir, 0o755))
	writeSlowService(t, initDir, "slowsvc")
	ag.env = []string{"CAIRN_AGENT_INIT_DIR=" + initDir}
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)

	// The standalone workers share the Engine's data directory (one
	// host): their log file is readable through the Engine's logs route.
	sources := map[string]bool{}
	for _, src := range eng.call(t, "GET", "/api/server/logs", token, nil)["sources"].([]any) {
		sources[src.(map[string]any)["name"].(string)] = true
	}
	require.True(t, sources["engine"] && sources["worker-"+slug], "log sources: %v", sources)
	started := eng.call(t, "GET", "/api/server/logs/worker-"+slug+"?q=worker+started", token, nil)["entries"].([]any)
	require.NotEmpty(t, started, "the workers' start lines")

	store, err := db.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(store.Close)
	holder := func() *workerProc {
		row, err := store.DeviceSocketGet(context.Background(), db.DeviceSocketGetParams{Guid: ag.cfg.Agent.GUID, FreshSeconds: 90})
		require.NoError(t, err)
		for _, w := range []*workerProc{w1, w2} {
			if row.SocketLive && row.SocketReplica != "" && w.replica(t, store) == row.SocketReplica {
				return w
			}
		}
		return nil
	}
	require.Eventually(t, func() bool { return holder() != nil }, 60*time.Second, 250*time.Millisecond,
		"the socket is held by a standalone worker; agent output:\n%s", ag.output())

	// An operation through serve, which runs no site worker: the activity
	// runs on a worker and completes with the agent's answer.
	procs := eng.call(t, "GET", "/api/device/processes/"+ag.hostname+"?max_age_seconds=0", token, nil)
	require.NotEmpty(t, procs["processes"], "%v", procs)
	require.Contains(t, fmt.Sprint(procs["processes"]), "cairn-agent")

	// A quick run through serve: serve signs the payload (its cipher is
	// unlocked), a standalone worker that never unlocked the cipher
	// delivers the stored payload, and the real agent verifies it with the
	// key enrollment gave it, runs it with its parameter and posts the
	// outcome.
	require.NotEmpty(t, ag.cfg.ScriptSigning.TrustedPublicKeys, "enrollment delivered the script-signing key")
	runID := eng.post(t, "/api/scripts/quick_run", token, map[string]any{"device_guids": []string{ag.cfg.Agent.GUID},
		"language": "sh", "body": `echo "from-$CAIRN_PARAM_WHO"; exit 4`, "parameters": map[string]any{"who": "e2e"}})["run_id"].(string)
	var run map[string]any
	require.Eventually(t, func() bool {
		run = eng.call(t, "GET", "/api/scripts/quick_run/"+runID, token, nil)
		return run["status"] == "failed" || run["status"] == "succeeded"
	}, 2*time.Minute, 250*time.Millisecond, "the quick run finishes; agent output:\n%s", ag.output())
	result := run["results"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", result["status"], "%v", result)
	require.EqualValues(t, 4, result["exit_code"])
	require.Equal(t, "from-e2e\n", result["stdout"])

	// kill -9 of the holder while the agent is in the middle of a slow
	// service start.
	first := holder()
	answered := make(chan map[string]any, 1)
	go func() {
		answered <- eng.call(t, "POST", "/api/device/services/"+ag.hostname+"/action", token, map[string]any{"name": "slowsvc", "action": "start"})
	}()
	marker := filepath.Join(initDir, "slowsvc.started")
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, 60*time.Second, 100*time.Millisecond,
		"the agent ran the start script")
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = first.cmd.Process.Wait()

	other := w1
	if first == w1 {
		other = w2
	}
	require.Eventually(t, func() bool { return holder() == other }, 120*time.Second, 500*time.Millisecond,
		"the agent moves to the other worker of its site; agent output:\n%s", ag.output())

	// The operation ends, never hangs: here it completes once the request
	// is delivered again through the new holder (the agent answers the
	// repeat from its cache instead of starting the service twice).
	var row map[string]any
	require.Eventually(t, func() bool {
		for _, a := range eng.call(t, "GET", "/api/device/activity/"+ag.hostname, token, nil)["activity"].([]any) {
			if m := a.(map[string]any); m["kind"] == "service_start" && m["status"] != "running" {
				row = m
				return true
			}
		}
		return false
	}, 4*time.Minute, time.Second, "the operation's activity row closes")
	require.Equal(t, "completed", row["status"], "%v", row)
	require.Contains(t, row["summary"], "slowsvc is running")
	starts, err := os.ReadFile(filepath.Join(initDir, "slowsvc.starts"))
	require.NoError(t, err)
	require.Equal(t, "start\n", string(starts), "the agent started the service once")
	select {
	case r := <-answered:
		// Either the answer, or 202 with the operation's URL when the
		// request outlived its wait (Prefer: wait, issue 27): that URL
		// then tells the same outcome as the activity row above.
		if r["state"] != "running" {
			require.Equal(t, "running", r["status"], "%v", r)
			url, _ := r["url"].(string)
			require.NotEmpty(t, url, "%v", r)
			require.Equal(t, "completed", eng.call(t, "GET", url, token, nil)["status"])
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the operator's request never ended")
	}
	_ = w2
}

// writeSlowService is an init script whose start takes seconds, records
// each run, and leaves a marker as soon as it begins.
func writeSlowService(t *testing.T, dir, name string) {
	t.Helper()
	base := filepath.Join(dir, name)
	script := fmt.Sprintf(`#!/bin/sh
BASE=%q
running() { [ -f "$BASE.pid" ] && kill -0 "$(cat "$BASE.pid")" 2>/dev/null; }
case "$1" in
start) running && exit 0; echo start >> "$BASE.starts"; touch "$BASE.started"; sleep 6
       sleep 100000 >/dev/null 2>&1 & echo $! > "$BASE.pid" ;;
stop) if running; then kill "$(cat "$BASE.pid")"; fi; rm -f "$BASE.pid" ;;
restart) "$0" stop; "$0" start ;;
status) running && exit 0; exit 3 ;;
*) exit 2 ;;
esac
`, base)
	require.NoError(t, os.WriteFile(base, []byte(script), 0o755))
	t.Cleanup(func() { _ = exec.Command(base, "stop").Run() })
}

// workerProc is one `cairn worker --site` process.
type workerProc struct {
	cmd  *exec.Cmd
	base string
	out  *bytes.Buffer
	id   string
}

func startWorker(t *testing.T, slug string, env []string) *workerProc {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(os.Args[0], "worker", "--site", slug)
	cmd.Env = append([]string{"CAIRN_TEST_MAIN=1", fmt.Sprintf("CAIRN_WORKER_ADDR=127.0.0.1:%d", port)}, env...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	w := &workerProc{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), out: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	require.Eventually(t, func() bool {
		res, err := http.Get(w.base + "/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}, 2*time.Minute, 200*time.Millisecond, "worker not ready; output:\n%s", w.out)
	return w
}

// replica is the worker's replica ID, from the endpoint it recorded.
func (w *workerProc) replica(t *testing.T, store *db.Store) string {
	t.Helper()
	if w.id != "" {
		return w.id
	}
	rows, err := store.AgentEndpointList(context.Background())
	require.NoError(t, err)
	for _, r := range rows {
		if r.Url == w.base {
			w.id = r.Replica
		}
	}
	return w.id
}

// publicURL is the Engine's default public URL (its HTTP address under
// localhost), which workers must share: it is the token issuer.
func (p *proc) publicURL(t *testing.T) string {
	t.Helper()
	return strings.Replace(p.base, "127.0.0.1", "localhost", 1)
}
