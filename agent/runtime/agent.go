package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// ErrNotEnrollable: no tokens and no enrollment code, so nothing the loop
// can do on its own.
var ErrNotEnrollable = errors.New("the agent is not enrolled and has no enrollment code; run cairn-agent enroll --server URL --code CODE")

// Agent is one agent's run loop.
type Agent struct {
	opts     Options
	timing   Timing
	log      *slog.Logger
	now      func() time.Time
	jitter   func(time.Duration) time.Duration
	hash     func(proto.Inventory) string
	socket   *socketTracker
	timeline *timeline
	enrolled atomic.Bool
	// ops remembers operation replies across sockets and loop restarts;
	// opsRunning tracks operations still running, which Run waits for.
	ops        *opCache
	opsRunning sync.WaitGroup
}

// New checks opts and builds an Agent.
func New(opts Options) (*Agent, error) {
	if opts.Store == nil || opts.Collector == nil {
		return nil, errors.New("runtime: an agent needs a Store and a Collector")
	}
	a := &Agent{opts: opts, timing: opts.Timing.withDefaults(), log: opts.Logger, now: opts.Now, jitter: opts.Jitter, hash: opts.Hash}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.jitter == nil {
		a.jitter = uniformJitter
	}
	if a.hash == nil {
		a.hash = inventory.Hash
	}
	if a.opts.NewClient == nil {
		a.opts.NewClient = func(c *agent.Config) (*transport.Client, error) {
			return transport.FromAgentConfig(c, opts.Version, a.log)
		}
	}
	a.socket = newSocketTracker(a.now, opts.Hooks.Socket)
	a.timeline = newTimeline(a.now)
	a.ops = newOpCache(a.now)
	return a, nil
}

// Socket is the realtime socket's state now.
func (a *Agent) Socket() SocketStatus { return a.socket.get() }

// Enrolled reports whether the agent holds tokens and runs its loop.
func (a *Agent) Enrolled() bool { return a.enrolled.Load() }

// Run runs the agent until ctx ends: enrollment while it has no tokens,
// then a loop of status, details, heartbeat and socket. The loop is
// rebuilt when the watchdog finds the socket stuck, and enrollment starts
// again when the Engine clears the tokens. Run returns nil when ctx ends
// and an error only for what a restart cannot fix (unreadable config, no
// way to enroll), in both cases once the operations it started have ended.
func (a *Agent) Run(ctx context.Context) error {
	defer a.opsRunning.Wait()
	retry := newBackoff(a.timing.RetryMin, a.timing.RetryMax)
	for ctx.Err() == nil {
		cfg, err := a.opts.Store.Load()
		if err != nil {
			return fmt.Errorf("load config: %w", err)
		}
		if cfg.ServerURL == "" {
			return errors.New("the config has no server_url; run cairn-agent enroll --server URL --code CODE")
		}
		client, err := a.opts.NewClient(cfg)
		if err != nil {
			return err
		}
		if !cfg.HasTokens() {
			a.enrolled.Store(false)
			if err := a.enroll(ctx, cfg, client, retry); err != nil {
				return err
			}
			continue
		}
		a.enrolled.Store(true)
		err = a.session(ctx, cfg, client)
		client.CloseIdleConnections()
		var wd *WatchdogError
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, ErrTokensCleared):
			a.enrolled.Store(false)
			a.timeline.fail("refresh", err)
			a.log.Warn("the Engine cleared the device tokens", "err", err)
			retry.reset()
		case errors.As(err, &wd):
			a.log.Warn("local watchdog: restarting the agent loop", "reason", wd.Reason)
			a.timeline.mark(MilestoneLoopRestarted, false, wd.Reason)
		default:
			d := retry.next()
			a.log.Error("agent loop ended; starting it again", "err", err, "in", d)
			a.timeline.fail("loop", err)
			sleep(ctx, d)
		}
	}
	return nil
}

