package main

// The scheduled-job figure (-job-kill): a cron job (`* * * * *`) targeting
// the site of every simulated agent fires; while its run is half way
// through its devices the Engine is killed with SIGKILL (its embedded
// Temporal and private PostgreSQL go with it) and started again on the
// same data directory and ports. The simulated agents reconnect, the run
// finishes, and every fire time has exactly one run with one result per
// agent: no duplicate run.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type jobKillResult struct {
	Agents int `json:"agents"`
	// FireToKilledSeconds is from the fire time until the kill, with
	// ResultsAtKill results recorded by then.
	FireToKilledSeconds float64 `json:"fire_to_kill_seconds"`
	ResultsAtKill       int     `json:"results_at_kill"`
	// RestartReadySeconds is from the kill until the new Engine is ready.
	RestartReadySeconds float64 `json:"restart_ready_seconds"`
	// FireToDoneSeconds is from the fire time until the interrupted run
	// recorded every result.
	FireToDoneSeconds float64        `json:"fire_to_done_seconds"`
	FirstRunCounts    map[string]any `json:"first_run_counts"`
	Runs              int            `json:"runs"`
	DuplicateRuns     int            `json:"duplicate_runs"`
	ResultsPerRun     []int          `json:"results_per_run"`
	Errors            []string       `json:"errors,omitempty"`
}

