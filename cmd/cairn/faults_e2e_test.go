package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/workflows"
)

// stormAgents is the simulated fleet of the fault suite's reconnect storm:
// small enough for `make test` on two cores; `go run ./scripts/bench
// -storm -counts 1000` measures the 1,000-agent figure (docs/benchmarks.md).
const stormAgents = 50

// Item 19: the Engine is killed with SIGKILL while two real agents and a
// simulated fleet are connected, and started again on the same data
// directory, ports and database. Every agent reconnects to the new
// process (its socket record names the new replica), no refresh token is
// revoked, and no device is duplicated.
func TestEngineKillWithConnectedAgents(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-faults-e2e-")
	dataDir := filepath.Join(tmp, "data")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	env := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t)), "CAIRN_ENROLL_RATE_LIMIT=100000"}
	eng := startServe(t, dataDir, env...)
	token := eng.signIn(t)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	store, err := db.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(store.Close)

	// Two real agents, approved by an operator.
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Faults", "site_worker_slug": "faults"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	var real []*agentProc
	for _, host := range []string{"faults-alpha", "faults-bravo"} {
		ag := startAgent(t, agentBin, tmp, host, "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
		eng.post(t, "/api/admin/device-approvals/"+eng.waitApproval(t, token, host)+"/approve", token, nil)
		ag.waitExit(t, 2*time.Minute)
		ag.cfg = loadAgentConfig(t, ag.dir)
		ag.run(t, agentBin)
		real = append(real, ag)
	}
	// A simulated fleet on an auto-approving site.
	sims := eng.post(t, "/api/sites", token, map[string]any{"name": "Storm", "site_worker_slug": "storm"})
	eng.post(t, fmt.Sprintf("/api/sites/%v/auto-approval", sims["site_id"]), token, map[string]any{"enabled": true, "duration_seconds": 3600})
	simCode := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": sims["site_id"], "max_uses": 2 * stormAgents})["code"].(string)
	sim := exec.Command(agentBin, "simulate", "--server", eng.httpsBase, "--code", simCode, "--ca-file", caFile,
		"--count", strconv.Itoa(stormAgents), "--duration", "60m", "--prefix", "storm")
	stdout, err := sim.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, sim.Start())
	t.Cleanup(func() { _ = sim.Process.Kill(); _ = sim.Wait() })
	counts := make(chan int, 4096)
	go simulatedConnected(stdout, counts)

	total := 2 + stormAgents
	guids := func() map[string]string { // guid -> hostname
		out := map[string]string{}
		for _, d := range eng.call(t, "GET", "/api/devices?limit=1000", token, nil)["devices"].([]any) {
			m := d.(map[string]any)
			out[m["guid"].(string)] = m["hostname"].(string)
		}
		return out
	}
	// sockets maps each device to the replica holding its live socket.
	sockets := func() map[string]string {
		out := map[string]string{}
		for guid := range guids() {
			s, err := store.DeviceSocketGet(context.Background(), db.DeviceSocketGetParams{Guid: guid, FreshSeconds: devices.SocketWindow.Seconds()})
			if err == nil && s.SocketLive {
				out[guid] = s.SocketReplica
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(sockets()) == total }, 5*time.Minute, 500*time.Millisecond,
		"every agent connects first")
	before := guids()
	require.Len(t, before, total)
	oldReplicas := map[string]bool{}
	for _, r := range sockets() {
		oldReplicas[r] = true
	}

	for len(counts) > 0 {
		<-counts // the first connect's progress
	}
	require.NoError(t, eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = eng.cmd.Process.Wait()
	killed := time.Now()
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	eng = serveAgain(t, eng, dataDir, append(env, "CAIRN_AEGIS_PASSPHRASE_FILE="+pass)...)
	ready := time.Since(killed)

	// Every device's socket is live again on the new process.
	require.Eventually(t, func() bool {
		s := sockets()
		for _, r := range s {
			if oldReplicas[r] {
				return false
			}
		}
		return len(s) == total
	}, 10*time.Minute, 250*time.Millisecond, "every agent reconnects to the new Engine")
	t.Logf("reconnect storm: %d agents (2 real, %d simulated) live on the new Engine %.1fs after the kill (ready after %.1fs)",
		total, stormAgents, time.Since(killed).Seconds(), ready.Seconds())
	for _, ag := range real {
		eng.waitStatus(t, token, ag, "Connected", 5*time.Minute)
		require.Nil(t, ag.cmd.ProcessState, "%s kept running:\n%s", ag.hostname, ag.output())
		require.Equal(t, ag.cfg.Agent.GUID, loadAgentConfigFresh(t, ag.dir).Agent.GUID, "%s kept its identity", ag.hostname)
	}
	for c := range counts {
		if c == stormAgents {
			break // the simulated agents count themselves connected too
		}
	}

	// No duplicate device, no revoked refresh token.
	after := guids()
	require.Equal(t, before, after, "the same devices, none added")
	hosts := map[string]bool{}
	for guid, host := range after {
		require.False(t, hosts[host], "two devices named %s", host)
		hosts[host] = true
		n, err := store.RefreshTokenRevokedCount(context.Background(), cairn.DeviceGUID(guid))
		require.NoError(t, err)
		require.Zero(t, n, "%s: a refresh token was revoked", host)
	}
}

var simProgress = regexp.MustCompile(`enrolled=\d+/\d+ connected=(\d+) `)

// simulatedConnected sends the connected count of each of simulate's
// progress lines.
func simulatedConnected(r io.Reader, counts chan<- int) {
	defer close(counts)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if g := simProgress.FindStringSubmatch(sc.Text()); g != nil {
			n, _ := strconv.Atoi(g[1])
			select {
			case counts <- n:
			default:
			}
		}
	}
}

// Item 17: `cairn serve` starts while TEMPORAL_ADDRESS names a server that
// is not running, reports ready but degraded, signs operators in, and
// starts its workers once that server comes up.
func TestServeStartsBeforeTemporal(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "cairn-no-temporal-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	port := freePort(t)
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+pgtest.URL(pgtest.NewDatabase(t)),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", port))
	ready := eng.call(t, "GET", "/ready", "", nil)
	require.Equal(t, "degraded", ready["status"], "%v", ready)
	require.Equal(t, "unavailable", ready["checks"].(map[string]any)["temporal"])
	token := eng.signIn(t)
	require.NotEmpty(t, token)

	srv, err := devtemporal.Start(devtemporal.Options{Port: port, DatabaseFile: filepath.Join(tmp, "temporal.sqlite"),
		SearchAttributes: workflows.SearchAttributes, LogLevel: slog.LevelError, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.Eventually(t, func() bool {
		return eng.call(t, "GET", "/ready", "", nil)["status"] == "ok"
	}, 5*time.Minute, 200*time.Millisecond, "ready once Temporal answers; output:\n%s", eng.out)
	require.Eventually(t, func() bool {
		engine, _ := eng.call(t, "GET", "/api/server/workers", token, nil)["engine"].(map[string]any)
		return engine["state"] == "running" && engine["local"] == true
	}, 5*time.Minute, 200*time.Millisecond, "the engine worker starts; output:\n%s", eng.out)
}
