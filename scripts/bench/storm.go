package main

// The reconnect-storm figure (-storm): N simulated agents connect, the
// Engine is killed with SIGKILL (its embedded Temporal and private
// PostgreSQL go with it) and started again on the same data directory and
// ports, and every agent reconnects at once. The figure is the time from
// the kill until every simulated agent holds its socket again and the
// Engine shows every device Connected, with the restart's own share.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

type stormResult struct {
	Agents int `json:"agents"`
	// FirstConnectSeconds is from the simulation's start until every
	// agent was first Connected (enrollment included).
	FirstConnectSeconds float64 `json:"first_connect_seconds"`
	// RestartReadySeconds is from the kill until the new Engine is ready.
	RestartReadySeconds float64 `json:"restart_ready_seconds"`
	// KillToAllConnectedSeconds is from the kill until every device shows
	// Connected again; ReadyToAllConnectedSeconds the part after ready.
	KillToAllConnectedSeconds  float64 `json:"kill_to_all_connected_seconds"`
	ReadyToAllConnectedSeconds float64 `json:"ready_to_all_connected_seconds"`
	Devices                    int     `json:"devices"`
}

func runStorm(ctx context.Context, o runOptions, dataDir string, n int) (*stormResult, error) {
	out := &stormResult{Agents: n}
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, tport := freePort(), freePort()
	api := &client{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport)
	if err != nil {
		return nil, err
	}
	defer func() { stopEngine(engine) }()
	if err := api.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready: %w", err)
	}
	code, err := api.prepare(ctx, n, dataDir)
	if err != nil {
		return nil, err
	}
	sim := exec.CommandContext(ctx, o.agentBin, "simulate", "--server", api.base, "--code", code,
		"--count", strconv.Itoa(n), "--duration", "60m", "--prefix", simPrefix)
	sim.Stderr = os.Stderr
	stdout, err := sim.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := sim.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = sim.Process.Signal(os.Interrupt); _ = sim.Wait() }()
	connected := make(chan int, 1024)
	go readConnected(stdout, connected)
	if err := api.waitConnected(ctx, n); err != nil {
		return nil, err
	}
	out.FirstConnectSeconds = round(time.Since(start).Seconds(), 2)
	fmt.Fprintf(logOut, "bench: %d agents Connected %.1fs after the start\n", n, out.FirstConnectSeconds)

	for len(connected) > 0 {
		<-connected // counts of the first connect
	}
	if err := engine.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	killed := time.Now()
	engine, err = restartAfterKill(ctx, o, api, dataDir, port, tport)
	if err != nil {
		return nil, err
	}
	ready := time.Now()
	out.RestartReadySeconds = round(ready.Sub(killed).Seconds(), 2)
	fmt.Fprintf(logOut, "bench: Engine ready again %.1fs after the kill\n", out.RestartReadySeconds)
	// The agents' own count: after a kill -9 the dead process's socket
	// records stay until the presence sweep, so the Engine's view would
	// count sockets that no longer exist. simulate prints its count every
	// 5 s (the figure's resolution): wait for the drop, then for all.
	if err := waitCount(ctx, connected, func(c int) bool { return c < n }); err != nil {
		return nil, err
	}
	if err := waitCount(ctx, connected, func(c int) bool { return c >= n }); err != nil {
		return nil, err
	}
	if err := api.waitConnected(ctx, n); err != nil {
		return nil, err
	}
	out.KillToAllConnectedSeconds = round(time.Since(killed).Seconds(), 2)
	out.ReadyToAllConnectedSeconds = round(time.Since(ready).Seconds(), 2)
	list, err := api.allDevices(ctx, "")
	if err != nil {
		return nil, err
	}
	out.Devices = len(list)
	fmt.Fprintf(logOut, "bench: every agent Connected again %.1fs after the kill\n", out.KillToAllConnectedSeconds)
	return out, nil
}

// readConnected sends the connected count of each progress line.
func readConnected(r io.Reader, counts chan<- int) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logOut, line)
		if g := progressLine.FindStringSubmatch(line); g != nil {
			c, _ := strconv.Atoi(g[3])
			counts <- c
		}
	}
	close(counts)
}

func waitCount(ctx context.Context, counts <-chan int, ok func(int) bool) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c, open := <-counts:
			if !open {
				return fmt.Errorf("simulate ended")
			}
			if ok(c) {
				return nil
			}
		}
	}
}

// waitConnected waits until the Engine shows n devices Connected.
func (c *client) waitConnected(ctx context.Context, n int) error {
	for {
		if list, err := c.allDevices(ctx, ""); err == nil {
			connected := 0
			for _, d := range list {
				if m, ok := d.(map[string]any); ok && m["connectivity_status"] == "Connected" {
					connected++
				}
			}
			if connected >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
