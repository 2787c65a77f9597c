package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// maxSocketMessage bounds one incoming socket message.
const maxSocketMessage = 4 << 20

// writeTimeout bounds one socket write.
const writeTimeout = 10 * time.Second

var errReadIdle = errors.New("no traffic within the read-idle deadline")

// realtime is the socket client (SPEC "Agent-side behavior" items 4 and
// 5): route, dial, connect_agent, wait for the ack, then read with an
// idle deadline; every end refreshes the route and reconnects with a
// jittered backoff.
type realtime struct {
	tokens   *Tokens
	client   *transport.Client
	store    Store
	handlers *Handlers
	tracker  *socketTracker
	timing   Timing
	log      *slog.Logger
	hooks    Hooks
	hello    proto.ConnectAgent
	ops      *opRunner
	// connected is signalled (without blocking) at every accepted ack.
	connected chan<- struct{}
	// onConnected runs (in its own goroutine) after every accepted ack.
	onConnected func(ctx context.Context, call Caller)
	// role (may be nil) is told each attempt's outcome.
	role interface{ Report(error) }
	// tried closes once the first connection attempt has ended or been
	// accepted (a copy of the device is told so there).
	tried     chan struct{}
	triedOnce sync.Once
	// live is the accepted socket, while there is one (calls.go).
	live atomic.Pointer[socket]
}

// markTried closes tried once.
func (r *realtime) markTried() {
	if r.tried != nil {
		r.triedOnce.Do(func() { close(r.tried) })
	}
}

// waitTried waits for tried (or ctx).
func waitTried(ctx context.Context, tried <-chan struct{}) {
	select {
	case <-tried:
	case <-ctx.Done():
	}
}

// run keeps the socket up until ctx ends or the tokens are cleared.
func (r *realtime) run(ctx context.Context) error {
	b := newBackoff(r.timing.ReconnectMin, r.timing.ReconnectMax)
	route := r.cachedRoute()
	for {
		var err error
		accepted := false
		r.tracker.set(SocketConnecting, "")
		if route == nil {
			route, err = r.fetchRoute(ctx)
		}
		if err == nil {
			accepted, err = r.connect(ctx, *route)
		}
		r.tracker.set(SocketDisconnected, "")
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrTokensCleared) {
			return err
		}
		r.markTried()
		r.hooks.error("socket", err)
		if r.role != nil {
			if err == nil {
				err = errors.New("the Engine closed the realtime socket")
			}
			r.role.Report(err)
		}
		r.log.Warn("realtime socket ended; refreshing the route and reconnecting", "err", err)
		// Whatever ended the socket, the next attempt asks where to go.
		route = nil
		if accepted {
			b.reset()
		}
		if !sleep(ctx, b.next()) {
			return ctx.Err()
		}
	}
}

func (r *realtime) cachedRoute() *proto.Route {
	cfg, err := r.store.Load()
	if err != nil || len(cfg.Agent.Route) == 0 {
		return nil
	}
	var rt proto.Route
	if json.Unmarshal(cfg.Agent.Route, &rt) != nil || rt.URL == "" {
		return nil
	}
	return &rt
}

// fetchRoute asks the Engine for the socket address and caches it in the
// config (agent.route), writing only when it changed.
func (r *realtime) fetchRoute(ctx context.Context) (*proto.Route, error) {
	var rt proto.Route
	if err := r.tokens.Call(ctx, http.MethodGet, proto.PathRealtimeRoute, nil, &rt); err != nil {
		return nil, fmt.Errorf("realtime route: %w", err)
	}
	if rt.URL == "" {
		return nil, errors.New("realtime route: the Engine named no socket URL")
	}
	raw, err := json.Marshal(rt)
	if err == nil {
		if cfg, lerr := r.store.Load(); lerr == nil && !bytes.Equal(cfg.Agent.Route, raw) {
			if _, err := r.store.Update(func(c *agent.Config) error { c.Agent.Route = raw; return nil }); err != nil {
				r.log.Warn("could not cache the realtime route", "err", err)
			}
		}
	}
	return &rt, nil
}

