package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// TestWatchdogSubjectsOnARealAgent: watchdog rules against what a real
// cairn-agent reports of this machine (issue 25): its heartbeat's CPU,
// memory and storage open an incident whose sampled values are the real
// ones; the same rules under a boot grace longer than the machine's
// uptime (a device that has just booted) open none while it is online; a process the test
// started and then kills opens a "process missing" incident once the
// agent's inventory says it is gone; and the agent stopping opens an
// offline incident that is purged when it checks in again.
func TestWatchdogSubjectsOnARealAgent(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-watchdog-e2e-")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+dbURL, "CAIRN_DEVICE_ONLINE_WINDOW=30s",
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t)))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Watched", "site_worker_slug": "watched"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	// A process of a name of its own, for the process rule.
	procName := "cairnwdproc"
	procBin := filepath.Join(tmp, procName)
	sleep, err := os.ReadFile("/bin/sleep")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(procBin, sleep, 0o755))
	proc := exec.Command(procBin, "100000")
	require.NoError(t, proc.Start())
	t.Cleanup(func() { _ = proc.Process.Kill(); _, _ = proc.Process.Wait() })

	ag := eng.enrollAgent(t, token, agentBin, tmp, "wd-real", code, caFile)
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)
	// The first inventory lists the process (a hang guard only).
	require.True(t, assertEventually(5*time.Minute, func() bool {
		d := eng.call(t, "GET", "/api/device/details/"+ag.hostname, token, nil)
		return containsProcess(d, procName)
	}), "the agent's inventory lists %s; agent output:\n%s", procName, ag.output())

	watchdog := func(name string, noise map[string]any, rules ...map[string]any) int64 {
		noise["interval_seconds"] = 30
		w := eng.post(t, "/api/watchdogs", token, map[string]any{"name": name, "severity": "warning", "targets": map[string]any{"kind": "all"},
			"match": "all", "rules": rules, "noise": noise, "actions": []map[string]any{{"type": "track"}}})
		return int64(w["id"].(float64))
	}
	heartbeat := []map[string]any{
		{"subject": "cpu_percent", "operator": "gte", "threshold": 0},
		{"subject": "memory_percent", "operator": "gt", "threshold": 0},
		{"subject": "storage_percent", "operator": "gt", "threshold": 0},
	}
	metrics := watchdog("real heartbeat", map[string]any{}, heartbeat...)
	graced := watchdog("just booted", map[string]any{"boot_grace_seconds": 7 * 24 * 3600}, heartbeat...)
	missing := watchdog("process gone", map[string]any{}, map[string]any{"subject": "process", "operator": "missing", "target": procName})
	offline := watchdog("offline", map[string]any{}, map[string]any{"subject": "offline", "operator": "is"})

	incidents := func(watchdogID int64, state string) []map[string]any {
		q := eng.call(t, "GET", fmt.Sprintf("/api/watchdogs/incidents?watchdog_id=%d&state=%s", watchdogID, state), token, nil)
		var out []map[string]any
		for _, i := range q["incidents"].([]any) {
			if inc := i.(map[string]any); int64(inc["watchdog_id"].(float64)) == watchdogID {
				out = append(out, inc)
			}
		}
		return out
	}

	// The heartbeat's real values open an incident and are its samples.
	var open []map[string]any
	require.True(t, assertEventually(3*time.Minute, func() bool { open = incidents(metrics, "Open"); return len(open) == 1 }),
		"the heartbeat rules open an incident; engine output:\n%s", eng.out)
	samples := map[string]float64{}
	for _, s := range open[0]["sampled"].([]any) {
		s := s.(map[string]any)
		switch v := s["value"].(type) {
		case float64:
			samples[s["subject"].(string)] = v
		case map[string]any: // storage: the fullest volume and its use
			require.NotEmpty(t, v["mountpoint"], "%v", s)
			samples[s["subject"].(string)] = v["percent"].(float64)
		}
		require.Equal(t, true, s["matched"], "%v", s)
	}
	require.GreaterOrEqual(t, samples["cpu_percent"], 0.0)
	require.LessOrEqual(t, samples["cpu_percent"], 100.0)
	for _, subject := range []string{"memory_percent", "storage_percent"} {
		require.Greater(t, samples[subject], 0.0, subject)
		require.Less(t, samples[subject], 100.0, subject)
	}

	// The process is killed: the next inventory misses it, and the
	// evaluation after opens the incident. Processes do not change the
	// inventory's hash (they change on every collection), so the agent
	// posts their list with its next full post, at most 5 minutes on
	// (DetailsMaxInterval); the limit is a hang guard only.
	require.Empty(t, incidents(missing, "Open"), "not while the process runs")
	require.NoError(t, proc.Process.Kill())
	_, _ = proc.Process.Wait()
	require.True(t, assertEventually(12*time.Minute, func() bool { return len(incidents(missing, "Open")) == 1 }),
		"a missing process opens an incident; agent output:\n%s", ag.output())

	// Every evaluation so far found the machine inside the boot grace.
	require.Empty(t, incidents(graced, "Open"), "no incident inside the boot grace")
	require.Empty(t, incidents(offline, "Open"), "online")

	// The agent stops: offline after the 30 s window, then back.
	require.NoError(t, ag.cmd.Process.Signal(syscall.SIGTERM))
	_, _ = ag.cmd.Process.Wait()
	var off []map[string]any
	require.True(t, assertEventually(4*time.Minute, func() bool { off = incidents(offline, "Open"); return len(off) == 1 }),
		"a silent agent opens an offline incident")
	require.Equal(t, true, off[0]["offline_only"])
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)
	require.True(t, assertEventually(3*time.Minute, func() bool {
		for _, state := range []string{"Open", "Acknowledged", "Suppressed", "Resolved"} {
			if len(incidents(offline, state)) > 0 {
				return false
			}
		}
		return true
	}), "the offline incident is purged when the device checks in")
	// (The boot grace holds only while the device is online: silent, its
	// last heartbeat's values are evaluated without it.)
}

// containsProcess says whether a device details answer lists a process
// named name.
func containsProcess(details map[string]any, name string) bool {
	procs, _ := details["processes"].([]any)
	for _, p := range procs {
		if m, ok := p.(map[string]any); ok && m["name"] == name {
			return true
		}
	}
	return false
}
