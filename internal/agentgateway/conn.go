package agentgateway

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Close codes the hub sends.
const (
	closeGoingAway = websocket.StatusGoingAway
	closePolicy    = websocket.StatusPolicyViolation
	closeNormal    = websocket.StatusNormalClosure
)

// conn is one accepted agent socket. Its Serve call reads; one writer
// goroutine owns every write (queued messages and pings), so messages to
// an agent keep their order.
type conn struct {
	dev      devicetrust.Identity
	ws       *websocket.Conn
	log      *slog.Logger
	hostname string // from the devices row at attach
	siteID   int64
	// bootID and fingerprint are what connect_agent reported: two live
	// sockets of one device from different boots are two machines.
	bootID, fingerprint string
	// protocol is the agent's protocol version (connect_agent).
	protocol int

	// ctx ends when the socket is finished with; done closes once its
	// record is cleared too.
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	out      chan outgoing
	stopOnce sync.Once

	// onReply handles replies: the command path's (Hub.onReply), each in
	// its own goroutine holding one of replySlots.
	onReply    func(*conn, proto.Envelope)
	replySlots chan struct{}
	// onCall answers the agent's calls (Hub.onCall), each in its own
	// goroutine holding one of callSlots.
	onCall    func(*conn, proto.Envelope)
	callSlots chan struct{}

	mu sync.Mutex
	// validUntil is when the device's access token expires: the one the
	// socket was opened with, moved on by sweeps while the device
	// refreshes.
	validUntil time.Time
	// tokens are the command-path requests written to this socket that
	// wait for a reply: request ID -> the activity's task token.
	tokens map[string][]byte
}

type outgoing struct {
	env    proto.Envelope
	result chan error // nil: nobody waits (deliveries from other replicas)
}

func newConn(parent context.Context, ws *websocket.Conn, dev devicetrust.Identity, log *slog.Logger) *conn {
	ctx, cancel := context.WithCancel(parent)
	return &conn{dev: dev, ws: ws, log: log, validUntil: dev.ExpiresAt, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		out: make(chan outgoing, 64), tokens: map[string][]byte{}, replySlots: make(chan struct{}, MaxRepliesInFlight),
		callSlots: make(chan struct{}, MaxCallsInFlight)}
}

// MaxRepliesInFlight bounds the replies of one socket handled at once
// (issue 21 item 13). Each takes database connections and a Temporal
// call; an agent that floods replies waits for its own slots (the socket
// is not read meanwhile) instead of taking the pool from every other
// agent.
const MaxRepliesInFlight = 8

func socketClosed(guid cairn.DeviceGUID) error {
	return cairn.Errorf(cairn.ECodeAgentSocketMissing, "the realtime socket of device %s closed", guid)
}

// stop closes the socket with a close frame, without waiting for the
// close handshake; the read loop then ends and the Serve call cleans up.
func (c *conn) stop(code websocket.StatusCode, reason string) {
	c.stopOnce.Do(func() { go func() { _ = c.ws.Close(code, closeReason(reason)) }() })
}

// closeReason fits a reason into a close frame (123 bytes after the code).
func closeReason(s string) string {
	const limit = 123
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// writeNow writes env directly; only before the writer starts (the ack).
func (c *conn) writeNow(env proto.Envelope, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	return wsjson.Write(ctx, c.ws, env)
}

// writeLoop sends queued messages and a ping every interval until the
// socket ends. A failed write closes the socket: the agent reconnects.
// A ping is left out when a call's reply went out within the interval
// (every heartbeat of an agent of protocol 5): the agent's call proves it
// alive to this side and the reply keeps its read deadline, so a ping and
// its pong would only double the frames of an idle agent (issue 28).
// Other messages do not count: an event the agent need not answer proves
// nothing about it.
func (c *conn) writeLoop(ping, timeout time.Duration) {
	tick := time.NewTicker(ping)
	defer tick.Stop()
	var lastMessage time.Time // of the last call reply
	for {
		var err error
		select {
		case <-c.ctx.Done():
			return
		case m := <-c.out:
			err = c.writeNow(m.env, timeout)
			if m.result != nil {
				m.result <- err
			}
			if err == nil && m.env.Type == proto.MsgCallReply {
				lastMessage = time.Now()
			}
		case now := <-tick.C:
			if !pingDue(lastMessage, now, ping) {
				continue
			}
			err = c.writeNow(proto.Envelope{Type: proto.MsgPing}, timeout)
		}
		if err != nil {
			c.log.Debug("agent socket write failed", "guid", c.dev.GUID, "err", err)
			_ = c.ws.CloseNow()
			return
		}
	}
}

// pingDue reports whether a ping is to go out at now: no call's reply
// went out within the last interval.
func pingDue(lastMessage, now time.Time, interval time.Duration) bool {
	return lastMessage.IsZero() || now.Sub(lastMessage) >= interval
}

// readLoop reads until the socket fails or stays silent for idle: any
// message (pongs included) proves the agent alive.
func (c *conn) readLoop(idle time.Duration) error {
	for {
		ctx, cancel := context.WithTimeout(c.ctx, idle)
		var env proto.Envelope
		err := wsjson.Read(ctx, c.ws, &env)
		cancel()
		if err != nil {
			return err
		}
		switch env.Type {
		case proto.MsgPong, proto.MsgPing:
		case proto.MsgReply:
			if c.onReply == nil {
				continue
			}
			select {
			case c.replySlots <- struct{}{}:
			case <-c.ctx.Done():
				return c.ctx.Err()
			}
			go func() {
				defer func() { <-c.replySlots }()
				c.onReply(c, env)
			}()
		case proto.MsgCall:
			if c.onCall == nil || env.ID == "" {
				continue
			}
			select {
			case c.callSlots <- struct{}{}:
			case <-c.ctx.Done():
				return c.ctx.Err()
			}
			go func() {
				defer func() { <-c.callSlots }()
				c.onCall(c, env)
			}()
		default:
			c.log.Debug("agent message nobody handles", "guid", c.dev.GUID, "type", env.Type)
		}
	}
}

// send queues env and waits until it is written.
func (c *conn) send(ctx context.Context, env proto.Envelope) error {
	m := outgoing{env: env, result: make(chan error, 1)}
	select {
	case c.out <- m:
	case <-c.ctx.Done():
		return socketClosed(c.dev.GUID)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-m.result:
		return err
	case <-c.ctx.Done():
		return socketClosed(c.dev.GUID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue queues env without waiting; a socket whose queue is full is
// not keeping up, and the message is dropped (false).
func (c *conn) enqueue(env proto.Envelope) bool {
	select {
	case c.out <- outgoing{env: env}:
		return true
	default:
		c.log.Warn("agent socket queue full; dropped a message", "guid", c.dev.GUID, "type", env.Type)
		return false
	}
}

// tokenValid reports whether the access token the socket holds (moved on
// by sweeps while the device refreshes) is still valid at now.
func (c *conn) tokenValid(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.validUntil.IsZero() || now.Before(c.validUntil)
}

func (c *conn) track(id string, token []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[id] = token
}

// untrack forgets a request and returns its token (nil when unknown).
func (c *conn) untrack(id string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tokens[id]
	delete(c.tokens, id)
	return t
}

func (c *conn) drainPending() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.tokens))
	for id := range c.tokens {
		ids = append(ids, id)
	}
	clear(c.tokens)
	return ids
}

func (c *conn) pendingTokens() map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]byte, len(c.tokens))
	for id, t := range c.tokens {
		out[id] = t
	}
	return out
}
