package runtime

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
	"github.com/cairn-rmm/cairn/agent/transport"
)

const testCode = "code-1"

// wait is the deadline of every condition a test waits for.
const wait = 10 * time.Second

// tick is how often those conditions are polled.
const tick = 5 * time.Millisecond

// testTiming runs the loop in milliseconds. The watchdog and the details
// maximum are far away unless a test brings them close.
func testTiming() Timing {
	return Timing{
		HeartbeatInterval: 50 * time.Millisecond, HeartbeatJitter: 10 * time.Millisecond,
		DetailsCheck: 20 * time.Millisecond, DetailsMaxInterval: time.Hour,
		AckTimeout: time.Second, ReadIdle: 5 * time.Second,
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
		WatchdogThreshold: time.Hour, WatchdogCheck: 10 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		EnrollPoll: 10 * time.Millisecond, ReenrollWait: 50 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
	}
}

// fakeCollector serves an inventory the test can change and counts
// collections.
type fakeCollector struct {
	mu       sync.Mutex
	inv      proto.Inventory
	collects int
}

func (c *fakeCollector) Collect(context.Context) proto.Inventory {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collects++
	return c.inv
}

func (c *fakeCollector) Metrics(context.Context) proto.Metrics {
	return proto.Metrics{CPUPercent: 12.5, MemoryTotalBytes: 1 << 30, MemoryUsedBytes: 1 << 29, UptimeSeconds: 60}
}

func (c *fakeCollector) set(hostname string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inv = proto.Inventory{OS: &proto.OSInfo{Family: "linux", Hostname: hostname}}
}

func (c *fakeCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.collects
}

type env struct {
	engine    *fakeengine.Engine
	path      string
	store     FileStore
	collector *fakeCollector
	identity  Identity
}

// setup starts a fake Engine and writes a config that has the enrollment
// code and server URL, as `enroll` leaves it before the exchange.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{
		engine:    fakeengine.New(t, testCode),
		path:      filepath.Join(t.TempDir(), agent.FileName),
		collector: &fakeCollector{},
		identity:  Identity{Hostname: "host-1", OS: "Debian GNU/Linux 12", Fingerprint: "fp-1", BootID: "boot-1"},
	}
	e.store = FileStore{Path: e.path, Writer: "run"}
	e.collector.set("host-1")
	c := agent.Default()
	c.ApplyEnrollment(testCode, e.engine.URL)
	require.NoError(t, agent.Create(e.path, "enroll", c))
	return e
}

func (e *env) config(t *testing.T) *agent.Config {
	t.Helper()
	c, err := agent.Load(e.path)
	require.NoError(t, err)
	return c
}

func (e *env) client(t *testing.T) *transport.Client {
	t.Helper()
	c, err := transport.FromAgentConfig(e.config(t), "test", nil)
	require.NoError(t, err)
	return c
}

func (e *env) thumbprint(t *testing.T) string {
	t.Helper()
	key, err := e.config(t).PrivateKey()
	require.NoError(t, err)
	return agent.Thumbprint(key.Public().(ed25519.PublicKey))
}

// enroll runs the exchange so the config holds identity and tokens.
func (e *env) enroll(t *testing.T) EnrollResult {
	t.Helper()
	res, err := Enroll(t.Context(), e.store, e.client(t), EnrollOptions{Identity: e.identity, Version: "test", Timing: testTiming()})
	require.NoError(t, err)
	return res
}

// tokens builds a token manager over the enrolled config.
func (e *env) tokens(t *testing.T) *Tokens {
	t.Helper()
	timing := testTiming().withDefaults()
	return newTokens(e.config(t), e.store, e.client(t), e.identity, timing, time.Now,
		slog.New(slog.DiscardHandler), Hooks{}, nil)
}

// options are the agent's options; tests adjust them before start.
func (e *env) options() Options {
	return Options{
		Store: e.store, Identity: e.identity, Version: "test", Collector: e.collector,
		Timing: testTiming(), Handlers: NewHandlers(),
	}
}

// start runs an agent until the test ends.
func start(t *testing.T, opts Options) *Agent {
	t.Helper()
	a, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(wait):
			t.Error("the agent did not stop")
		}
	})
	return a
}

// nextConn waits for the next accepted socket.
func nextConn(t *testing.T, e *fakeengine.Engine) *fakeengine.Conn {
	t.Helper()
	select {
	case c := <-e.Conns():
		return c
	case <-time.After(wait):
		t.Fatal("no socket was accepted")
		return nil
	}
}

func indexOf(events []string, name string) int {
	for i, ev := range events {
		if ev == name {
			return i
		}
	}
	return -1
}
