// Package runtime is the agent's life with the Engine: enrollment, the
// token manager, the run loop (startup status, heartbeat, details), the
// realtime socket, the local watchdog and the load simulator that drives
// many agents through the same code (docs/agent.md "Run loop").
//
// It depends only on agent, agent/proto and agent/transport. What it needs
// from the host (inventory, metrics, role health, fingerprint) comes in as
// the small interfaces below, so the real collectors and synthetic ones
// plug into the same loop.
package runtime

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// Collector gathers the host's inventory (details) and light metrics
// (heartbeat).
type Collector interface {
	Collect(ctx context.Context) proto.Inventory
	Metrics(ctx context.Context) proto.Metrics
}

// Roles reports role health for the status and details posts.
type Roles interface {
	Snapshot() []proto.RoleHealth
}

// RoleChanges is a Roles that also says when an operator changed a desired
// state (roles.Tracker): the details loop then posts at once.
type RoleChanges interface {
	Changed() <-chan struct{}
}

// Identity is what the agent says about itself when enrolling and in its
// status posts.
type Identity struct {
	Hostname string
	// OS is the operating system's display name ("Debian GNU/Linux 12").
	OS string
	// Fingerprint identifies the machine; the Engine binds refresh tokens
	// to the one sent at enrollment, so it must be stable across restarts.
	Fingerprint string
	// BootID changes at every boot ("" when unknown).
	BootID string
}

// Timing holds every interval of the run loop. Zero fields take the
// defaults of DefaultTiming; tests use milliseconds.
type Timing struct {
	// HeartbeatInterval is the cadence (SPEC: 20 s) unless the Engine's
	// interval_seconds says otherwise; each wait adds 0..HeartbeatJitter.
	HeartbeatInterval time.Duration
	HeartbeatJitter   time.Duration
	// FirstHeartbeatDelay postpones the first heartbeat of a session (the
	// simulator staggers agents with it).
	FirstHeartbeatDelay time.Duration
	// DetailsCheck is how often inventory is collected and hashed;
	// DetailsMaxInterval is the longest time between two details posts.
	DetailsCheck       time.Duration
	DetailsMaxInterval time.Duration
	// RefreshBefore refreshes the access token when it expires within it.
	RefreshBefore time.Duration
	// AckTimeout bounds the wait for connect_agent_ack; ReadIdle is the
	// socket's read deadline after registration.
	AckTimeout time.Duration
	ReadIdle   time.Duration
	// ReconnectMin doubles up to ReconnectMax between socket attempts.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// WatchdogThreshold is how long the socket may stay connecting,
	// disconnected or silent before the loop is rebuilt; WatchdogCheck is
	// how often that is looked at.
	WatchdogThreshold time.Duration
	WatchdogCheck     time.Duration
	// RetryMin doubles up to RetryMax between retries of REST calls
	// (enrollment, refresh, startup status) that failed for a transient
	// reason.
	RetryMin time.Duration
	RetryMax time.Duration
	// EnrollPoll is the poll interval when the Engine names none.
	EnrollPoll time.Duration
	// ReenrollWait is how long the run loop waits after a denied or expired
	// re-enrollment before asking again.
	ReenrollWait time.Duration
	// StatusAttempts bounds the startup status post's retries before the
	// socket is opened anyway (with the failure in the timeline).
	StatusAttempts int
	// RequestTimeout bounds every REST call of the loop.
	RequestTimeout time.Duration
}

// DefaultTiming are the production values (SPEC "Limits").
var DefaultTiming = Timing{
	HeartbeatInterval:  20 * time.Second,
	HeartbeatJitter:    5 * time.Second,
	DetailsCheck:       time.Minute,
	DetailsMaxInterval: 5 * time.Minute,
	RefreshBefore:      2 * time.Minute,
	AckTimeout:         10 * time.Second,
	ReadIdle:           60 * time.Second,
	ReconnectMin:       time.Second,
	ReconnectMax:       30 * time.Second,
	WatchdogThreshold:  90 * time.Second,
	WatchdogCheck:      5 * time.Second,
	RetryMin:           time.Second,
	RetryMax:           time.Minute,
	EnrollPoll:         5 * time.Second,
	ReenrollWait:       5 * time.Minute,
	StatusAttempts:     3,
	RequestTimeout:     30 * time.Second,
}