// connect runs one socket from dial to its end. accepted reports whether
// the site worker acknowledged the registration.
func (r *realtime) connect(ctx context.Context, route proto.Route) (accepted bool, err error) {
	access, err := r.tokens.Access(ctx)
	if err != nil {
		return false, err
	}
	// The route came from the Engine (or its cached answer): its origin
	// is one of the Engine's, where shells may dial too.
	if err := r.client.TrustOrigin(route.URL); err != nil {
		return false, err
	}
	dctx, cancel := context.WithTimeout(ctx, r.timing.RequestTimeout)
	conn, err := r.client.DialWebSocket(dctx, route.URL, access)
	cancel()
	if err != nil {
		// A stale token is refreshed before the next attempt; wrong_worker
		// (421) needs nothing more than the route refresh every retry does.
		if refreshCodes[transport.Code(err)] {
			if rerr := r.tokens.Refresh(ctx, access); rerr != nil && errors.Is(rerr, ErrTokensCleared) {
				return false, rerr
			}
		}
		return false, fmt.Errorf("dial %s: %w", route.URL, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxSocketMessage)

	cctx, stop := context.WithCancel(ctx)
	var handlers sync.WaitGroup
	defer func() {
		stop()
		handlers.Wait()
	}()
	s := &socket{r: r, conn: conn, handlers: &handlers}
	ack, err := s.register(cctx)
	if err != nil {
		_ = conn.Close(websocket.StatusPolicyViolation, "no connect_agent_ack")
		return false, err
	}
	if !ack.Accepted {
		_ = conn.Close(websocket.StatusNormalClosure, "registration rejected")
		err := fmt.Errorf("connect_agent rejected by worker %q: %s", ack.Worker, ack.Reason)
		if ack.Code == proto.CodeDeviceCloned && ack.CloneTicket != "" {
			return false, r.tokens.BecomeClone(ack.CloneTicket, err)
		}
		return false, err
	}
	s.calls = newSocketCalls(ack.Calls)
	r.live.Store(s)
	defer func() {
		r.live.CompareAndSwap(s, nil)
		s.calls.end()
	}()
	// What enrolled, refreshed and asked for the route left a keep-alive
	// connection; from now on the socket carries the small calls.
	r.client.CloseIdleConnections()
	r.tracker.set(SocketConnected, ack.Worker)
	r.markTried()
	r.tracker.traffic()
	r.log.Info("realtime socket connected", "worker", ack.Worker)
	if r.role != nil {
		r.role.Report(nil)
	}
	select {
	case r.connected <- struct{}{}:
	default:
	}
	if r.onConnected != nil {
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			r.onConnected(cctx, r.tokens)
		}()
	}
	return true, s.readLoop(cctx)
}

// socket is one open connection.
type socket struct {
	r        *realtime
	conn     *websocket.Conn
	handlers *sync.WaitGroup
	// calls is set once the socket is accepted (calls.go).
	calls *socketCalls
}

func (s *socket) send(ctx context.Context, env proto.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return s.conn.Write(wctx, websocket.MessageText, b)
}

// register sends connect_agent and waits for the ack. Pings that arrive
// first are answered; nothing else counts.
func (s *socket) register(ctx context.Context) (proto.ConnectAgentAck, error) {
	hello, err := json.Marshal(s.r.hello)
	if err != nil {
		return proto.ConnectAgentAck{}, err
	}
	if err := s.send(ctx, proto.Envelope{Type: proto.MsgConnectAgent, Payload: hello}); err != nil {
		return proto.ConnectAgentAck{}, fmt.Errorf("send connect_agent: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, s.r.timing.AckTimeout)
	defer cancel()
	for {
		_, data, err := s.conn.Read(actx)
		if err != nil {
			if ctx.Err() == nil && actx.Err() != nil {
				return proto.ConnectAgentAck{}, fmt.Errorf("no connect_agent_ack within %s", s.r.timing.AckTimeout)
			}
			return proto.ConnectAgentAck{}, fmt.Errorf("waiting for connect_agent_ack: %w", err)
		}
		var env proto.Envelope
		if json.Unmarshal(data, &env) != nil {
			continue
		}
		switch env.Type {
		case proto.MsgConnectAgentAck:
			var ack proto.ConnectAgentAck
			if err := json.Unmarshal(env.Payload, &ack); err != nil {
				return ack, fmt.Errorf("connect_agent_ack: %w", err)
			}
			return ack, nil
		case proto.MsgPing:
			if err := s.send(ctx, proto.Envelope{Type: proto.MsgPong, ID: env.ID}); err != nil {
				return proto.ConnectAgentAck{}, err
			}
		}
	}
}

// readLoop reads until the socket fails, ctx ends, or nothing arrives
// within the read-idle deadline.
func (s *socket) readLoop(ctx context.Context) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, s.r.timing.ReadIdle)
		_, data, err := s.conn.Read(rctx)
		idle := ctx.Err() == nil && rctx.Err() != nil
		cancel()
		if err != nil {
			if idle {
				return errReadIdle
			}
			return err
		}
		s.r.tracker.traffic()
		var env proto.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			s.r.log.Warn("ignoring a socket message that is not an envelope", "err", err)
			continue
		}
		if err := s.dispatch(ctx, env); err != nil {
			return err
		}
	}
}

