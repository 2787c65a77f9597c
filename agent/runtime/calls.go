package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// Calls over the realtime socket (agent/proto/calls.go): while the socket
// is up and the Engine's ack lists a call, the heartbeat, status reports
// and metadata reads go over it rather than as HTTP requests, so the
// agent holds one connection to the Engine instead of the socket plus a
// keep-alive. Without a socket, with an Engine that lists no calls, or
// when the socket ends before the reply, the REST route is called as
// before.

// errNotDelivered is a call the socket did not answer: the REST route is
// called instead.
var errNotDelivered = errors.New("the socket did not answer the call")

// socketCalls is the call state of one accepted socket.
type socketCalls struct {
	offered map[string]bool
	nextID  atomic.Uint64
	ended   chan struct{}
	endOnce sync.Once

	mu      sync.Mutex
	pending map[string]chan proto.CallReply
}

func newSocketCalls(names []string) *socketCalls {
	c := &socketCalls{offered: map[string]bool{}, ended: make(chan struct{}), pending: map[string]chan proto.CallReply{}}
	for _, n := range names {
		c.offered[n] = true
	}
	return c
}

// end fails every call still waiting (they go to REST).
func (c *socketCalls) end() { c.endOnce.Do(func() { close(c.ended) }) }

// reply hands a call_reply to its caller; one nobody waits for (the
// caller gave up) is dropped.
func (c *socketCalls) reply(env proto.Envelope) {
	c.mu.Lock()
	ch := c.pending[env.ID]
	delete(c.pending, env.ID)
	c.mu.Unlock()
	if ch == nil {
		return
	}
	var r proto.CallReply
	if err := json.Unmarshal(env.Payload, &r); err != nil {
		r = proto.CallReply{Error: &proto.Error{Code: "failed", Message: "the call's reply is malformed"}}
	}
	ch <- r
}

// call sends one call on s and waits for its reply. errNotDelivered: the
// socket ended or the call could not be written.
func (s *socket) call(ctx context.Context, name string, in, out any) error {
	c := s.calls
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(proto.Call{Name: name, Body: body})
	if err != nil {
		return err
	}
	id := "c" + strconv.FormatUint(c.nextID.Add(1), 10)
	ch := make(chan proto.CallReply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := s.send(ctx, proto.Envelope{Type: proto.MsgCall, ID: id, Payload: payload}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %v", errNotDelivered, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return r.Error
		}
		if out == nil || len(r.Body) == 0 {
			return nil
		}
		return json.Unmarshal(r.Body, out)
	case <-c.ended:
		return errNotDelivered
	case <-ctx.Done():
		return ctx.Err()
	}
}

// caller makes the loop's small callbacks: over the socket when it is up
// and offers the call, else (or when the socket did not answer, or said
// the token needs a refresh) the REST route through tokens.
type caller struct {
	tokens *Tokens
	client *transport.Client
	rt     *realtime
	hooks  Hooks
}

// call is tokens.Call(method, path, in, out), or the call name over the
// socket with in as its body. A GET's input is in its path: REST sends no
// body then.
func (c *caller) call(ctx context.Context, name, method, path string, in, out any) error {
	if s := c.rt.live.Load(); s != nil && s.calls.offered[name] {
		cctx, cancel := context.WithTimeout(ctx, c.rt.timing.RequestTimeout)
		err := s.call(cctx, name, in, out)
		cancel()
		switch {
		case err == nil:
			c.hooks.call(name, true)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errNotDelivered), errors.Is(err, context.DeadlineExceeded), refreshCodes[transport.Code(err)]:
			// REST below: it refreshes a stale token, and a socket
			// that ended or stalled is not the Engine refusing.
		default:
			c.hooks.call(name, true)
			return err
		}
	}
	if method == http.MethodGet {
		in = nil
	}
	err := c.rest(ctx, method, path, in, out)
	c.hooks.call(name, false)
	return err
}

// rest is tokens.Call for a request that has no call (the details post):
// while the socket is up, the keep-alive it leaves is closed at once, as
// it would be a second connection per agent until it idled out (90 s).
func (c *caller) rest(ctx context.Context, method, path string, in, out any) error {
	err := c.tokens.Call(ctx, method, path, in, out)
	if c.rt.live.Load() != nil {
		c.client.CloseIdleConnections()
	}
	return err
}
