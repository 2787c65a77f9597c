// Command bench measures the Engine under simulated agents: it starts a
// fresh `cairn serve` (private PostgreSQL, embedded Temporal), signs in,
// creates a site with auto-approval and an enrollment code, runs
// `cairn-agent simulate --count N`, samples the Engine's CPU and resident
// memory meanwhile, and prints one JSON line per run. Once every agent is
// connected it samples the Engine's memory and open files, then measures
// operation round trips and a fan-out to every agent (ops.go). `make bench`
// runs it for N = 1000 and 5000; docs/benchmarks.md records the figures.
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
		duration  = flag.Duration("duration", 3*time.Minute, "how long each simulation runs after its start, besides the operations")
		dataRoot  = flag.String("data", ".data/bench", "where each run's Engine data directory goes (wiped first)")
		ops       = flag.Bool("ops", true, "measure operations once every agent is connected (false for an Engine without the command path)")
		rounds    = flag.Int("round-trips", 200, "sequential operations on random agents")
		fanOutArg = flag.String("fan-out", "64,all", "client concurrencies of the fan-out passes to every agent (all: every agent at once; empty: none)")
		seed      = flag.Uint64("seed", 1, "seed of the round trips' choice of agents")
		opsBudget = flag.Duration("ops-budget", 8*time.Minute, "the most time the operations may add to a run")
		fpAfter   = flag.Duration("footprint-after", 100*time.Second, "how long after every agent is connected its footprint is sampled")
		shellKeys = flag.Int("shell-keystrokes", 500, "keystrokes timed through a remote shell on one real agent (0: none)")
		settle    = flag.Duration("settle", 150*time.Second, "the Engine's age before its idle memory is sampled (Go collects at least every 2 minutes)")
		enrollC   = flag.Int("enroll-concurrency", 10, "enrollments the simulator runs at once (simulate --concurrency)")
		pprofFor  = flag.Duration("pprof", 0, "profile the Engine's CPU this long once the footprint is sampled, into <data>/<N>/cpu.pprof, and from the start of enrollment into enroll.pprof (0: none; the Engine needs CAIRN_PPROF)")
		quickRuns = flag.Int("quick-runs", 3, "quick runs fanned out to every agent (at most 1,000), one after another (0: none)")
		jobKill   = flag.Bool("job-kill", false, "instead: a scheduled job to every agent with a kill -9 of the Engine mid-run (jobs.go)")
		storm     = flag.Bool("storm", false, "instead: kill -9 the Engine under N connected agents and time their reconnect storm (storm.go)")
		grid      = flag.Bool("grid", false, "instead: seed a large fleet with COPY and time the device grid's reads (grid.go)")
		gridDevs  = flag.Int("grid-devices", 50000, "devices the grid seed writes")
		gridSW    = flag.Int("grid-software", 150, "software rows per seeded device")
		gridSites = flag.Int("grid-sites", 8, "sites the seeded devices spread over")
		gridIters = flag.Int("grid-iterations", 300, "timed requests per route and user (after 20 warm-up ones)")
		gridReuse = flag.Bool("grid-reuse", false, "reuse the fleet an earlier -grid run left in its data directory (no seed; migrations still apply)")
		transfer  = flag.Bool("transfer", false, "instead: file transfers through the Engine each way with one real agent (transfer.go)")
		xferBytes = flag.Int64("transfer-bytes", 1<<30, "size of the transferred file")
		xferRuns  = flag.Int("transfer-rounds", 3, "transfers each way")
		wdogs     = flag.Bool("watchdogs", false, "instead: seed a fleet with COPY and measure 20 watchdogs evaluated every minute (watchdogs.go)")
		wdDevs    = flag.Int("watchdog-devices", 10000, "devices the watchdogs run seeds")
		wdSteady  = flag.Duration("watchdog-steady", 5*time.Minute, "how long CPU is sampled without and with the watchdogs")
		wdProbes  = flag.Int("watchdog-probes", 100, "devices whose CPU goes over the threshold (and as many that go silent)")
		engEnv    = flag.String("engine-env", "", "comma-separated KEY=VALUE settings the Engine runs with, such as CAIRN_TEMPORAL_STORE=postgres")
		agentRSS  = flag.Bool("agent-rss", false, "instead: the resident memory of real idle agents side by side (agentrss.go)")
		rssBins   = flag.String("agent-rss-bins", "", "name=binary,... of the agents -agent-rss compares (default: agent=<-agent>)")
		rssWarmup = flag.Duration("agent-rss-warmup", time.Minute, "how long each agent runs connected before its memory is sampled")
		rssIdle   = flag.Duration("agent-rss-idle", 3*time.Minute, "how long -agent-rss samples")
	)
	flag.Parse()
	for _, kv := range strings.Split(*engEnv, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			if !strings.Contains(kv, "=") {
				fail(fmt.Errorf("bad --engine-env setting %q (KEY=VALUE)", kv))
			}
			engineEnv = append(engineEnv, kv)
		}
	}
	fan, err := parseFanOut(*fanOutArg)
	if err != nil {
		fail(err)
	}
	opts := runOptions{engineBin: *engineBin, agentBin: *agentBin, duration: *duration, opsBudget: *opsBudget, settle: *settle, footprintAfter: *fpAfter,
		ops: opsConfig{RoundTrips: *rounds, Warmup: 5, FanOut: fan, Seed: *seed}, shellKeys: *shellKeys, quickRuns: *quickRuns, pprof: *pprofFor, enrollConcurrency: *enrollC}
	if !*ops {
		opts.ops, opts.opsBudget, opts.shellKeys, opts.quickRuns = opsConfig{}, 0, 0, 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *transfer {
		res, err := runTransfer(ctx, opts, filepath.Join(*dataRoot, "transfer"), *xferBytes, *xferRuns)
		if err != nil {
			fail(err)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		return
	}
	if *agentRSS {
		bins := *rssBins
		if bins == "" {
			bins = "agent=" + *agentBin
		}
		res, err := runAgentRSS(ctx, opts, filepath.Join(*dataRoot, "agent-rss"), bins, *rssWarmup, *rssIdle)
		if err != nil {
			fail(err)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		return
	}
	if *wdogs {
		res, err := runWatchdogs(ctx, opts, watchdogOptions{devices: *wdDevs, software: 60, sites: *gridSites, steady: *wdSteady,
			probes: *wdProbes, offline: *wdProbes, seed: *seed}, filepath.Join(*dataRoot, "watchdogs"))
		if err != nil {
			fail(err)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		return
	}
	if *grid {
		res, err := runGrid(ctx, opts, gridOptions{devices: *gridDevs, software: *gridSW, sites: *gridSites, iterations: *gridIters,
			warmup: 20, seed: *seed, reuse: *gridReuse}, filepath.Join(*dataRoot, "grid"))
		if err != nil {
			fail(err)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		return
	}
	for _, c := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("bad count %q", c))
		}
		if *storm {
			res, err := runStorm(ctx, opts, filepath.Join(*dataRoot, "storm-"+strconv.Itoa(n)), n)
			if err != nil {
				fail(err)
			}
			out, _ := json.Marshal(res)
			fmt.Println(string(out))
			continue
		}
		if *jobKill {
			res, err := runJobKill(ctx, opts, filepath.Join(*dataRoot, "job-kill-"+strconv.Itoa(n)), n)
			if err != nil {
				fail(err)
			}
			out, _ := json.Marshal(res)
			fmt.Println(string(out))
			continue
		}
		res, err := run(ctx, opts, filepath.Join(*dataRoot, strconv.Itoa(n)), n)
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

// logOut receives progress (stdout carries only the JSON lines).
var logOut io.Writer = os.Stderr

type runOptions struct {
	engineBin, agentBin string
	// duration is the simulation's length without the operations, which
	// add their own time (at most opsBudget) so the steady phase without
	// them is as long as in a run without them.
	duration, opsBudget time.Duration
	// settle is the Engine's age before the baseline is sampled;
	// footprintAfter the time after every agent connected before the
	// footprint with them is.
	settle, footprintAfter time.Duration
	// ops is empty (no round trips, no fan-out) for an Engine without the
	// command path.
	ops opsConfig
	// shellKeys is how many keystrokes the remote-shell echo times.
	shellKeys int
	// quickRuns is how many quick runs fan out to every agent.
	quickRuns int
	// pprof is how long the Engine's CPU is profiled in the steady phase
	// (0: not at all).
	pprof time.Duration
	// enrollConcurrency is simulate's --concurrency.
	enrollConcurrency int
}

// simPrefix names the simulated agents (simulate --prefix).
const simPrefix = "sim"

// result is one run's figures.
type result struct {
	Agents          int                `json:"agents"`
	DurationSeconds float64            `json:"duration_seconds"`
	Simulate        map[string]any     `json:"simulate"`
	Engine          usage              `json:"engine"`
	PostgreSQL      usage              `json:"postgresql"`
	PerAgent        map[string]float64 `json:"per_connected_agent"`
	// Footprint is the Engine's memory and open files idle before any
	// agent and once all are connected, before any operation.
	Footprint *footprint `json:"footprint,omitempty"`
	// Operations are the command-path figures (ops.go).
	Operations *opsResult `json:"operations,omitempty"`
	// Shell is the remote shell's keystroke echo (shell.go).
	Shell *shellResult `json:"shell,omitempty"`
	// QuickRun is the script fan-out (quickrun.go).
	QuickRun *quickRunResult `json:"quick_run,omitempty"`
	// CPUPerMessage is the Engine's steady CPU in millicores per
	// heartbeat a second (the steady CPU over the steady heartbeat rate).
	CPUPerMessage float64 `json:"engine_millicores_per_heartbeat_per_second,omitempty"`
	// EnrollRate is agents enrolled and connected per second: the count
	// over the time until all showed connected.
	EnrollRate float64 `json:"enrolled_per_second,omitempty"`
	// Profile is the CPU profile's file, when one was taken.
	Profile string `json:"cpu_profile,omitempty"`
	// OpsWindowSeconds is the part of the steady phase the operations took:
	// it is left out of the steady CPU, memory and heartbeat figures.
	OpsWindowSeconds float64 `json:"ops_window_seconds,omitempty"`
}

// usage is CPU (cores in use, averaged over the steady phase) and resident
// memory (median and peak of the samples).
type usage struct {
	CPUCoresMean float64 `json:"cpu_cores_mean"`
	RSSMedianMiB float64 `json:"rss_median_mib"`
	RSSPeakMiB   float64 `json:"rss_peak_mib"`
}

type footprint struct {
	Baseline procSample `json:"baseline_no_agents"`
	// Connected is sampled once the Engine shows every agent's socket.
	Connected procSample `json:"all_connected_idle"`
	// SocketsLive is how many devices the Engine showed with a live socket.
	SocketsLive int `json:"sockets_live"`
	// PerAgentRSSKiB and PerAgentFDs are the differences divided by the
	// live sockets.
	PerAgentRSSKiB float64 `json:"per_agent_rss_kib"`
	PerAgentFDs    float64 `json:"per_agent_fds"`
	// GoLiveKiB (with --pprof) is the Engine's live Go heap plus goroutine
	// stacks after a forced collection, idle and all connected; their
	// difference per live socket is PerAgentGoKiB: the Engine's own memory
	// per agent, without the noise of RSS (garbage not yet collected or
	// returned) nor the kernel's socket buffers.
	GoLiveKiB     [2]float64 `json:"go_live_kib,omitempty"`
	PerAgentGoKiB float64    `json:"per_agent_go_kib,omitempty"`
}

func run(ctx context.Context, o runOptions, dataDir string, n int) (*result, error) {
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, tport := freePort(), freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	engine := exec.CommandContext(ctx, o.engineBin, "serve")
	engine.Env = append(cleanEnv(), "CAIRN_DATA_DIR="+dataDir, fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", port),
		"CAIRN_HTTPS_ADDR=off", "CAIRN_PUBLIC_URL="+base, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", tport),
		"CAIRN_TEMPORAL_UI_PORT=0", "CAIRN_ENROLL_RATE_LIMIT=100000000", "CAIRN_PROOF_RATE_LIMIT=100000000", "CAIRN_LOG_LEVEL=warn")
	metricsBase := ""
	if o.pprof > 0 {
		mport := freePort()
		metricsBase = fmt.Sprintf("http://127.0.0.1:%d", mport)
		engine.Env = append(engine.Env, fmt.Sprintf("CAIRN_METRICS_ADDR=127.0.0.1:%d", mport), "CAIRN_PPROF=1")
	}
	var profile string
	logFile, err := os.Create(filepath.Join(dataDir, "engine.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	engine.Stdout, engine.Stderr = logFile, logFile
	if err := engine.Start(); err != nil {
		return nil, err
	}
	engineStarted := time.Now()
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
	code, err := api.prepare(ctx, n, dataDir)
	if err != nil {
		return nil, err
	}
	watch := &procWatch{pid: engine.Process.Pid, pidFile: filepath.Join(dataDir, "postgres", "data", "postmaster.pid")}
	// The baseline: the Engine idle with no agent, once the garbage of its
	// start (migrations, Temporal's setup) is collected and returned. Go
	// forces a collection when none ran for 2 minutes, and an idle Engine
	// allocates too little to run one sooner, so this waits on its age:
	// there is no signal from outside the process.
	select {
	case <-time.After(time.Until(engineStarted.Add(o.settle))):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fp := &footprint{Baseline: watch.idle(ctx, 10, time.Second)}
	if metricsBase != "" {
		if kib, err := goLiveKiB(ctx, metricsBase); err == nil {
			fp.GoLiveKiB[0] = kib
		} else {
			fmt.Fprintf(logOut, "bench: no Go memory figures: %v\n", err)
		}
	}
	fmt.Fprintf(logOut, "bench: idle Engine, no agents: rss=%.1fMiB fds=%d\n", fp.Baseline.RSSMiB, fp.Baseline.FDs)

	sampler := newSampler(watch)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go sampler.run(sampleCtx, time.Second)
	sim := exec.CommandContext(ctx, o.agentBin, "simulate", "--server", base, "--code", code,
		"--count", strconv.Itoa(n), "--duration", (o.duration + o.opsBudget).String(), "--prefix", simPrefix,
		"--concurrency", strconv.Itoa(max(o.enrollConcurrency, 1)))
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
	enrollProfiled := make(chan struct{})
	if o.pprof > 0 {
		go func() {
			defer close(enrollProfiled)
			if err := fetchProfile(ctx, metricsBase, o.pprof, filepath.Join(dataDir, "enroll.pprof")); err != nil {
				fmt.Fprintf(logOut, "bench: no enrollment profile: %v\n", err)
			}
		}()
	} else {
		close(enrollProfiled)
	}
	out := newSimOutput()
	readDone := make(chan error, 1)
	go func() { readDone <- out.read(stdout) }()

	// Once every agent is connected: the footprint, then the operations,
	// ending well before the simulated agents stop.
	var ops *opsResult
	var shell *shellResult
	var quick *quickRunResult
	var opsFrom, opsTo time.Time
	select {
	case <-out.allConnected:
		live, err := api.waitSockets(ctx, n, start.Add(o.duration))
		fp.SocketsLive = live
		if err != nil {
			fmt.Fprintf(logOut, "bench: %v\n", err)
		}
		// Enrollment leaves each agent a second keep-alive connection,
		// idle until its client drops it after 90 s (agent/transport's
		// IdleConnTimeout; no signal from outside): what an agent costs
		// for as long as it stays is sampled after that, over one
		// heartbeat interval (20 s plus jitter).
		select {
		case <-time.After(time.Until(out.steadyFrom.Add(o.footprintAfter))):
		case <-ctx.Done():
		}
		fp.Connected = watch.idle(ctx, 23, time.Second)
		if kib, err := goLiveKiB(ctx, metricsBase); err == nil && fp.GoLiveKiB[0] > 0 && live > 0 {
			fp.GoLiveKiB[1] = kib
			fp.PerAgentGoKiB = round((kib-fp.GoLiveKiB[0])/float64(live), 1)
			fmt.Fprintf(logOut, "bench: Go heap and stacks: %.0f KiB idle, %.0f KiB connected (%.1f KiB per agent)\n",
				fp.GoLiveKiB[0], kib, fp.PerAgentGoKiB)
		}
		if live > 0 {
			fp.PerAgentRSSKiB = round((fp.Connected.RSSMiB-fp.Baseline.RSSMiB)*1024/float64(live), 1)
			fp.PerAgentFDs = round(float64(fp.Connected.FDs-fp.Baseline.FDs)/float64(live), 2)
		}
		fmt.Fprintf(logOut, "bench: %d sockets live: rss=%.1fMiB fds=%d (%.1f KiB and %.2f files per agent)\n",
			live, fp.Connected.RSSMiB, fp.Connected.FDs, fp.PerAgentRSSKiB, fp.PerAgentFDs)
		if o.pprof > 0 {
			<-enrollProfiled
			profile = filepath.Join(dataDir, "cpu.pprof")
			if err := fetchProfile(ctx, metricsBase, o.pprof, profile); err != nil {
				fmt.Fprintf(logOut, "bench: no CPU profile: %v\n", err)
				profile = ""
			}
		}
		if o.ops.RoundTrips > 0 || len(o.ops.FanOut) > 0 || o.quickRuns > 0 {
			opsCtx, cancel := context.WithTimeout(ctx, o.opsBudget-15*time.Second)
			opsFrom = time.Now()
			if o.ops.RoundTrips > 0 || len(o.ops.FanOut) > 0 {
				ops = benchOps(opsCtx, api, simHosts(simPrefix, n), o.ops, watch)
			}
			if o.quickRuns > 0 {
				quick = benchQuickRun(opsCtx, api, o.quickRuns, watch)
			}
			if o.shellKeys > 0 {
				shell = benchShell(opsCtx, api, o.agentBin, base, code, filepath.Join(dataDir, "shell-agent"), o.shellKeys)
				fmt.Fprintf(logOut, "bench: shell keystroke echo: %+v\n", *shell)
			}
			opsTo = time.Now()
			cancel()
		}
	case rerr := <-readDone:
		readDone <- rerr // not every agent connected: simulate ended first
	}
	// The run ends duration after its start, plus the operations' time;
	// simulate's own --duration is the bound should that signal not come.
	if o.opsBudget > 0 {
		stopAt := start.Add(o.duration + opsTo.Sub(opsFrom))
		select {
		case <-time.After(time.Until(stopAt)):
			_ = sim.Process.Signal(os.Interrupt)
		case rerr := <-readDone:
			readDone <- rerr
		case <-ctx.Done():
		}
	}
	err = <-readDone
	werr := sim.Wait()
	stopSampling()
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	// The steady phase starts once every agent is connected (else: the last
	// half of the run): enrollment is over and every agent heartbeats. The
	// operations' window is left out of it.
	steadyFrom := out.steadyFrom
	if steadyFrom.IsZero() {
		steadyFrom = start.Add(time.Since(start) / 2)
	}
	summary := out.summary(opsFrom, opsTo)
	eng, pg := sampler.summary(steadyFrom, opsFrom, opsTo)
	if err := sampler.writeCSV(filepath.Join(dataDir, "samples.csv"), start); err != nil {
		return nil, err
	}
	res := &result{Agents: n, DurationSeconds: time.Since(start).Seconds(), Simulate: summary, Engine: eng, PostgreSQL: pg,
		Operations: ops, Shell: shell, QuickRun: quick, Profile: profile}
	if ms, ok := summary["time_to_all_connected_ms"].(float64); ok && ms > 0 {
		res.EnrollRate = round(float64(n)/(ms/1000), 1)
	}
	if st, ok := summary["steady"].(map[string]any); ok {
		if rate, ok := st["heartbeat_rate_median"].(float64); ok && rate > 0 {
			res.CPUPerMessage = round(eng.CPUCoresMean*1000/rate, 3)
		}
	}
	if !out.steadyFrom.IsZero() {
		res.Footprint = fp
	}
	if !opsFrom.IsZero() {
		res.OpsWindowSeconds = round(opsTo.Sub(opsFrom).Seconds(), 1)
	}
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

// simOutput reads simulate's stdout: it echoes the progress lines, tells
// when every agent is first connected, and keeps the final JSON summary.
type simOutput struct {
	allConnected chan struct{}
	steadyFrom   time.Time
	windows      []window
	last         map[string]any
}

// window is one progress line: the rate and latency of the heartbeats
// since the previous line, once every agent was connected.
type window struct {
	at             time.Time
	rate, p50, p99 float64
}

func newSimOutput() *simOutput { return &simOutput{allConnected: make(chan struct{})} }

func (s *simOutput) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logOut, line)
		var m map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			s.last = m
			continue
		}
		if g := progressLine.FindStringSubmatch(line); g != nil && g[2] == g[3] {
			now := time.Now()
			if s.steadyFrom.IsZero() {
				s.steadyFrom = now
				close(s.allConnected)
			}
			s.windows = append(s.windows, window{at: now, rate: num(g[4]), p50: num(g[5]), p99: num(g[6])})
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if s.last == nil {
		return errors.New("simulate printed no JSON summary")
	}
	return nil
}

// summary is simulate's JSON summary with "steady" added: the medians of
// the progress windows once every agent was connected (the whole-run
// figures include the enrollment rush), without the windows that overlap
// the operations [opsFrom, opsTo], which get their own "during_operations".
func (s *simOutput) summary(opsFrom, opsTo time.Time) map[string]any {
	const every = 5 * time.Second // simulate's SummaryEvery
	var steady, during []window
	for _, w := range s.windows {
		if !opsFrom.IsZero() && w.at.After(opsFrom) && w.at.Add(-every).Before(opsTo) {
			during = append(during, w)
		} else {
			steady = append(steady, w)
		}
	}
	if len(steady) > 0 {
		s.last["steady"] = windowMedians(steady)
	}
	if len(during) > 0 {
		s.last["during_operations"] = windowMedians(during)
	}
	return s.last
}

func windowMedians(ws []window) map[string]any {
	var rate, p50, p99 []float64
	for _, w := range ws {
		rate, p50, p99 = append(rate, w.rate), append(p50, w.p50), append(p99, w.p99)
	}
	return map[string]any{"windows": len(ws), "heartbeat_rate_median": median(rate),
		"latency_p50_ms_median": median(p50), "latency_p99_ms_median": median(p99)}
}

func num(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// goLiveKiB is the Engine's live heap and goroutine stacks in KiB: its
// runtime.MemStats (HeapAlloc, StackInuse) right after a forced
// collection, read from its heap profile's debug text (CAIRN_PPROF).
func goLiveKiB(ctx context.Context, metricsBase string) (float64, error) {
	if metricsBase == "" {
		return 0, errors.New("no metrics listener")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsBase+"/debug/pprof/heap?gc=1&debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /debug/pprof/heap: HTTP %d", resp.StatusCode)
	}
	var heap, stack float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			heap = num(v)
		}
		if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
			stack = num(strings.TrimSpace(strings.SplitN(v, "/", 2)[0]))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if heap == 0 {
		return 0, errors.New("no HeapAlloc in the heap profile")
	}
	return round((heap+stack)/1024, 0), nil
}

// fetchProfile saves a CPU profile of the Engine taken over d from its
// metrics listener (CAIRN_PPROF) to path.
func fetchProfile(ctx context.Context, metricsBase string, d time.Duration, path string) error {
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", metricsBase, int(d.Seconds())), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/pprof/profile: HTTP %d (an Engine without CAIRN_PPROF?)", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// engineEnv is what --engine-env adds to the Engine's environment.
var engineEnv []string

// cleanEnv is this process's environment without the Engine's settings,
// plus --engine-env's.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, engineEnv...)
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
	// secret is the admin's TOTP secret once prepare bootstrapped;
	// spentStep the last TOTP step this client used (the Engine accepts
	// each step once).
	secret    string
	spentStep int64
}

// benchAdminPassword is the bench administrator's password.
const benchAdminPassword = "bench password 123"

// nextCode is a TOTP code of a step not spent yet that the Engine accepts
// now (it takes the current step and one either side), waiting for the
// clock when the steps it would accept are spent.
func (c *client) nextCode(ctx context.Context) (string, error) {
	for {
		cur := time.Now().Unix() / 30
		step := max(c.spentStep+1, cur-1)
		if step <= cur+1 {
			c.spentStep = step
			return totp.GenerateCode(c.secret, time.Unix(step*30, 0))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Until(time.Unix((step-1)*30, 0))):
		}
	}
}

// reauth opens the admin session's re-authentication window, which
// account administration needs (docs/api.md "Re-authentication").
func (c *client) reauth(ctx context.Context, password string) error {
	code, err := c.nextCode(ctx)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, "POST", "/api/auth/reauth", map[string]any{"password": password, "totp_code": code})
	return err
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

// allDevices reads every device of GET /api/devices?<query>, page by page
// (the list is paged, at most 1000 a page).
func (c *client) allDevices(ctx context.Context, query string) ([]any, error) {
	var all []any
	for offset := 0; ; offset += 1000 {
		out, err := c.call(ctx, "GET", fmt.Sprintf("/api/devices?limit=1000&offset=%d&%s", offset, query), nil)
		if err != nil {
			return nil, err
		}
		list, _ := out["devices"].([]any)
		all = append(all, list...)
		if total, _ := out["total"].(float64); len(list) == 0 || len(all) >= int(total) {
			return all, nil
		}
	}
}

// waitSockets waits until the Engine shows n devices with a live agent
// socket, or until deadline; it returns how many it last saw.
func (c *client) waitSockets(ctx context.Context, n int, deadline time.Time) (int, error) {
	live := 0
	for {
		if list, err := c.allDevices(ctx, ""); err == nil {
			live = 0
			for _, d := range list {
				if m, ok := d.(map[string]any); ok && m["agent_socket"] == true {
					live++
				}
			}
			if live >= n {
				return live, nil
			}
		}
		if time.Now().After(deadline) {
			return live, fmt.Errorf("only %d of %d sockets live in the Engine", live, n)
		}
		select {
		case <-ctx.Done():
			return live, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *client) call(ctx context.Context, method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		buf, _ := json.Marshal(body)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
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

// prepare bootstraps the Engine (with the setup code it wrote to its data
// directory), signs in and returns an enrollment code for a site with
// auto-approval on.
func (c *client) prepare(ctx context.Context, n int, dataDir string) (string, error) {
	const (
		pass = "bench passphrase 123"
		user = "bench"
		pw   = benchAdminPassword
	)
	raw, err := os.ReadFile(filepath.Join(dataDir, "setup-code"))
	if err != nil {
		return "", fmt.Errorf("read the setup code: %w", err)
	}
	setupCode := strings.TrimSpace(string(raw))
	if _, err := c.call(ctx, "POST", "/api/bootstrap/aegis/setup", map[string]any{"passphrase": pass, "setup_code": setupCode}); err != nil {
		return "", err
	}
	admin, err := c.call(ctx, "POST", "/api/bootstrap/admin/setup", map[string]any{"username": user, "password": pw, "setup_code": setupCode})
	if err != nil {
		return "", err
	}
	c.secret = admin["mfa"].(map[string]any)["secret"].(string)
	code, err := c.nextCode(ctx)
	if err != nil {
		return "", err
	}
	if _, err := c.call(ctx, "POST", "/api/bootstrap/admin/mfa/verify", map[string]any{"pending_token": admin["pending_token"], "code": code}); err != nil {
		return "", err
	}
	login, err := c.call(ctx, "POST", "/api/auth/login", map[string]any{"username": user, "password": pw})
	if err != nil {
		return "", err
	}
	next, err := c.nextCode(ctx)
	if err != nil {
		return "", err
	}
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

// sampler samples the Engine and its PostgreSQL cluster every second.
type sampler struct {
	w       *procWatch
	samples []sample
}

type sample struct {
	at               time.Time
	engCPU, pgCPU    float64 // seconds of CPU so far
	engRSS, pgRSSMiB float64
	engFDs           int
}

func newSampler(w *procWatch) *sampler { return &sampler{w: w} }

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
		sm.engCPU, sm.engRSS = procUsage(s.w.pid)
		sm.engFDs = s.w.fds()
		for _, pid := range clusterPIDs(s.w.pidFile) {
			c, r := procUsage(pid)
			sm.pgCPU += c
			sm.pgRSSMiB += r
		}
		s.samples = append(s.samples, sm)
	}
}

// writeCSV keeps the samples (seconds since the simulation started) for
// a look at how memory and open files moved.
func (s *sampler) writeCSV(path string, start time.Time) error {
	var b strings.Builder
	b.WriteString("t_s,engine_cpu_s,engine_rss_mib,engine_fds,pg_cpu_s,pg_rss_mib\n")
	for _, sm := range s.samples {
		fmt.Fprintf(&b, "%.1f,%.2f,%.1f,%d,%.2f,%.1f\n", sm.at.Sub(start).Seconds(), sm.engCPU, sm.engRSS, sm.engFDs, sm.pgCPU, sm.pgRSSMiB)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// summary averages CPU over the samples after from and summarizes RSS,
// leaving out the samples within [skipFrom, skipTo] (the operations) and
// the CPU spent between them.
func (s *sampler) summary(from, skipFrom, skipTo time.Time) (engine, pg usage) {
	skip := func(t time.Time) bool { return !skipFrom.IsZero() && !t.Before(skipFrom) && !t.After(skipTo) }
	var steady []sample
	for _, sm := range s.samples {
		if !sm.at.Before(from) {
			steady = append(steady, sm)
		}
	}
	var secs, engCPU, pgCPU float64
	var kept []sample
	for i, sm := range steady {
		if skip(sm.at) {
			continue
		}
		kept = append(kept, sm)
		if i > 0 && !skip(steady[i-1].at) {
			prev := steady[i-1]
			secs += sm.at.Sub(prev.at).Seconds()
			engCPU += sm.engCPU - prev.engCPU
			pgCPU += sm.pgCPU - prev.pgCPU
		}
	}
	if len(kept) < 2 || secs == 0 {
		return
	}
	engine.CPUCoresMean = engCPU / secs
	pg.CPUCoresMean = pgCPU / secs
	engine.RSSMedianMiB, engine.RSSPeakMiB = medianPeak(kept, func(s sample) float64 { return s.engRSS })
	pg.RSSMedianMiB, pg.RSSPeakMiB = medianPeak(kept, func(s sample) float64 { return s.pgRSSMiB })
	return
}

// procWatch reads the Engine process and its private PostgreSQL cluster
// from /proc.
type procWatch struct {
	pid int
	// pidFile is the private cluster's postmaster.pid: its backends are
	// the postmaster's children, told apart from other clusters' that way.
	pidFile string
}

// procSample is the Engine's resident memory and open files: medians of a
// few samples, as the Go heap breathes.
type procSample struct {
	RSSMiB  float64 `json:"rss_mib"`
	FDs     int     `json:"fds"`
	Samples int     `json:"samples"`
	// CPUCores is the Engine's mean CPU over the samples' span.
	CPUCores float64 `json:"cpu_cores"`
}

// idle samples the Engine count times, every apart.
func (w *procWatch) idle(ctx context.Context, count int, every time.Duration) procSample {
	var rss, fds []float64
	cpu0, _ := procUsage(w.pid)
	start := time.Now()
	done := func() procSample {
		cpu1, _ := procUsage(w.pid)
		return procSample{RSSMiB: round(median(rss), 1), FDs: int(median(fds)), Samples: len(rss),
			CPUCores: round((cpu1-cpu0)/max(time.Since(start).Seconds(), 1e-9), 4)}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for len(rss) < count {
		_, r := procUsage(w.pid)
		rss, fds = append(rss, r), append(fds, float64(w.fds()))
		select {
		case <-ctx.Done():
			return done()
		case <-t.C:
		}
	}
	return done()
}

// fds is the Engine's open files.
func (w *procWatch) fds() int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", w.pid))
	return len(entries)
}

// fileLimit is the Engine's soft limit on open files (0 when unknown).
func (w *procWatch) fileLimit() int {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", w.pid))
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			if f := strings.Fields(strings.TrimPrefix(line, "Max open files")); len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// cpu is the CPU seconds the Engine and the cluster used so far.
func (w *procWatch) cpu() (engine, pg float64) {
	engine, _ = procUsage(w.pid)
	for _, pid := range clusterPIDs(w.pidFile) {
		c, _ := procUsage(pid)
		pg += c
	}
	return engine, pg
}

// peakFDs samples the Engine's open files until ctx ends.
func (w *procWatch) peakFDs(ctx context.Context, every time.Duration) int {
	t := time.NewTicker(every)
	defer t.Stop()
	peak := w.fds()
	for {
		select {
		case <-ctx.Done():
			return peak
		case <-t.C:
			peak = max(peak, w.fds())
		}
	}
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