// dispatch answers pings, runs registered handlers concurrently (a slow
// one must not stall pings) and answers unknown requests "unsupported".
func (s *socket) dispatch(ctx context.Context, env proto.Envelope) error {
	switch env.Type {
	case proto.MsgPing:
		return s.send(ctx, proto.Envelope{Type: proto.MsgPong, ID: env.ID})
	case proto.MsgPong, proto.MsgReply, proto.MsgConnectAgentAck:
		return nil
	case proto.MsgCallReply:
		if s.calls != nil {
			s.calls.reply(env)
		}
		return nil
	case proto.MsgDeviceCloned:
		var dc proto.DeviceCloned
		if err := json.Unmarshal(env.Payload, &dc); err != nil || dc.CloneTicket == "" {
			s.r.log.Warn("ignoring a device_cloned message without a ticket")
			return nil
		}
		return s.r.tokens.BecomeClone(dc.CloneTicket, errors.New("the Engine says this agent is a copy of its device"))
	case proto.EventAgentRedeploy:
		return s.redeploy(ctx, env)
	}
	h := s.r.handlers.lookup(env.Type)
	if h == nil {
		if env.ID == "" {
			s.r.log.Debug("ignoring an unsupported socket event", "type", env.Type)
			return nil
		}
		return s.send(ctx, replyEnvelope(env.ID, nil, &proto.Error{
			Code: CodeUnsupported, Message: fmt.Sprintf("this agent does not support %q", env.Type),
		}))
	}
	// A request acts only under the Engine's grant for exactly it
	// (agent/proto/grant.go): not whatever reached the socket.
	if (env.ID != "" || env.OperationID != "") && proto.NeedsGrant(env.Type) {
		if err := s.r.checkGrant(env); err != nil {
			s.r.log.Warn("refused a request without a valid grant", "type", env.Type, "operation", env.OperationID, "err", err)
			if env.ID == "" {
				return nil
			}
			return s.send(ctx, replyEnvelope(env.ID, nil, &proto.Error{Code: proto.CodeSignatureInvalid, Message: err.Error()}))
		}
	}
	if env.OperationID != "" {
		s.operation(ctx, h, env)
		return nil
	}
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		result, err := h(ctx, s.r.tokens, env.Payload)
		if env.ID == "" {
			if err != nil {
				s.r.log.Warn("socket event handler failed", "type", env.Type, "err", err)
			}
			return
		}
		if serr := s.send(ctx, replyEnvelope(env.ID, result, err)); serr != nil {
			s.r.log.Warn("could not send a reply", "type", env.Type, "err", serr)
		}
	}()
	return nil
}

// opRunner runs operations (envelopes with an OperationID) once each. They
// run under the agent's context, not the socket's: a socket that drops
// while a service restarts must not cancel the restart, and the Engine's
// redelivery on the next socket then waits for that same run.
type opRunner struct {
	ctx   context.Context
	wg    *sync.WaitGroup
	cache *opCache
}

// operation answers env from its operation's flight, starting the run
// when this is the first delivery. The reply goes to this socket only;
// if it closes first, the Engine delivers again and a later socket
// answers from the cache.
func (s *socket) operation(ctx context.Context, h Handler, env proto.Envelope) {
	ops := s.r.ops
	f, run := ops.cache.join(env.Type + "\x00" + env.OperationID)
	if run {
		ops.wg.Add(1)
		go func() {
			defer ops.wg.Done()
			result, err := h(ops.ctx, s.r.tokens, env.Payload)
			if err != nil && env.ID == "" {
				s.r.log.Warn("socket operation failed", "type", env.Type, "operation", env.OperationID, "err", err)
			}
			ops.cache.finish(f, replyPayload(result, err))
		}()
	} else {
		s.r.log.Info("operation delivered again; answering from its first run", "type", env.Type, "operation", env.OperationID)
	}
	if env.ID == "" {
		return
	}
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
		reply := proto.Envelope{Type: proto.MsgReply, ID: env.ID, Payload: f.reply}
		if err := s.send(ctx, reply); err != nil {
			s.r.log.Warn("could not send a reply", "type", env.Type, "operation", env.OperationID, "err", err)
		}
	}()
}

// checkGrant verifies env's grant with the script keys this agent trusts
// (its key chain) for its own GUID.
func (r *realtime) checkGrant(env proto.Envelope) error {
	cfg, err := r.store.Load()
	if err != nil {
		return fmt.Errorf("read the trusted keys: %w", err)
	}
	return proto.VerifyGrant(env.Grant, cfg.ScriptSigning.TrustedPublicKeys, cfg.Agent.GUID, env, r.tokens.now())
}

// redeploy acts on agent_redeploy_request (agent behaviour 16), granted
// like any operation: it answers first, on this socket, then saves the
// new enrollment code, which clears the cached tokens and remote-ops
// route, and ends the session; Run then enrolls with the code.
func (s *socket) redeploy(ctx context.Context, env proto.Envelope) error {
	refuse := func(code, msg string) error {
		s.r.log.Warn("refused a redeploy", "operation", env.OperationID, "reason", msg)
		if env.ID == "" {
			return nil
		}
		return s.send(ctx, replyEnvelope(env.ID, nil, &proto.Error{Code: code, Message: msg}))
	}
	if err := s.r.checkGrant(env); err != nil {
		return refuse(proto.CodeSignatureInvalid, err.Error())
	}
	var req proto.AgentRedeployRequest
	if err := json.Unmarshal(env.Payload, &req); err != nil || strings.TrimSpace(req.EnrollmentCode) == "" {
		return refuse(proto.CodeOpInvalid, "a redeploy carries an enrollment code")
	}
	if env.ID != "" {
		if err := s.send(ctx, replyEnvelope(env.ID, proto.AgentRedeployAccepted{Accepted: true}, nil)); err != nil {
			return err
		}
	}
	return s.r.tokens.Redeploy(req.EnrollmentCode)
}