// enroll enrolls again with the same key. It returns an error only when
// enrollment is impossible; other failures wait and let Run try again.
func (a *Agent) enroll(ctx context.Context, cfg *agent.Config, client *transport.Client, retry *backoff) error {
	if !cfg.CanEnroll() {
		return ErrNotEnrollable
	}
	if cfg.Ed25519PrivateKey == "" || cfg.Generalized {
		// A generalized image (cairn-agent generalize): this machine makes
		// its own key; Run builds the client that signs with it.
		if _, err := a.opts.Store.Update(func(c *agent.Config) error { return c.NewKey() }); err != nil {
			return fmt.Errorf("make the device key: %w", err)
		}
		a.log.Info("made this machine's device key (generalized image)")
		return nil
	}
	if cfg.CloneTicket != "" {
		a.log.Warn("enrolling as a new device with a clone ticket: this agent was a copy of an enrolled device")
	} else if cfg.Agent.GUID != "" {
		a.log.Warn("the device has no tokens; requesting enrollment again with the same key: an administrator must approve it again",
			"guid", cfg.Agent.GUID)
	}
	res, err := Enroll(ctx, a.opts.Store, client, EnrollOptions{
		Identity: a.opts.Identity, Version: a.opts.Version, Timing: a.timing, Logger: a.log, Hooks: a.opts.Hooks,
		Requested: func(id, status string) {
			if status == proto.ApprovalPending {
				a.log.Warn("waiting for approval: an administrator must approve this device", "approval_id", id)
			}
		},
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		a.opts.Hooks.error("enroll", err)
		a.timeline.fail("enroll", err)
		wait := retry.next()
		if errors.Is(err, ErrDenied) || errors.Is(err, ErrExpired) {
			wait = a.timing.ReenrollWait
		}
		a.log.Error("enrollment failed; trying again later", "err", err, "in", wait)
		sleep(ctx, wait)
		return nil
	}
	retry.reset()
	a.timeline.mark(MilestoneEnrolled, true, res.Device.GUID)
	if a.opts.Hooks.Enrolled != nil {
		a.opts.Hooks.Enrolled(res.Device.GUID)
	}
	a.log.Info("enrolled", "guid", res.Device.GUID, "approval_id", res.ApprovalID)
	return nil
}

// session is one build of the loop: the startup status first (SPEC item
// 3: before the socket), then details, heartbeat, socket and watchdog
// side by side until ctx ends, the tokens are cleared or the watchdog
// fires. Its error is the reason it ended.
// capabilities is the set connect_agent reports: Options.Capabilities, or
// what the registered handlers serve (never null on the wire).
func (a *Agent) capabilities() []proto.Capability {
	caps := a.opts.Capabilities
	if caps == nil {
		// The socket itself answers a redeploy (socket.redeploy).
		caps = proto.HandlerCapabilities(append(a.opts.Handlers.Types(), proto.EventAgentRedeploy))
	}
	if caps == nil {
		caps = []proto.Capability{}
	}
	return caps
}

func (a *Agent) session(parent context.Context, cfg *agent.Config, client *transport.Client) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	tokens := newTokens(cfg, a.opts.Store, client, a.opts.Identity, a.timing, a.now, a.log, a.opts.Hooks,
		func(err error) { cancel(err) })
	a.socket.restart()
	a.timeline.mark(MilestoneLoopStarted, true, "")
	if a.opts.Hooks.Session != nil {
		a.opts.Hooks.Session(tokens)
	}

	if err := a.postStartup(ctx, tokens); err != nil {
		return a.ended(parent, ctx, &caller{tokens: tokens, client: client, rt: &realtime{}, hooks: a.opts.Hooks}, err)
	}
	connected := make(chan struct{}, 1)
	rt := &realtime{
		tokens: tokens, client: client, store: a.opts.Store, handlers: a.opts.Handlers, tracker: a.socket,
		timing: a.timing, log: a.log, hooks: a.opts.Hooks, connected: connected, onConnected: a.opts.OnConnected,
		role: a.opts.SocketRole,
		ops:  &opRunner{ctx: parent, wg: &a.opsRunning, cache: a.ops},
		hello: proto.ConnectAgent{
			GUID: cfg.Agent.GUID, AgentVersion: a.opts.Version, Protocol: proto.Version,
			BootID: a.opts.Identity.BootID, Fingerprint: a.opts.Identity.Fingerprint, HelperContexts: helperContexts(a.opts.HelperContexts),
			Capabilities: a.capabilities(),
		},
		tried: make(chan struct{}),
	}
	calls := &caller{tokens: tokens, client: client, rt: rt, hooks: a.opts.Hooks}
	wanted := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for _, loop := range []func() error{
		// Inventory and heartbeats wait for the first socket attempt: a
		// copy of the device (a cloned disk) learns it is one there, and
		// nothing of its own may land on the original's record.
		func() error { waitTried(ctx, rt.tried); a.detailsLoop(ctx, calls, wanted); return nil },
		func() error { waitTried(ctx, rt.tried); a.heartbeatLoop(ctx, calls, wanted); return nil },
		func() error { a.runningStatus(ctx, calls, connected); return nil },
		func() error { return rt.run(ctx) },
		func() error { return a.watch(ctx) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	return a.ended(parent, ctx, calls, context.Cause(ctx))
}

// ended posts the stopping status when the agent itself is stopping and
// returns why the session ended.
func (a *Agent) ended(parent, ctx context.Context, calls *caller, err error) error {
	if parent.Err() == nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return err
	}
	// Best effort: the service manager is waiting for the process to exit.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
	defer cancel()
	if err := calls.call(sctx, proto.CallStatus, http.MethodPost, proto.PathStatus, a.status(PhaseStopping), nil); err != nil {
		a.log.Warn("could not post the stopping status", "err", err)
	}
	return parent.Err()
}

// helperContexts is never nil: the Engine stores what it is sent.
func helperContexts(h []string) []string {
	if h == nil {
		return []string{}
	}
	return h
}