func startEngine(ctx context.Context, bin, dataDir string, port, tport int, extra ...string) (*exec.Cmd, error) {
	engine := exec.CommandContext(ctx, bin, "serve")
	engine.Env = append(cleanEnv(), "CAIRN_DATA_DIR="+dataDir, fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", port),
		"CAIRN_HTTPS_ADDR=off", fmt.Sprintf("CAIRN_PUBLIC_URL=http://127.0.0.1:%d", port), fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", tport),
		"CAIRN_TEMPORAL_UI_PORT=0", "CAIRN_ENROLL_RATE_LIMIT=100000000", "CAIRN_PROOF_RATE_LIMIT=100000000", "CAIRN_LOG_LEVEL=warn")
	engine.Env = append(engine.Env, extra...)
	logFile, err := os.OpenFile(filepath.Join(dataDir, "engine.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	engine.Stdout, engine.Stderr = logFile, logFile
	if err := engine.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { _ = engine.Wait(); logFile.Close() }()
	return engine, nil
}

func runJobKill(ctx context.Context, o runOptions, dataDir string, n int) (*jobKillResult, error) {
	out := &jobKillResult{Agents: n}
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, tport := freePort(), freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport)
	if err != nil {
		return nil, err
	}
	defer func() { stopEngine(engine) }()
	api := &client{base: base}
	if err := api.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready: %w", err)
	}
	code, err := api.prepare(ctx, n, dataDir)
	if err != nil {
		return nil, err
	}
	sites, err := api.call(ctx, "GET", "/api/sites", nil)
	if err != nil {
		return nil, err
	}
	site := sites["sites"].([]any)[0].(map[string]any)["site_id"]

	sim := exec.CommandContext(ctx, o.agentBin, "simulate", "--server", base, "--code", code,
		"--count", strconv.Itoa(n), "--duration", "60m", "--prefix", simPrefix)
	sim.Stderr = os.Stderr
	stdout, err := sim.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := sim.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = sim.Process.Signal(os.Interrupt); _ = sim.Wait() }()
	simOut := newSimOutput()
	go func() { _ = simOut.read(stdout) }()
	select {
	case <-simOut.allConnected:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if _, err := api.waitSockets(ctx, n, time.Now().Add(3*time.Minute)); err != nil {
		return nil, err
	}

	asm, err := api.call(ctx, "POST", "/api/assemblies", map[string]any{"name": "bench", "kind": "script", "language": "sh", "body": "echo bench"})
	if err != nil {
		return nil, err
	}
	job, err := api.call(ctx, "POST", "/api/scheduled_jobs", map[string]any{"name": "bench every minute", "kind": "script",
		"assembly_id": asm["id"], "targets": map[string]any{"sites": []any{site}}, "schedule": map[string]any{"type": "cron", "expression": "* * * * *"}})
	if err != nil {
		return nil, err
	}
	runsPath := fmt.Sprintf("/api/scheduled_jobs/%v/runs?limit=100", job["id"])
	runs := func() []map[string]any {
		res, err := api.call(ctx, "GET", runsPath, nil)
		if err != nil {
			return nil
		}
		var list []map[string]any
		for _, r := range res["runs"].([]any) {
			list = append(list, r.(map[string]any))
		}
		return list
	}
	recorded := func(r map[string]any) int {
		c, _ := r["counts"].(map[string]any)
		total := 0
		for _, k := range []string{"succeeded", "failed", "timed_out", "skipped"} {
			f, _ := c[k].(float64)
			total += int(f)
		}
		return total
	}

	// Kill the Engine once the first run has recorded a quarter of its
	// devices: the rest are in flight or pending.
	var first map[string]any
	for first == nil {
		if rs := runs(); len(rs) > 0 {
			if r := rs[len(rs)-1]; recorded(r) >= n/4 {
				first = r
			}
		}
		if first == nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	fireAt, _ := time.Parse(time.RFC3339, first["scheduled_for"].(string))
	if err := engine.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	killed := time.Now()
	out.FireToKilledSeconds, out.ResultsAtKill = round(killed.Sub(fireAt).Seconds(), 2), recorded(first)
	fmt.Fprintf(logOut, "bench: killed the Engine %.1fs after the fire, %d of %d results recorded\n", out.FireToKilledSeconds, out.ResultsAtKill, n)
	engine, err = restartAfterKill(ctx, o, api, dataDir, port, tport)
	if err != nil {
		return nil, err
	}
	out.RestartReadySeconds = round(time.Since(killed).Seconds(), 2)
	fmt.Fprintf(logOut, "bench: Engine ready again %.1fs after the kill\n", out.RestartReadySeconds)

	firstID := first["run_id"]
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var cur map[string]any
		for _, r := range runs() {
			if r["run_id"] == firstID {
				cur = r
			}
		}
		if cur != nil && (cur["status"] == "succeeded" || cur["status"] == "failed") {
			done, _ := time.Parse(time.RFC3339, cur["finished_at"].(string))
			out.FireToDoneSeconds, out.FirstRunCounts = round(done.Sub(fireAt).Seconds(), 2), cur["counts"].(map[string]any)
			break
		}
		if time.Now().After(deadline) {
			out.Errors = append(out.Errors, "the interrupted run did not finish within 10 minutes")
			break
		}
		time.Sleep(time.Second)
	}
	fmt.Fprintf(logOut, "bench: interrupted run done %.1fs after its fire: %v\n", out.FireToDoneSeconds, out.FirstRunCounts)
	if _, err := api.call(ctx, "POST", fmt.Sprintf("/api/scheduled_jobs/%v/toggle", job["id"]), map[string]any{"enabled": false}); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		busy := false
		for _, r := range runs() {
			busy = busy || (r["status"] != "succeeded" && r["status"] != "failed")
		}
		if !busy {
			break
		}
	}
	fires := map[any]int{}
	for _, r := range runs() {
		fires[r["scheduled_for"]]++
		out.ResultsPerRun = append(out.ResultsPerRun, recorded(r))
	}
	out.Runs = len(out.ResultsPerRun)
	for _, c := range fires {
		out.DuplicateRuns += c - 1
	}
	if out.DuplicateRuns > 0 {
		out.Errors = append(out.Errors, fmt.Sprintf("%d duplicate runs", out.DuplicateRuns))
	}
	return out, nil
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func stopEngine(engine *exec.Cmd) {
	if engine == nil || engine.Process == nil {
		return
	}
	_ = engine.Process.Signal(syscall.SIGINT)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if !alive(engine.Process.Pid) {
			return
		}
	}
	_ = engine.Process.Kill()
}

// restartAfterKill starts the Engine again over the data of one killed
// with -9, unlocking its cipher from a passphrase file as an unattended
// replica would, and waits until it is ready.
func restartAfterKill(ctx context.Context, o runOptions, api *client, dataDir string, port, tport int) (*exec.Cmd, error) {
	// The private PostgreSQL stops when its Engine dies; wait for it.
	pidFile := filepath.Join(dataDir, "postgres", "data", "postmaster.pid")
	for len(clusterPIDs(pidFile)) > 0 && alive(clusterPIDs(pidFile)[0]) {
		time.Sleep(100 * time.Millisecond)
	}
	pass := filepath.Join(dataDir, "passphrase")
	if err := os.WriteFile(pass, []byte("bench passphrase 123"), 0o600); err != nil {
		return nil, err
	}
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport, "CAIRN_AEGIS_PASSPHRASE_FILE="+pass)
	if err != nil {
		return nil, err
	}
	if err := api.waitReady(ctx, 3*time.Minute); err != nil {
		stopEngine(engine)
		return nil, fmt.Errorf("engine not ready after the kill: %w", err)
	}
	return engine, nil
}
