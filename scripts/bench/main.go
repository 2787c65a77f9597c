// Command bench measures the Engine under simulated agents: it starts a
// fresh `cairn serve` (private PostgreSQL, embedded Temporal), signs in,
// creates a site with auto-approval and an enrollment code, runs
// `cairn-agent simulate --count N`, samples the Engine's CPU and resident
// memory meanwhile, and prints one JSON line per run. `make bench` runs it
// for N = 1000 and 5000; docs/benchmarks.md records the figures.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pquerna/otp/totp"
)

func main() {
	var (
		engineBin = flag.String("engine", "bin/cairn", "the cairn binary")
		agentBin  = flag.String("agent", "bin/cairn-agent", "the cairn-agent binary")
		counts    = flag.String("counts", "1000,5000", "comma-separated agent counts, one run each")
		duration  = flag.Duration("duration", 3*time.Minute, "how long each simulation runs after its start")
		dataRoot  = flag.String("data", ".data/bench", "where each run's Engine data directory goes (wiped first)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("bad count %q", c))
		}
		res, err := run(ctx, *engineBin, *agentBin, filepath.Join(*dataRoot, strconv.Itoa(n)), n, *duration)
		if err != nil {
			fail(err)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// result is one run's figures.
type result struct {
	Agents          int                `json:"agents"`
	DurationSeconds float64            `json:"duration_seconds"`
	Simulate        map[string]any     `json:"simulate"`
	Engine          usage              `json:"engine"`
	PostgreSQL      usage              `json:"postgresql"`
	PerAgent        map[string]float64 `json:"per_connected_agent"`
}

// usage is CPU (cores in use, averaged over the steady phase) and resident
// memory (median and peak of the samples).
type usage struct {
	CPUCoresMean float64 `json:"cpu_cores_mean"`
	RSSMedianMiB float64 `json:"rss_median_mib"`
	RSSPeakMiB   float64 `json:"rss_peak_mib"`
}

func run(ctx context.Context, engineBin, agentBin, dataDir string, n int, duration time.Duration) (*result, error) {
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, tport := freePort(), freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	engine := exec.CommandContext(ctx, engineBin, "serve")
	engine.Env = append(cleanEnv(), "CAIRN_DATA_DIR="+dataDir, fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", port),
		"CAIRN_HTTPS_ADDR=off", "CAIRN_PUBLIC_URL="+base, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", tport),
		"CAIRN_TEMPORAL_UI_PORT=0", "CAIRN_ENROLL_RATE_LIMIT=100000000", "CAIRN_LOG_LEVEL=warn")
	logFile, err := os.Create(filepath.Join(dataDir, "engine.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	engine.Stdout, engine.Stderr = logFile, logFile
	if err := engine.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = engine.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = engine.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = engine.Process.Kill()
		}
	}()
	api := &client{base: base}
	if err := api.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready (see %s): %w", logFile.Name(), err)
	}
	code, err := api.prepare(ctx, n)
	if err != nil {
		return nil, err
	}

	sampler := newSampler(engine.Process.Pid, filepath.Join(dataDir, "postgres", "data", "postmaster.pid"))
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go sampler.run(sampleCtx, time.Second)
	sim := exec.CommandContext(ctx, agentBin, "simulate", "--server", base, "--code", code,
		"--count", strconv.Itoa(n), "--duration", duration.String())
	sim.Stderr = os.Stderr
	stdout, err := sim.StdoutPipe()
	if err != nil {
		stopSampling()
		return nil, err
	}
	start := time.Now()
	if err := sim.Start(); err != nil {
		stopSampling()
		return nil, err
	}
	summary, steadyFrom, err := lastJSONLine(stdout)
	werr := sim.Wait()
	stopSampling()
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	// The steady phase starts once every agent is connected (else: the last
	// half of the run): enrollment is over and every agent heartbeats.
	if steadyFrom.IsZero() {
		steadyFrom = start.Add(time.Since(start) / 2)
	}
	eng, pg := sampler.summary(steadyFrom)
	res := &result{Agents: n, DurationSeconds: time.Since(start).Seconds(), Simulate: summary, Engine: eng, PostgreSQL: pg}
	if connected, ok := summary["connected"].(float64); ok && connected > 0 {
		res.PerAgent = map[string]float64{
			"engine_cpu_millicores": eng.CPUCoresMean * 1000 / connected,
			"engine_rss_kib":        eng.RSSMedianMiB * 1024 / connected,
		}
	}
	return res, nil
}

// progressLine is simulate's periodic line (agent/runtime/simstats.go).
var progressLine = regexp.MustCompile(`enrolled=(\d+)/(\d+) connected=(\d+) hb/s=([\d.]+) p50=([\d.]+)ms p99=([\d.]+)ms`)

// lastJSONLine echoes simulate's progress lines and returns its final JSON
// summary line, with "steady" added: the medians of the progress windows
// once every agent was connected (the whole-run figures include the
// enrollment rush).
func lastJSONLine(r io.Reader) (map[string]any, time.Time, error) {
	var last map[string]any
	var steadyFrom time.Time
	var rate, p50, p99 []float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		var m map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			last = m
			continue
		}
		if g := progressLine.FindStringSubmatch(line); g != nil && g[2] == g[3] {
			if steadyFrom.IsZero() {
				steadyFrom = time.Now()
			}
			rate, p50, p99 = append(rate, num(g[4])), append(p50, num(g[5])), append(p99, num(g[6]))
		}
	}
	if last == nil {
		return nil, steadyFrom, errors.New("simulate printed no JSON summary")
	}
	if len(rate) > 0 {
		last["steady"] = map[string]any{"windows": len(rate), "heartbeat_rate_median": median(rate),
			"latency_p50_ms_median": median(p50), "latency_p99_ms_median": median(p99)}
	}
	return last, steadyFrom, sc.Err()
}

