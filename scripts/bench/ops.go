package main

// The command-path figures: operation round trips and a fan-out to every
// simulated agent, both through GET /api/device/processes/<host>?max_age_seconds=0,
// which forces a live process snapshot from the agent (one DeviceOperation
// workflow: the request over the agent's socket, the reply completing the
// activity by task token, the snapshot stored).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// opsConfig bounds the operation benches.
type opsConfig struct {
	// RoundTrips sequential operations on random agents (after Warmup
	// unrecorded ones).
	RoundTrips, Warmup int
	// FanOut lists the client concurrencies of the fan-out passes; 0 is
	// every agent at once.
	FanOut []int
	Seed   uint64
}

// opsResult is the "operations" part of a run's JSON line.
type opsResult struct {
	RoundTrip *latencies `json:"round_trip,omitempty"`
	FanOut    []fanOut   `json:"fan_out,omitempty"`
	// Skipped says why a part did not run (the run's deadline, file limits).
	Skipped []string `json:"skipped,omitempty"`
}

// latencies summarizes a set of operations.
type latencies struct {
	Count    int            `json:"count"`
	OK       int            `json:"ok"`
	Errors   map[string]int `json:"errors"`
	P50ms    float64        `json:"p50_ms"`
	P99ms    float64        `json:"p99_ms"`
	MaxMs    float64        `json:"max_ms"`
	Seed     uint64         `json:"seed,omitempty"`
	WallSecs float64        `json:"wall_seconds"`
	// Processes in the first snapshot: the answer is a real one.
	Processes int `json:"processes_in_first_answer,omitempty"`
}

type fanOut struct {
	// Concurrency is the requests in flight (the agent count when all at once).
	Concurrency int `json:"concurrency"`
	latencies
	// EngineCPUSeconds and PostgresCPUSeconds were spent during the pass.
	EngineCPUSeconds   float64 `json:"engine_cpu_seconds"`
	PostgresCPUSeconds float64 `json:"postgresql_cpu_seconds"`
	// EngineFDsPeak is the most open files the Engine had in the pass.
	EngineFDsPeak int `json:"engine_fds_peak"`
}

// opClient sends operations: one transport with enough idle connections
// that a fan-out reuses its connections instead of opening new ones.
type opClient struct {
	base, token string
	hc          *http.Client
}

func newOpClient(base, token string, conns int) *opClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	// The route waits for the outcome up to about 2 minutes.
	return &opClient{base: base, token: token, hc: &http.Client{Transport: tr, Timeout: 150 * time.Second}}
}

func (c *opClient) close() { c.hc.CloseIdleConnections() }

// snapshot forces a live process snapshot from host's agent. It returns the
// latency, the number of processes and an error key ("" when it answered 200).
func (c *opClient) snapshot(ctx context.Context, host string) (time.Duration, int, string) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/api/device/processes/"+url.PathEscape(host)+"?max_age_seconds=0", nil)
	if err != nil {
		return 0, 0, "request"
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	// The longest wait the route allows; past it the route answers 202
	// with the operation's URL, which is followed below until it ends.
	req.Header.Set("Prefer", "wait=55")
	start := time.Now()
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return time.Since(start), 0, "cancelled"
		}
		return time.Since(start), 0, "transport"
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	res.Body.Close()
	took := time.Since(start)
	if err != nil {
		return took, 0, "transport"
	}
	if res.StatusCode == http.StatusAccepted {
		return c.follow(ctx, start, body)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return took, 0, fmt.Sprintf("%d_%s", res.StatusCode, e.Error)
	}
	var snap struct {
		Processes []json.RawMessage `json:"processes"`
	}
	if err := json.Unmarshal(body, &snap); err != nil || len(snap.Processes) == 0 {
		return took, 0, "empty_snapshot"
	}
	return took, len(snap.Processes), ""
}

// follow polls the operation a 202 named until it ends: a fleet-wide
// fan-out outlives the route's wait, and the operation goes on. Its
// latency runs from the first request to the end seen.
func (c *opClient) follow(ctx context.Context, start time.Time, accepted []byte) (time.Duration, int, string) {
	var op struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(accepted, &op); err != nil || op.URL == "" {
		return time.Since(start), 0, "202_without_url"
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start), 0, "cancelled"
		case <-time.After(500 * time.Millisecond):
		}
		req, err := http.NewRequestWithContext(ctx, "GET", c.base+op.URL, nil)
		if err != nil {
			return time.Since(start), 0, "request"
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		res, err := c.hc.Do(req)
		if err != nil {
			continue
		}
		var st struct {
			Status    string `json:"status"`
			ErrorCode string `json:"error"`
		}
		err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || st.Status == "running" {
			continue
		}
		if st.Status != "completed" {
			return time.Since(start), 0, "202_then_" + st.Status + "_" + st.ErrorCode
		}
		// A completed snapshot's processes are in the device's list, not
		// in the operation: count it as answered with its size unknown.
		return time.Since(start), 1, ""
	}
}

// collect gathers the outcomes of a set of operations.
type collect struct {
	mu    sync.Mutex
	durs  []time.Duration
	errs  map[string]int
	procs int
}

