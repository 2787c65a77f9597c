package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// shellResult is the keystroke echo latency of a remote shell: one real
// cairn-agent (a real PTY) behind the Engine's shell bridge, on loopback.
type shellResult struct {
	Keystrokes int     `json:"keystrokes"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	Error      string  `json:"error,omitempty"`
}

const shellHost = "bench-shell"

// benchShell enrolls a real agent in the bench site (auto-approved), opens
// a shell on it through POST /api/shell/establish and the browser's
// socket, runs cat, and times n keystrokes from the write until their
// echo comes back. Each keystroke waits for its echo, so the figures are
// round trips: browser socket -> Engine -> agent socket -> PTY and back.
func benchShell(ctx context.Context, api *client, agentBin, base, code, dir string, n int) *shellResult {
	res := &shellResult{}
	lat, err := shellEcho(ctx, api, agentBin, base, code, dir, n)
	if err != nil {
		res.Error = err.Error()
	}
	if len(lat) == 0 {
		return res
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.Keystrokes = len(lat)
	res.P50Ms = ms(percentile(lat, 0.50))
	res.P99Ms = ms(percentile(lat, 0.99))
	res.MaxMs = ms(lat[len(lat)-1])
	return res
}

func shellEcho(ctx context.Context, api *client, agentBin, base, code, dir string, n int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "agent.json")
	logFile, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	enroll := exec.CommandContext(ctx, agentBin, "enroll", "--server", base, "--code", code, "--hostname", shellHost, "--config", cfg)
	enroll.Stdout, enroll.Stderr = logFile, logFile
	if err := enroll.Run(); err != nil {
		return nil, fmt.Errorf("enroll the shell agent (see %s): %w", logFile.Name(), err)
	}
	run := exec.CommandContext(ctx, agentBin, "run", "--hostname", shellHost, "--config", cfg)
	// /bin/sh: a login bash may run slow profile scripts (docs/agent.md).
	run.Env = append(os.Environ(), "CAIRN_AGENT_SHELL=/bin/sh")
	run.Stdout, run.Stderr = logFile, logFile
	if err := run.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = run.Process.Signal(os.Interrupt)
		_ = run.Wait()
	}()
	if err := waitSocket(ctx, api, shellHost); err != nil {
		return nil, err
	}

	est, err := api.call(ctx, "POST", "/api/shell/establish", map[string]any{"hostname": shellHost})
	if err != nil {
		return nil, err
	}
	wsURL := "ws" + strings.TrimPrefix(base, "http") + est["ws_url"].(string)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+api.token)
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, fmt.Errorf("open the shell socket: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	frames := make(chan []byte, 256)
	go func() {
		defer close(frames)
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				frames <- data
			}
		}
	}()
	// wait reads until out holds want.
	var out bytes.Buffer
	wait := func(want string) error {
		for !bytes.Contains(out.Bytes(), []byte(want)) {
			select {
			case f, ok := <-frames:
				if !ok {
					return errors.New("the shell socket closed")
				}
				out.Write(f)
			case <-ctx.Done():
				return fmt.Errorf("waiting for %q: %w (so far %q)", want, ctx.Err(), out.String())
			}
		}
		return nil
	}
	send := func(s string) error { return conn.Write(ctx, websocket.MessageBinary, []byte(s)) }
	if err := send("echo ready-$((6*7)); exec cat\r"); err != nil {
		return nil, err
	}
	if err := wait("ready-42"); err != nil {
		return nil, err
	}
	var lat []time.Duration
	for i := 0; i < n; i++ {
		key := string(rune('a' + i%26))
		out.Reset()
		start := time.Now()
		if err := send(key); err != nil {
			return lat, err
		}
		if err := wait(key); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(start))
	}
	_ = send("\x04")
	_ = conn.Close(websocket.StatusNormalClosure, "bench done")
	return lat, nil
}

// waitSocket waits until hostname's agent socket is live.
func waitSocket(ctx context.Context, api *client, hostname string) error {
	for {
		if list, err := api.allDevices(ctx, ""); err == nil {
			for _, d := range list {
				if m, ok := d.(map[string]any); ok && m["hostname"] == hostname && m["agent_socket"] == true {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the shell agent never connected: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
