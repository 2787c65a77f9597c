package runtime

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// SimOptions configure Simulate.
type SimOptions struct {
	ServerURL string
	Code      string
	// CAPEM is the pinned Engine CA ("" trusts the system roots).
	CAPEM string
	// Count agents enroll at most Concurrency at a time.
	Count       int
	Concurrency int
	// Duration ends the run (0: run until ctx ends).
	Duration time.Duration
	// Prefix names the agents: <prefix>-00001, ...
	Prefix  string
	Version string
	// Inventory makes agent n's inventory (inventory.Synthetic when nil).
	Inventory func(n int) proto.Inventory
	Timing    Timing
	// SummaryEvery is the progress line interval (5 s when zero).
	SummaryEvery time.Duration
	// Out receives the progress lines and the final JSON line.
	Out io.Writer
	// Logger receives every agent's log (discarded when nil: thousands of
	// agents would drown anything useful; errors are counted instead).
	Logger *slog.Logger
}

// SimSummary is the final JSON line (make bench parses it).
type SimSummary struct {
	Agents        int              `json:"agents"`
	Enrolled      int              `json:"enrolled"`
	Connected     int              `json:"connected"`
	Heartbeats    int64            `json:"heartbeats"`
	HeartbeatRate float64          `json:"heartbeat_rate"`
	LatencyP50    float64          `json:"latency_p50_ms"`
	LatencyP99    float64          `json:"latency_p99_ms"`
	Errors        map[string]int64 `json:"errors"`
	// TimeToAllConnected is null when not every agent was connected at once.
	TimeToAllConnected *int64 `json:"time_to_all_connected_ms"`
	// SocketHeartbeats are the heartbeats (of Heartbeats, answered or
	// refused) that went over the realtime socket (protocol 5).
	SocketHeartbeats int64 `json:"socket_heartbeats"`
}

// Simulate runs Count agents in this process through the real enrollment,
// token, DPoP, status, heartbeat, details and socket code; only their
// host data is synthetic and their config lives in memory. Each has its
// own key, hostname and fingerprint. First heartbeats are staggered over
// one heartbeat interval so the fleet's load is spread as a real one's
// is. They answer the Engine's operations from their synthetic inventory
// (simops.go). It prints a progress line every SummaryEvery and the SimSummary as
// one JSON line at the end.
func Simulate(ctx context.Context, opts SimOptions) (SimSummary, error) {
	if opts.Count <= 0 {
		return SimSummary{}, errors.New("simulate: count must be at least 1")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 10
	}
	if opts.Prefix == "" {
		opts.Prefix = "sim"
	}
	if opts.Inventory == nil {
		opts.Inventory = inventory.Synthetic
	}
	if opts.SummaryEvery <= 0 {
		opts.SummaryEvery = 5 * time.Second
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	timing := opts.Timing.withDefaults()
	stats := newSimStats(time.Now(), opts.Count)

	agents := make([]*Agent, opts.Count)
	stores := make([]*MemoryStore, opts.Count)
	for i := range agents {
		a, store, err := newSimAgent(i, opts, timing, stats)
		if err != nil {
			return SimSummary{}, err
		}
		agents[i], stores[i] = a, store
	}

	runCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-runCtx.Done():
				return
			}
			simEnroll(runCtx, a, stores[i], opts, timing, stats)
			<-sem
			if err := a.Run(runCtx); err != nil {
				stats.error("run", err)
			}
		})
	}

	var end <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(opts.SummaryEvery)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-end:
			done = true
		case <-tick.C:
			fmt.Fprintln(opts.Out, stats.line(agents))
		}
	}
	// The fleet's state is taken before the agents stop and disconnect.
	summary := stats.summary(agents)
	stopAgents()
	wg.Wait()
	b, err := json.Marshal(summary)
	if err != nil {
		return summary, err
	}
	fmt.Fprintln(opts.Out, string(b))
	return summary, nil
}

func simName(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i+1) }

// newSimAgent builds agent i: memory config with its own key, synthetic
// host data, and its first heartbeat placed at i/Count of the interval.
func newSimAgent(i int, opts SimOptions, timing Timing, stats *simStats) (*Agent, *MemoryStore, error) {
	cfg := agent.Default()
	cfg.ApplyEnrollment(opts.Code, opts.ServerURL)
	cfg.InternalCAPEM = opts.CAPEM
	store, err := NewMemoryStore(cfg, "simulate")
	if err != nil {
		return nil, nil, fmt.Errorf("simulate: agent %d: %w", i+1, err)
	}
	name := simName(opts.Prefix, i)
	fp := sha256.Sum256([]byte("cairn-simulate:" + name))
	timing.FirstHeartbeatDelay = time.Duration(int64(timing.HeartbeatInterval) * int64(i) / int64(opts.Count))
	sim := &syntheticCollector{n: i, inventory: opts.Inventory, store: store}
	a, err := New(Options{
		Store:     store,
		Identity:  Identity{Hostname: name, OS: "Cairn simulated Linux", Fingerprint: hex.EncodeToString(fp[:]), BootID: randomID()},
		Version:   opts.Version,
		Collector: sim,
		Handlers:  sim.handlers(),
		Timing:    timing,
		Logger:    opts.Logger.With("agent", name),
		Hooks: Hooks{
			Heartbeat: stats.heartbeat,
			Error:     stats.error,
			Socket:    stats.socket,
			Call:      stats.call,
		},
	})
	return a, store, err
}

// simEnroll enrolls one agent while holding an enrollment slot. A failure
// is counted and left to the run loop, which enrolls again by itself.
func simEnroll(ctx context.Context, a *Agent, store *MemoryStore, opts SimOptions, timing Timing, stats *simStats) {
	cfg, err := store.Load()
	if err != nil {
		stats.error("enroll", err)
		return
	}
	client, err := transport.FromAgentConfig(cfg, opts.Version, opts.Logger)
	if err != nil {
		stats.error("enroll", err)
		return
	}
	defer client.CloseIdleConnections()
	_, err = Enroll(ctx, store, client, EnrollOptions{
		Identity: a.opts.Identity, Version: opts.Version, Timing: timing, Logger: opts.Logger, Hooks: a.opts.Hooks,
	})
	if err != nil && ctx.Err() == nil {
		stats.error("enroll", err)
	}
}

// randomID is a random UUID-shaped boot ID.
func randomID() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// syntheticCollector serves agent n's synthetic inventory, plausible,
// moving metrics and answers to operations (simops.go); it keeps nothing
// between calls.
type syntheticCollector struct {
	n         int
	inventory func(int) proto.Inventory
	// store is the agent's config, for verifying signed scripts.
	store Store
}

func (c *syntheticCollector) Collect(context.Context) proto.Inventory { return c.inventory(c.n) }

func (c *syntheticCollector) Metrics(context.Context) proto.Metrics {
	const gib = 1 << 30
	return proto.Metrics{
		CPUPercent:       float64(rand.IntN(1000)) / 10,
		MemoryTotalBytes: 8 * gib,
		MemoryUsedBytes:  uint64(2+rand.IntN(5)) * gib,
		UptimeSeconds:    int64(3600 + c.n),
		LoggedInUsers:    []string{},
	}
}