func (c *collect) add(d time.Duration, procs int, errKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errs == nil {
		c.errs = map[string]int{}
	}
	if errKey != "" {
		c.errs[errKey]++
		return
	}
	c.durs = append(c.durs, d)
	if c.procs == 0 {
		c.procs = procs
	}
}

// latencies summarizes the answered operations (errors are counted, not
// timed).
func (c *collect) latencies(wall time.Duration) latencies {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := latencies{OK: len(c.durs), Errors: c.errs, WallSecs: round(wall.Seconds(), 2), Processes: c.procs}
	l.Count = l.OK
	for _, n := range c.errs {
		l.Count += n
	}
	if l.Errors == nil {
		l.Errors = map[string]int{}
	}
	if len(c.durs) > 0 {
		s := append([]time.Duration(nil), c.durs...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		l.P50ms, l.P99ms, l.MaxMs = ms(percentile(s, 0.50)), ms(percentile(s, 0.99)), ms(s[len(s)-1])
	}
	return l
}

// percentile is the nearest-rank percentile of sorted s.
func percentile(s []time.Duration, p float64) time.Duration {
	i := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func round(f float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}

// benchOps runs the round trips, then each fan-out pass, within ctx (which
// ends before the simulated agents stop). hosts are the simulated agents.
func benchOps(ctx context.Context, api *client, hosts []string, cfg opsConfig, eng *procWatch) *opsResult {
	out := &opsResult{}
	maxConc := 1
	for _, c := range cfg.FanOut {
		if c <= 0 || c > len(hosts) {
			c = len(hosts)
		}
		maxConc = max(maxConc, c)
	}
	oc := newOpClient(api.base, api.token, maxConc)
	defer oc.close()

	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	// Warm-up: the first operations pay for connections and caches.
	for i := 0; i < cfg.Warmup && ctx.Err() == nil; i++ {
		oc.snapshot(ctx, hosts[rng.IntN(len(hosts))])
	}
	var rt collect
	start := time.Now()
	for i := 0; i < cfg.RoundTrips && ctx.Err() == nil; i++ {
		rt.add(oc.snapshot(ctx, hosts[rng.IntN(len(hosts))]))
	}
	l := rt.latencies(time.Since(start))
	l.Seed = cfg.Seed
	out.RoundTrip = &l
	fmt.Fprintf(logOut, "bench: %d round trips: p50=%.1fms p99=%.1fms errors=%v\n", l.Count, l.P50ms, l.P99ms, l.Errors)

	for _, conc := range cfg.FanOut {
		if conc <= 0 || conc > len(hosts) {
			conc = len(hosts)
		}
		if ctx.Err() != nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("fan-out at %d: the run's time was up", conc))
			continue
		}
		// Each request in flight holds a connection on the Engine: keep
		// a margin under its open-file limit.
		if fds, limit := eng.fds(), eng.fileLimit(); limit > 0 && fds+conc+256 > limit {
			out.Skipped = append(out.Skipped, fmt.Sprintf("fan-out at %d: the Engine holds %d files of its %d", conc, fds, limit))
			continue
		}
		f := fanOutPass(ctx, oc, hosts, conc, eng)
		out.FanOut = append(out.FanOut, f)
		fmt.Fprintf(logOut, "bench: fan-out to %d agents, %d in flight: all answered in %.1fs, p50=%.1fms p99=%.1fms errors=%v\n",
			len(hosts), conc, f.WallSecs, f.P50ms, f.P99ms, f.Errors)
	}
	return out
}

// fanOutPass sends one operation to every host, conc at a time, and times
// the pass until the last answer.
func fanOutPass(ctx context.Context, oc *opClient, hosts []string, conc int, eng *procWatch) fanOut {
	var c collect
	engCPU0, pgCPU0 := eng.cpu()
	peak := make(chan int, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	go func() { peak <- eng.peakFDs(watchCtx, 200*time.Millisecond) }()
	jobs := make(chan string)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for h := range jobs {
				c.add(oc.snapshot(ctx, h))
			}
		})
	}
	for _, h := range hosts {
		if ctx.Err() != nil {
			break
		}
		jobs <- h
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(start)
	stopWatch()
	engCPU1, pgCPU1 := eng.cpu()
	f := fanOut{Concurrency: conc, latencies: c.latencies(wall),
		EngineCPUSeconds: round(engCPU1-engCPU0, 2), PostgresCPUSeconds: round(pgCPU1-pgCPU0, 2), EngineFDsPeak: <-peak}
	if unsent := len(hosts) - f.Count; unsent > 0 {
		f.Errors["not_sent_time_up"] = unsent
	}
	return f
}

// simHosts are the hostnames cairn-agent simulate gives its agents
// (agent/runtime/simulate.go: <prefix>-00001, ...).
func simHosts(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i+1)
	}
	return out
}

// parseFanOut reads "64,all": client concurrencies, "all" (0) for every
// agent at once.
func parseFanOut(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "all":
			out = append(out, 0)
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad fan-out concurrency %q", f)
			}
			out = append(out, n)
		}
	}
	return out, nil
}