// withDefaults fills zero fields from DefaultTiming.
func (t Timing) withDefaults() Timing {
	d := DefaultTiming
	pick := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&t.HeartbeatInterval, d.HeartbeatInterval)
	if t.HeartbeatJitter < 0 {
		t.HeartbeatJitter = 0
	} else if t.HeartbeatJitter == 0 {
		t.HeartbeatJitter = d.HeartbeatJitter
	}
	pick(&t.DetailsCheck, d.DetailsCheck)
	pick(&t.DetailsMaxInterval, d.DetailsMaxInterval)
	pick(&t.RefreshBefore, d.RefreshBefore)
	pick(&t.AckTimeout, d.AckTimeout)
	pick(&t.ReadIdle, d.ReadIdle)
	pick(&t.ReconnectMin, d.ReconnectMin)
	pick(&t.ReconnectMax, d.ReconnectMax)
	pick(&t.WatchdogThreshold, d.WatchdogThreshold)
	pick(&t.WatchdogCheck, d.WatchdogCheck)
	pick(&t.RetryMin, d.RetryMin)
	pick(&t.RetryMax, d.RetryMax)
	pick(&t.EnrollPoll, d.EnrollPoll)
	pick(&t.ReenrollWait, d.ReenrollWait)
	pick(&t.RequestTimeout, d.RequestTimeout)
	if t.StatusAttempts <= 0 {
		t.StatusAttempts = d.StatusAttempts
	}
	return t
}

// Hooks observe the loop (the simulator's statistics); every field may be
// nil. They are called synchronously and must be quick.
type Hooks struct {
	// Heartbeat reports every heartbeat attempt.
	Heartbeat func(latency time.Duration, err error)
	// Error reports a failed operation ("status", "details", "refresh",
	// "route", "socket", "enroll", ...).
	Error func(op string, err error)
	// Socket reports socket state changes.
	Socket func(from, to SocketState)
	// Enrolled reports a completed enrollment.
	Enrolled func(guid string)
	// Session hands over the Device caller of each loop as it starts, for
	// work outside the loop that calls the Engine (update progress).
	Session func(call Caller)
	// Call reports each heartbeat, status report and metadata read by
	// call name (proto.CallHeartbeat, ...) and whether it went over the
	// realtime socket (true) or as a REST request (false).
	Call func(name string, socket bool)
}

func (h Hooks) call(name string, socket bool) {
	if h.Call != nil {
		h.Call(name, socket)
	}
}

func (h Hooks) error(op string, err error) {
	if h.Error != nil && err != nil {
		h.Error(op, err)
	}
}

// Options configure an Agent.
type Options struct {
	Store    Store
	Identity Identity
	Version  string
	// BuildID is the binary's build ID (agent/version.Build), reported in
	// status posts so the Engine knows which artifact the device runs.
	BuildID   string
	Collector Collector
	// Roles may be nil: no role health is reported.
	Roles Roles
	// SocketRole, when set, is told how each realtime socket attempt went
	// (system:api_websocket): nil at every accepted connect_agent ack, the
	// error when a socket could not be opened or ended.
	SocketRole interface{ Report(error) }
	// Hash names an inventory for change detection (inventory.Hash when nil).
	Hash func(proto.Inventory) string
	// Handlers are the realtime event handlers (none when nil).
	Handlers *Handlers
	// Capabilities are reported in connect_agent (proto.Capability). Nil
	// reports what Handlers can serve (proto.HandlerCapabilities); an
	// agent whose handler is registered everywhere but works only on some
	// platforms (the registry editor) says so here.
	Capabilities []proto.Capability
	// HelperContexts are advertised in connect_agent's helper_contexts:
	// proto.HelperCurrentUser where the agent launches user-context jobs
	// into the active user's session (Windows). Nil advertises none.
	HelperContexts []string
	Timing         Timing
	Hooks          Hooks
	Logger         *slog.Logger
	// NewClient builds the Engine client from agent.json
	// (transport.FromAgentConfig when nil).
	NewClient func(*agent.Config) (*transport.Client, error)
	// Jitter returns a random duration in [0, max] (uniform when nil).
	Jitter func(max time.Duration) time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// OnConnected runs after every accepted socket registration, with a
	// Device caller, until that socket ends (for example asking for work
	// queued while the agent was offline).
	OnConnected func(ctx context.Context, call Caller)
}

// uniformJitter returns a duration in [0, max].
func uniformJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max) + 1))
}

// sleep waits d or until ctx ends; it reports whether the full wait
// happened.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff doubles from min to max; each wait is jittered into [d/2, d] so
// a fleet that failed together does not retry together.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	half := b.cur / 2
	return half + uniformJitter(b.cur-half)
}

func (b *backoff) reset() { b.cur = 0 }
