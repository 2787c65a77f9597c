package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The resident memory of real, idle agents (issue 28: at most 10 MB).
// -agent-rss enrolls one real cairn-agent per binary named in
// -agent-rss-bins on one Engine, runs them side by side, waits until each
// socket is live and its start-up work (inventory, first details post) is
// done, then samples each process's /proc/<pid>/status once a second.

type agentRSSResult struct {
	WarmupSeconds float64          `json:"warmup_seconds"`
	IdleSeconds   float64          `json:"idle_seconds"`
	Agents        []agentRSSFigure `json:"agents"`
	Errors        []string         `json:"errors,omitempty"`
}

// agentRSSFigure is one binary's memory: the medians (and peak) of the
// samples, in MiB. RSS = anonymous (heap, stacks, Go runtime) + file
// (mapped pages of the binary and libraries).
type agentRSSFigure struct {
	Name          string  `json:"name"`
	Binary        string  `json:"binary"`
	Samples       int     `json:"samples"`
	RSSMedianMiB  float64 `json:"rss_median_mib"`
	RSSPeakMiB    float64 `json:"rss_peak_mib"`
	AnonMedianMiB float64 `json:"rss_anon_median_mib"`
	FileMedianMiB float64 `json:"rss_file_median_mib"`
}

func runAgentRSS(ctx context.Context, o runOptions, dataDir, bins string, warmup, idle time.Duration) (*agentRSSResult, error) {
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	type named struct{ name, bin string }
	var agents []named
	for _, kv := range strings.Split(bins, ",") {
		name, bin, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			name, bin = "agent", name
		}
		agents = append(agents, named{name, bin})
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
	code, err := api.prepare(ctx, len(agents), dataDir)
	if err != nil {
		return nil, err
	}
	out := &agentRSSResult{WarmupSeconds: warmup.Seconds(), IdleSeconds: idle.Seconds()}
	pids := make([]int, len(agents))
	for i, a := range agents {
		host := "rss-" + a.name
		pid, stop, err := runRealAgent(ctx, a.bin, base, code, host, filepath.Join(dataDir, host))
		if err != nil {
			return nil, err
		}
		defer stop()
		if err := waitSocket(ctx, api, host); err != nil {
			return nil, err
		}
		pids[i] = pid
	}
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	samples := make([][3][]float64, len(agents))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for end := time.Now().Add(idle); time.Now().Before(end); {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for i, pid := range pids {
			rss, anon, file, err := procMemory(pid)
			if err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", agents[i].name, err))
				continue
			}
			samples[i][0] = append(samples[i][0], rss)
			samples[i][1] = append(samples[i][1], anon)
			samples[i][2] = append(samples[i][2], file)
		}
	}
	for i, a := range agents {
		f := agentRSSFigure{Name: a.name, Binary: a.bin, Samples: len(samples[i][0])}
		if f.Samples > 0 {
			f.RSSMedianMiB, f.AnonMedianMiB, f.FileMedianMiB = round(median(samples[i][0]), 2), round(median(samples[i][1]), 2), round(median(samples[i][2]), 2)
			for _, v := range samples[i][0] {
				f.RSSPeakMiB = max(f.RSSPeakMiB, round(v, 2))
			}
		}
		fmt.Fprintf(logOut, "bench: agent %s: rss median %.2f MiB (anon %.2f, file %.2f), peak %.2f\n",
			a.name, f.RSSMedianMiB, f.AnonMedianMiB, f.FileMedianMiB, f.RSSPeakMiB)
		out.Agents = append(out.Agents, f)
	}
	return out, nil
}

// runRealAgent enrolls and runs bin as hostname, returning its pid.
func runRealAgent(ctx context.Context, bin, base, code, hostname, dir string) (int, func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, nil, err
	}
	cfg := filepath.Join(dir, "agent.json")
	logFile, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return 0, nil, err
	}
	enroll := exec.CommandContext(ctx, bin, "enroll", "--server", base, "--code", code, "--hostname", hostname, "--config", cfg)
	enroll.Stdout, enroll.Stderr = logFile, logFile
	if err := enroll.Run(); err != nil {
		logFile.Close()
		return 0, nil, fmt.Errorf("enroll %s (see %s): %w", hostname, logFile.Name(), err)
	}
	run := exec.CommandContext(ctx, bin, "run", "--hostname", hostname, "--config", cfg)
	run.Env = cleanEnv()
	run.Stdout, run.Stderr = logFile, logFile
	if err := run.Start(); err != nil {
		logFile.Close()
		return 0, nil, err
	}
	return run.Process.Pid, func() {
		_ = run.Process.Signal(os.Interrupt)
		_ = run.Wait()
		logFile.Close()
	}, nil
}

// procMemory reads VmRSS, RssAnon and RssFile (MiB) of pid.
func procMemory(pid int) (rss, anon, file float64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kib, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "VmRSS":
			rss = kib / 1024
		case "RssAnon":
			anon = kib / 1024
		case "RssFile":
			file = kib / 1024
		}
	}
	return rss, anon, file, nil
}