func num(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return env
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// client drives the Engine's operator API.
type client struct {
	base  string
	token string
}

func (c *client) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if res, err := http.Get(c.base + "/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

func (c *client) call(ctx context.Context, method, path string, body any) (map[string]any, error) {
	buf, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(buf))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, out)
	}
	return out, nil
}

// prepare bootstraps the Engine, signs in and returns an enrollment code
// for a site with auto-approval on.
func (c *client) prepare(ctx context.Context, n int) (string, error) {
	const (
		pass = "bench passphrase 123"
		user = "bench"
		pw   = "bench password 123"
	)
	if _, err := c.call(ctx, "POST", "/api/bootstrap/aegis/setup", map[string]any{"passphrase": pass}); err != nil {
		return "", err
	}
	admin, err := c.call(ctx, "POST", "/api/bootstrap/admin/setup", map[string]any{"username": user, "password": pw})
	if err != nil {
		return "", err
	}
	secret := admin["mfa"].(map[string]any)["secret"].(string)
	now := time.Now()
	code, _ := totp.GenerateCode(secret, now)
	if _, err := c.call(ctx, "POST", "/api/bootstrap/admin/mfa/verify", map[string]any{"pending_token": admin["pending_token"], "code": code}); err != nil {
		return "", err
	}
	login, err := c.call(ctx, "POST", "/api/auth/login", map[string]any{"username": user, "password": pw})
	if err != nil {
		return "", err
	}
	// The next TOTP step: the current one was spent on bootstrap.
	next, _ := totp.GenerateCode(secret, now.Add(30*time.Second))
	sess, err := c.call(ctx, "POST", "/api/auth/mfa/verify", map[string]any{"pending_token": login["pending_token"], "code": next})
	if err != nil {
		return "", err
	}
	c.token = sess["token"].(string)
	site, err := c.call(ctx, "POST", "/api/sites", map[string]any{"name": "Bench", "site_worker_slug": "bench"})
	if err != nil {
		return "", err
	}
	siteID := site["site_id"]
	if _, err := c.call(ctx, "POST", fmt.Sprintf("/api/sites/%v/auto-approval", siteID), map[string]any{"enabled": true, "duration_seconds": 3600}); err != nil {
		return "", err
	}
	ec, err := c.call(ctx, "POST", "/api/admin/enrollment-codes", map[string]any{"site_id": siteID, "max_uses": n * 2})
	if err != nil {
		return "", err
	}
	return ec["code"].(string), nil
}

// sampler reads CPU time and resident memory of the Engine process and of
// the private PostgreSQL cluster's processes from /proc.
type sampler struct {
	pid int
	// pidFile is the private cluster's postmaster.pid: its backends are
	// the postmaster's children, told apart from other clusters' that way.
	pidFile string
	samples []sample
}

type sample struct {
	at               time.Time
	engCPU, pgCPU    float64 // seconds of CPU so far
	engRSS, pgRSSMiB float64
}

func newSampler(pid int, pidFile string) *sampler { return &sampler{pid: pid, pidFile: pidFile} }

func (s *sampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var sm sample
		sm.at = time.Now()
		sm.engCPU, sm.engRSS = procUsage(s.pid)
		for _, pid := range clusterPIDs(s.pidFile) {
			c, r := procUsage(pid)
			sm.pgCPU += c
			sm.pgRSSMiB += r
		}
		s.samples = append(s.samples, sm)
	}
}

// summary averages CPU over the samples after from and summarizes RSS.
func (s *sampler) summary(from time.Time) (engine, pg usage) {
	var steady []sample
	for _, sm := range s.samples {
		if !sm.at.Before(from) {
			steady = append(steady, sm)
		}
	}
	if len(steady) < 2 {
		return
	}
	first, last := steady[0], steady[len(steady)-1]
	secs := last.at.Sub(first.at).Seconds()
	engine.CPUCoresMean = (last.engCPU - first.engCPU) / secs
	pg.CPUCoresMean = (last.pgCPU - first.pgCPU) / secs
	engine.RSSMedianMiB, engine.RSSPeakMiB = medianPeak(steady, func(s sample) float64 { return s.engRSS })
	pg.RSSMedianMiB, pg.RSSPeakMiB = medianPeak(steady, func(s sample) float64 { return s.pgRSSMiB })
	return
}

func medianPeak(ss []sample, f func(sample) float64) (float64, float64) {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	sort.Float64s(v)
	return v[len(v)/2], v[len(v)-1]
}

// procUsage returns a process's CPU seconds (user+system) and RSS in MiB.
func procUsage(pid int) (float64, float64) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields after the command name, which may hold spaces.
	rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 22 {
		return 0, 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	rssPages, _ := strconv.ParseFloat(f[21], 64)
	const ticks = 100 // USER_HZ on Linux
	return (utime + stime) / ticks, rssPages * float64(os.Getpagesize()) / (1 << 20)
}

// clusterPIDs is the postmaster named in pidFile and its children.
func clusterPIDs(pidFile string) []int {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	master, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return nil
	}
	out := []int{master}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				if ppid, _ := strconv.Atoi(strings.TrimSpace(v)); ppid == master {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}
